import Foundation
import Postgres
import TestSupport
import Testing

@testable import WritePath

@Suite struct CopyBinaryEncoderTests {
    @Test func writesPostgreSQLsBinaryCopyLayout() {
        var encoder = CopyBinaryEncoder()
        encoder.header()
        encoder.beginRow()
        encoder.int32(-2)
        encoder.null()
        encoder.int64(258)
        encoder.double(1.5)
        encoder.endRow()
        encoder.trailer()
        let expected: [UInt8] =
            Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
            + [0, 4]  // four fields
            + [0, 0, 0, 4, 0xff, 0xff, 0xff, 0xfe]
            + [0xff, 0xff, 0xff, 0xff]  // NULL: length -1, no value
            + [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2]
            + [0, 0, 0, 8, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]
            + [0xff, 0xff]  // trailer
        #expect(encoder.bytes == expected)
    }

    /// Fields are stored into room the encoder makes ahead: past any room reserved, it grows, and what it
    /// hands over is exactly what was encoded, not the room after it.
    @Test(arguments: [0, 1, 13, 4_096])
    func growsPastItsRoomAndHandsOverExactlyWhatItEncoded(reserved: Int) {
        var encoder = CopyBinaryEncoder()
        encoder.makeRoom(forTotal: reserved)
        var expected: [UInt8] = []
        for value in Int64(0)..<500 {
            encoder.int64(value * 0x0102_0304)
            expected += [0, 0, 0, 8] + withUnsafeBytes(of: (value * 0x0102_0304).bigEndian, Array.init)
        }
        #expect(encoder.count == expected.count)
        #expect(encoder.bytes == expected)
        #expect(encoder.take() == expected)
        #expect(encoder.count == 0 && encoder.bytes.isEmpty)
        encoder.int32(7)
        #expect(encoder.take() == [0, 0, 0, 4, 0, 0, 0, 7])
    }

    @Test(arguments: [
        (0.0, Int64(0)),
        (1_800_000_000.123456, Int64(1_800_000_000_123_456)),
        (-1.5, Int64(-1_500_000)),
        (1e300, Int64.max),
        (-1e300, Int64.min),
    ])
    func microsecondsSaturate(_ seconds: Double, _ expected: Int64) {
        #expect(CopyBinaryEncoder.microseconds(Date(timeIntervalSince1970: seconds)) == expected)
    }

    struct Row {
        var a: Int32
        var b: Int64?
        var c: Double
    }

    /// Every value reaches PostgreSQL bit for bit, over several chunks, and an empty COPY is one.
    @Test func roundTripsThroughPostgreSQL() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try connection.execute("CREATE TABLE copied (n integer, a integer, b bigint, c double precision)")
        let edges: [Row] = [
            Row(a: .min, b: .min, c: -0.0), Row(a: .max, b: .max, c: .infinity),
            Row(a: -1, b: nil, c: -.infinity), Row(a: 0, b: 0, c: .leastNonzeroMagnitude),
            Row(a: 7, b: -7, c: 0.1 + 0.2), Row(a: 8, b: 1_800_000_000_123_456, c: .greatestFiniteMagnitude),
        ]
        let rows = (0..<2_500).map { i in edges[i % edges.count] }
        var chunks = CopyBinaryChunks(Array(rows.enumerated())[...]) { row, encoder in
            encoder.int32(Int32(row.offset))
            encoder.int32(row.element.a)
            encoder.int64(row.element.b)
            encoder.double(row.element.c)
        }
        var pieces = 0
        let copied = try connection.copyIn("COPY copied (n, a, b, c) FROM STDIN (FORMAT binary)") {
            defer { pieces += 1 }
            return chunks.next()
        }
        #expect(copied == rows.count)
        #expect(pieces == 4)  // three chunks of at most 1,000 rows (the last with the trailer), then nil
        let stored = try connection.execute(
            "SELECT a, coalesce(b::text, 'NULL'), encode(float8send(c), 'hex') FROM copied ORDER BY n")
        #expect(stored.rowCount == rows.count)
        for (index, row) in rows.enumerated() {
            let bits = String(row.c.bitPattern, radix: 16)
            let expected = [
                String(row.a), row.b.map(String.init) ?? "NULL", String(repeating: "0", count: 16 - bits.count) + bits,
            ]
            #expect((0..<3).map { stored[index, $0] ?? "" } == expected, "row \(index)")
        }
        var empty = CopyBinaryChunks([Row]()[...]) { row, encoder in encoder.int32(row.a) }
        #expect(try connection.copyIn("COPY copied (a) FROM STDIN (FORMAT binary)") { empty.next() } == 0)
    }

    /// A `timestamptz` arrives at the microsecond: around PostgreSQL's epoch and the Unix one, and at the ends
    /// of the years the write path stores (1 and 9999).
    @Test func timestampsRoundTripThroughPostgreSQL() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try connection.execute("CREATE TABLE copied (n integer, t timestamptz)")
        let micros: [Int64] = [
            0, -1, 1, CopyBinaryEncoder.postgresEpochMicroseconds, CopyBinaryEncoder.postgresEpochMicroseconds - 1,
            1_800_000_000_123_456, BatchStore.storableMicroseconds.lowerBound,
            BatchStore.storableMicroseconds.upperBound,
        ]
        var chunks = CopyBinaryChunks(Array(micros.enumerated())[...]) { row, encoder in
            encoder.int32(Int32(row.offset))
            encoder.timestamp(microseconds: row.element)
        }
        #expect(
            try connection.copyIn("COPY copied (n, t) FROM STDIN (FORMAT binary)") { chunks.next() } == micros.count)
        let stored = try connection.execute(
            "SELECT (extract(epoch FROM t) * 1000000)::bigint FROM copied ORDER BY n")
        #expect((0..<micros.count).map { stored[$0, 0] } == micros.map { String($0) })
        // A date goes as its microseconds.
        var encoder = CopyBinaryEncoder()
        encoder.timestamp(Date(timeIntervalSince1970: 946_684_800.000_001))
        #expect(encoder.bytes == [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1])
    }
}
