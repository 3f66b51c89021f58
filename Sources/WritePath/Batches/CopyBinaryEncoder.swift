import Foundation
import Telemetry

/// Builds the body of a `COPY … FROM STDIN (FORMAT binary)`: each field as its length and its
/// value in network byte order, so PostgreSQL reads numbers without parsing text and outletd
/// writes them without formatting it. In the writer, the text COPYs of the staging rows (mostly
/// doubles) cost the server about twice as much time per row (docs/PERFORMANCE.md).
///
/// The caller writes the fields of a row in the order of the COPY's column list, each with the
/// width of its column's type: `int16` for `smallint`, `int32` for `integer`, `int64` for `bigint`, `double` for
/// `double precision`, `timestamp` for `timestamptz`. A row's field count is filled in by `endRow()`.
struct CopyBinaryEncoder {
    /// The encoded bytes, then zeros up to the room made so far: a field is stored into that room, not
    /// appended (`Array.append(contentsOf:)` of each field's 4 or 8 bytes cost about 80 ns more per row of
    /// `samples`, 3.5 % of outletd's CPU in a drain: docs/PERFORMANCE.md).
    private var storage: [UInt8] = []
    /// How many bytes are encoded.
    private(set) var count = 0
    /// Where the current row's field count goes.
    private var rowStart = 0
    private var fieldsInRow: Int16 = 0

    init() {}

    /// The data encoded so far.
    var bytes: [UInt8] { Array(storage[..<count]) }

    /// The data encoded so far, without a copy; the encoder is empty afterwards.
    mutating func take() -> [UInt8] {
        storage.removeSubrange(count...)
        defer { (storage, count) = ([], 0) }
        return storage
    }

    /// Makes room for `total` bytes in all (encoded ones included).
    mutating func makeRoom(forTotal total: Int) {
        if total > storage.count { storage.append(contentsOf: repeatElement(0, count: total - storage.count)) }
    }

    /// The signature, flags and header extension length that open the data.
    mutating func header() {
        for byte in Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00] { append(byte) }
        append(UInt32(0))
        append(UInt32(0))
    }

    /// The field count of -1 that ends the data.
    mutating func trailer() {
        append(UInt16(bitPattern: -1))
    }

    mutating func beginRow() {
        rowStart = count
        fieldsInRow = 0
        append(UInt16(0))
    }

    mutating func endRow() {
        let fields = UInt16(bitPattern: fieldsInRow)
        storage[rowStart] = UInt8(fields >> 8)
        storage[rowStart + 1] = UInt8(fields & 0xff)
    }

    mutating func null() {
        fieldsInRow += 1
        append(UInt32(bitPattern: -1))
    }

    mutating func int32(_ value: Int32) {
        fieldsInRow += 1
        append(UInt32(4))
        append(UInt32(bitPattern: value))
    }

    mutating func int16(_ value: Int16) {
        fieldsInRow += 1
        append(UInt32(2))
        append(UInt16(bitPattern: value))
    }

    mutating func int32(_ value: Int32?) {
        if let value { int32(value) } else { null() }
    }

    mutating func int64(_ value: Int64) {
        fieldsInRow += 1
        append(UInt32(8))
        append(UInt64(bitPattern: value))
    }

    mutating func int64(_ value: Int64?) {
        if let value { int64(value) } else { null() }
    }

    mutating func double(_ value: Double) {
        fieldsInRow += 1
        append(UInt32(8))
        append(value.bitPattern)
    }

    mutating func double(_ value: Double?) {
        if let value { double(value) } else { null() }
    }

    /// Microseconds since the Unix epoch (the rollup staging tables' time columns), as `bigint`.
    mutating func microseconds(_ date: Date) {
        int64(Self.microseconds(date))
    }

    /// A `timestamptz` (microseconds since 2000-01-01T00:00:00Z on the wire).
    mutating func timestamp(_ date: Date) {
        timestamp(microseconds: Self.microseconds(date))
    }

    /// A `timestamptz` given in microseconds since the Unix epoch (saturating: PostgreSQL reads the
    /// extremes as -infinity and infinity).
    mutating func timestamp(microseconds: Int64) {
        let (sincePostgresEpoch, overflow) = microseconds.subtractingReportingOverflow(Self.postgresEpochMicroseconds)
        int64(overflow ? Int64.min : sincePostgresEpoch)
    }

    /// `timestamptz` '-infinity'.
    mutating func minusInfinity() {
        int64(Int64.min)
    }

    /// 2000-01-01T00:00:00Z, PostgreSQL's epoch, in microseconds since the Unix epoch.
    static let postgresEpochMicroseconds: Int64 = 946_684_800_000_000

    @inline(__always)
    private mutating func append<Value: FixedWidthInteger>(_ value: Value) {
        let size = MemoryLayout<Value>.size
        if count + size > storage.count { grow(toHold: count + size) }
        storage.withUnsafeMutableBytes { $0.storeBytes(of: value.bigEndian, toByteOffset: count, as: Value.self) }
        count += size
    }

    @inline(never)
    private mutating func grow(toHold needed: Int) {
        makeRoom(forTotal: Swift.max(needed, 2 * storage.count, 64))
    }

    /// Microseconds since the Unix epoch, saturating (a device may claim any date).
    static func microseconds(_ date: Date) -> Int64 {
        date.epochMicroseconds
    }
}

/// The rows of one binary `COPY … FROM STDIN`, encoded `rowsPerChunk` at a time for
/// `copyIn(_:chunks:)`: the header goes with the first rows and the trailer after the last, and
/// the encoded form of a whole batch never exists at once.
struct CopyBinaryChunks<Row> {
    static var rowsPerChunk: Int { 1_000 }

    private var rows: ArraySlice<Row>
    private let encode: (Row, inout CopyBinaryEncoder) -> Void
    private var started = false
    private var finished = false

    /// `encode` writes one row's fields (between `beginRow` and `endRow`, which this calls).
    init(_ rows: ArraySlice<Row>, encode: @escaping (Row, inout CopyBinaryEncoder) -> Void) {
        self.rows = rows
        self.encode = encode
    }

    /// The next piece of the COPY's data; nil once the trailer was returned.
    mutating func next() -> [UInt8]? {
        guard !finished else { return nil }
        let chunk = rows.prefix(Self.rowsPerChunk)
        rows = rows.dropFirst(chunk.count)
        var encoder = CopyBinaryEncoder()
        if !started {
            encoder.header()
            started = true
        }
        if let first = chunk.first {
            let firstStart = encoder.count
            add(first, to: &encoder)
            // The chunk's other rows are about as long as its first; 2 bytes for the trailer.
            encoder.makeRoom(forTotal: encoder.count + (encoder.count - firstStart) * (chunk.count - 1) + 2)
        }
        for row in chunk.dropFirst() { add(row, to: &encoder) }
        if rows.isEmpty {
            encoder.trailer()
            finished = true
        }
        return encoder.take()
    }

    private func add(_ row: Row, to encoder: inout CopyBinaryEncoder) {
        encoder.beginRow()
        encode(row, &encoder)
        encoder.endRow()
    }
}
