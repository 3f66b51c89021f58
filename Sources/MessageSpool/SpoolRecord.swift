import Foundation
import Telemetry

/// A place in the spool: a segment file and a byte offset inside it. Ordered as the records are.
public struct SpoolPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The segment file's number (its name).
    public var segment: UInt64
    /// Bytes from the start of the segment file.
    public var offset: Int64

    public init(segment: UInt64, offset: Int64) {
        self.segment = segment
        self.offset = offset
    }

    public static func < (lhs: SpoolPosition, rhs: SpoolPosition) -> Bool {
        (lhs.segment, lhs.offset) < (rhs.segment, rhs.offset)
    }

    public var description: String { "\(segment):\(offset)" }
}

/// The writer's progress through one spool, as stored in `ingest_checkpoints` in the same
/// transaction as the rows it covers. Everything before `position` is in PostgreSQL.
public struct SpoolCheckpoint: Sendable, Hashable {
    /// The spool it belongs to (`spool.id` in the spool directory). A checkpoint of another spool
    /// (the directory was replaced) is ignored: the new spool is read from its start.
    public var spoolID: String
    public var position: SpoolPosition

    public init(spoolID: String, position: SpoolPosition) {
        self.spoolID = spoolID
        self.position = position
    }
}

/// One message read back from the spool, and where the record after it starts.
public struct SpoolRecord: Sendable, Equatable {
    public var message: RawMessage
    /// What the producer stored beside the message (its route, decided when it arrived); empty in records
    /// of the first format.
    public var tag: [UInt8]
    /// The position just past this record: the checkpoint once it is committed.
    public var end: SpoolPosition
}

/// The on-disk framing of a spool record, little endian:
///
/// ```
/// offset  size  field
///      0     4  magic "OSP2" (format version 2; "OSP1" records, without a tag, are still read)
///      4     4  body length, bytes
///      8     4  CRC-32C over bytes 0..<8 and the body
///     12     8  body: receivedAt, microseconds since the Unix epoch (signed)
///     20     2  body: topic length, bytes
///     22     1  body: tag length, bytes (version 2 only)
///     23     n  body: topic (UTF-8)
///   23+n     t  body: tag (the producer's, e.g. the message's route)
/// 23+n+t     m  body: payload (the rest of the body)
/// ```
///
/// Pure functions, so the torn-tail rules are tested without files.
enum SpoolFraming {
    static let magic: [UInt8] = Array("OSP2".utf8)
    static let firstMagic: [UInt8] = Array("OSP1".utf8)
    static let headerBytes = 12
    /// receivedAt, topic length and tag length (version 2).
    static let fixedBodyBytes = 11
    /// The same in version 1, which had no tag.
    static let firstFixedBodyBytes = 10
    /// The largest body accepted when reading: an MQTT packet (256 MiB) plus its topic and tag. A length
    /// field beyond it is garbage, not a record to wait for.
    static let maxBodyBytes = 268_435_455 + 65_535 + 255 + fixedBodyBytes

    /// The bytes of one record (a tag longer than 255 bytes is cut).
    static func encode(_ message: RawMessage, tag: [UInt8] = []) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length(of: message, tag: tag))
        encode(message, tag: tag, into: &bytes)
        return bytes
    }

    /// How many bytes `encode` makes of `message` and `tag`.
    static func length(of message: RawMessage, tag: [UInt8]) -> Int {
        headerBytes + fixedBodyBytes + min(message.topic.utf8.count, Int(UInt16.max)) + min(tag.count, Int(UInt8.max))
            + message.payload.count
    }

    /// Appends the bytes of one record to `bytes` (the records of a read go into one buffer, written at once;
    /// reserve their ``length(of:tag:)`` first).
    static func encode(_ message: RawMessage, tag: [UInt8] = [], into bytes: inout [UInt8]) {
        let topicLength = min(message.topic.utf8.count, Int(UInt16.max))
        let tagLength = min(tag.count, Int(UInt8.max))
        let bodyLength = fixedBodyBytes + topicLength + tagLength + message.payload.count
        let start = bytes.count
        bytes += magic
        append(UInt32(bodyLength), to: &bytes)
        append(UInt32(0), to: &bytes)  // the checksum, filled in below
        append(UInt64(bitPattern: message.receivedAt.epochMicroseconds), to: &bytes)
        append(UInt16(topicLength), to: &bytes)
        bytes.append(UInt8(tagLength))
        bytes.appendUTF8(of: message.topic, maxCount: topicLength)
        bytes += tag.prefix(tagLength)
        bytes += message.payload
        bytes.withUnsafeMutableBytes { whole in
            let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[start...])
            let crc = CRC32C.update(
                CRC32C.update(0, UnsafeRawBufferPointer(rebasing: buffer[0..<8])),
                UnsafeRawBufferPointer(rebasing: buffer[headerBytes...]))
            buffer.storeBytes(of: crc.littleEndian, toByteOffset: 8, as: UInt32.self)
        }
    }

    /// What `decode` found at an offset.
    enum Decoded: Equatable {
        /// A complete, intact record of `length` bytes.
        case record(RawMessage, tag: [UInt8], length: Int)
        /// The buffer ends inside a record that needs `length` bytes in all (a torn tail, or a
        /// read that stopped short).
        case incomplete(length: Int)
        /// Not a record: wrong magic, impossible length, checksum mismatch. Says which.
        case corrupt(String)
    }

    /// Decodes the record starting at `offset` of `buffer`.
    static func decode(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Decoded {
        let available = buffer.count - offset
        guard available >= headerBytes else { return .incomplete(length: headerBytes) }
        let version: Int
        if (0..<4).allSatisfy({ buffer[offset + $0] == magic[$0] }) {
            version = 2
        } else if (0..<4).allSatisfy({ buffer[offset + $0] == firstMagic[$0] }) {
            version = 1
        } else {
            return .corrupt("bad magic")
        }
        let fixed = version == 2 ? fixedBodyBytes : firstFixedBodyBytes
        let bodyLength = Int(readUInt32(buffer, offset + 4))
        guard bodyLength >= fixed && bodyLength <= maxBodyBytes else {
            return .corrupt("impossible length \(bodyLength)")
        }
        let length = headerBytes + bodyLength
        guard available >= length else { return .incomplete(length: length) }
        let stored = readUInt32(buffer, offset + 8)
        var crc = CRC32C.update(0, UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + 8)]))
        crc = CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: buffer[(offset + headerBytes)..<(offset + length)]))
        guard crc == stored else { return .corrupt("checksum mismatch") }
        let body = offset + headerBytes
        let microseconds = Int64(bitPattern: readUInt64(buffer, body))
        let topicLength = Int(readUInt16(buffer, body + 8))
        let tagLength = version == 2 ? Int(buffer[body + 10]) : 0
        guard fixed + topicLength + tagLength <= bodyLength else { return .corrupt("topic longer than the record") }
        let topicStart = body + fixed
        let tagStart = topicStart + topicLength
        let topic = String(decoding: buffer[topicStart..<tagStart], as: UTF8.self)
        let tag = Array(buffer[tagStart..<(tagStart + tagLength)])
        let payload = Array(buffer[(tagStart + tagLength)..<(offset + length)])
        let receivedAt = Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
        return .record(RawMessage(topic: topic, payload: payload, receivedAt: receivedAt), tag: tag, length: length)
    }

    /// The receive time in a record's first bytes (header plus 8), without checking the record.
    static func receivedAt(header bytes: [UInt8]) -> Date? {
        guard bytes.count >= headerBytes + 8, Array(bytes[0..<4]) == magic || Array(bytes[0..<4]) == firstMagic
        else { return nil }
        let microseconds = bytes.withUnsafeBytes { Int64(bitPattern: readUInt64($0, headerBytes)) }
        return Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private static func readUInt16(_ buffer: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(buffer[offset]) | UInt16(buffer[offset + 1]) << 8
    }

    private static func readUInt32(_ buffer: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(buffer[offset + $1]) << (8 * UInt32($1)) }
    }

    private static func readUInt64(_ buffer: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(buffer[offset + $1]) << (8 * UInt64($1)) }
    }
}
