import Foundation
import Logging
import Telemetry
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage
@testable import WritePath

#if canImport(Glibc)
    import Glibc
#endif

/// The spool on real files in a temporary directory: framing, torn tails, segments, checkpoints,
/// backpressure.
@Suite struct SpoolTests {
    static let logger = Logger(label: "spool-test")

    /// Three records of different sizes; their encoded lengths give the cut points.
    static let messages: [RawMessage] = [
        RawMessage(
            topic: "outlets/a/telemetry", payload: Array(#"{"voltage":227,"current":0.5}"#.utf8),
            receivedAt: Date(timeIntervalSince1970: 1_700_000_000.123456)),
        RawMessage(topic: "outlets/b/telemetry", payload: [], receivedAt: Date(timeIntervalSince1970: 1_700_000_001)),
        RawMessage(
            topic: "outlets/ç/telemetry", payload: Array(repeating: 0xFF, count: 300),
            receivedAt: Date(timeIntervalSince1970: 1_700_000_002.5)),
    ]
    static let encoded = messages.map { SpoolFraming.encode($0) }
    static let totalBytes = encoded.reduce(0) { $0 + $1.count }
    /// Where each record ends.
    static let boundaries = encoded.reduce(into: [0]) { $0.append(($0.last ?? 0) + $1.count) }

    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func settings(_ directory: String, segmentBytes: Int64 = 1 << 20, maxBytes: Int64 = 8 << 20)
        -> Spool.Settings
    {
        Spool.Settings(directory: directory, maxBytes: maxBytes, segmentBytes: segmentBytes)
    }

    static func readAll(_ spool: Spool) throws -> [SpoolRecord] {
        var records: [SpoolRecord] = []
        while true {
            let batch = try spool.read(upTo: 1_000, waitingUntil: Date())
            if batch.isEmpty { return records }
            records += batch
        }
    }

    static func microseconds(_ date: Date) -> Int64 { CopyBinaryEncoder.microseconds(date) }

    static func same(_ lhs: [RawMessage], _ rhs: [RawMessage]) -> Bool {
        lhs.map { [$0.topic, "\($0.payload)", "\(microseconds($0.receivedAt))"] }
            == rhs.map { [$0.topic, "\($0.payload)", "\(microseconds($0.receivedAt))"] }
    }

    @Test func framingRoundTripsTopicPayloadAndMicroseconds() throws {
        for (message, bytes) in zip(Self.messages, Self.encoded) {
            let decoded = bytes.withUnsafeBytes { SpoolFraming.decode($0, at: 0) }
            guard case .record(let read, let tag, let length) = decoded else {
                Issue.record("not decoded: \(decoded)")
                continue
            }
            #expect(length == bytes.count)
            #expect(tag.isEmpty)
            #expect(Self.same([read], [message]))
        }
    }

    @Test func framingCarriesTheProducersTag() {
        let tag: [UInt8] = [1, 0, 3, 0, 0x61, 0x62, 0x63]
        let bytes = SpoolFraming.encode(Self.messages[0], tag: tag)
        guard
            case .record(let read, let readTag, let length) = bytes.withUnsafeBytes({ SpoolFraming.decode($0, at: 0) })
        else {
            Issue.record("not decoded")
            return
        }
        #expect(readTag == tag && length == bytes.count && Self.same([read], [Self.messages[0]]))
    }

    /// A spool written before records carried a tag ("OSP1") is still read, its records without one.
    @Test func readsRecordsOfTheFirstFormat() {
        let message = Self.messages[0]
        var body: [UInt8] = []
        withUnsafeBytes(of: UInt64(bitPattern: Self.microseconds(message.receivedAt)).littleEndian) { body += $0 }
        withUnsafeBytes(of: UInt16(message.topic.utf8.count).littleEndian) { body += $0 }
        body += message.topic.utf8
        body += message.payload
        var bytes = Array("OSP1".utf8)
        withUnsafeBytes(of: UInt32(body.count).littleEndian) { bytes += $0 }
        let header = bytes.withUnsafeBytes { CRC32C.update(0, $0) }
        let crc = body.withUnsafeBytes { CRC32C.update(header, $0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes += $0 }
        bytes += body
        guard case .record(let read, let tag, let length) = bytes.withUnsafeBytes({ SpoolFraming.decode($0, at: 0) })
        else {
            Issue.record("an OSP1 record was not read")
            return
        }
        #expect(tag.isEmpty && length == bytes.count && Self.same([read], [message]))
    }

    @Test func checksumIsCRC32C() {
        // The standard check value of CRC-32C.
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    }

    /// Eight bytes per step and the byte-wise rest give the bit-by-bit definition, at every length and
    /// wherever a running checksum is split: with the processor's instruction (where it has one, as every
    /// x86-64 machine outletd runs on) and with the tables.
    @Test(arguments: [true, false])
    func checksumMatchesTheBitwiseDefinition(instruction: Bool) {
        if instruction { #expect(CRC32C.hasInstruction, "this machine's processor has no crc32 instruction") }
        let update = instruction ? CRC32C.update : CRC32C.updateByTable
        func bitwise(_ bytes: [UInt8]) -> UInt32 {
            var crc = UInt32.max
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        var generator = SplitMix64(seed: 32)
        for length in 0...80 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let split = Int.random(in: 0...length, using: &generator)
            let running = bytes.withUnsafeBytes { buffer in
                update(
                    update(0, UnsafeRawBufferPointer(rebasing: buffer[..<split])),
                    UnsafeRawBufferPointer(rebasing: buffer[split...]))
            }
            #expect(bytes.withUnsafeBytes { update(0, $0) } == bitwise(bytes), "length \(length)")
            #expect(running == bitwise(bytes), "length \(length) split at \(split)")
        }
    }

    /// A crash can stop the file at any byte. Whatever the cut, reopening keeps exactly the records
    /// that are complete, truncates the rest, and appends after them.
    @Test(arguments: 0...totalBytes)
    func truncationAtAnyByteKeepsExactlyTheCompleteRecords(cut: Int) throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = Spool.path(7, in: directory)
        let bytes = Array(Self.encoded.joined().prefix(cut))
        _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))

        let spool = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { spool.close() }
        let complete = Self.boundaries.filter { $0 <= cut }.count - 1
        let keptBytes = Self.boundaries[complete]
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.size] as? Int) == keptBytes, "the torn tail is cut")
        try spool.seek(to: nil)
        let read = try Self.readAll(spool)
        #expect(Self.same(read.map(\.message), Array(Self.messages.prefix(complete))))
        #expect(spool.status().recordsPending == complete)
        // New records go to a new segment after the kept ones.
        #expect(spool.append(Self.messages[0]))
        let after = try spool.read(upTo: 10, waitingUntil: Date())
        #expect(after.map(\.end) == [SpoolPosition(segment: 8, offset: Int64(Self.encoded[0].count))])
    }

    /// A flipped byte anywhere in the second record: the first record is kept, the rest cut.
    @Test(arguments: 0..<encoded[1].count)
    func corruptionInARecordCutsItAndWhatFollows(byte: Int) throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bytes = Array(Self.encoded.joined())
        bytes[Self.boundaries[1] + byte] ^= 0x5A
        _ = FileManager.default.createFile(atPath: Spool.path(0, in: directory), contents: Data(bytes))

        let spool = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        #expect(Self.same(try Self.readAll(spool).map(\.message), [Self.messages[0]]))
    }

    @Test func garbageFileIsCutToNothingWithoutCrashing() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var random = SystemRandomNumberGenerator()
        let garbage = (0..<10_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        _ = FileManager.default.createFile(atPath: Spool.path(0, in: directory), contents: Data(garbage))
        let spool = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        #expect(try Self.readAll(spool).isEmpty)
        #expect(spool.status().bytes == 0)
    }

    @Test func segmentsRollOverAndCommittedOnesAreDeleted() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(
            Self.settings(directory, segmentBytes: 65_536, maxBytes: 1 << 20), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        let message = RawMessage(topic: "t", payload: Array(repeating: 1, count: 1_000), receivedAt: Date())
        for _ in 0..<200 { #expect(spool.append(message)) }
        let segmentsWritten = try Spool.segmentIDs(in: directory)
        #expect(segmentsWritten.count == 4, "200 records of 1024 bytes in 64 KiB segments")
        // One read crosses segment boundaries, and stops at its count.
        let first = try spool.read(upTo: 100, waitingUntil: Date())
        #expect(first.count == 100)
        #expect(Set(first.map(\.end.segment)).count == 2, "64 records per segment")
        let records = try first + spool.read(upTo: 1_000, waitingUntil: Date())
        #expect(records.count == 200)
        #expect(try spool.read(upTo: 1_000, waitingUntil: Date()).isEmpty)
        #expect(spool.status().recordsPending == 200)
        #expect(spool.status().oldestPendingReceivedAt != nil)

        // Commit the first 100: the segments before the one holding record 100 go.
        spool.commit(through: records[99].end, records: 100)
        #expect(try Spool.segmentIDs(in: directory) == Array(segmentsWritten.drop { $0 < records[99].end.segment }))
        #expect(spool.status().recordsPending == 100)
        spool.commit(through: records[199].end, records: 100)
        #expect(try Spool.segmentIDs(in: directory) == [segmentsWritten.last].compactMap { $0 })
        #expect(spool.status() == Spool.Status(bytes: 1_024 * 8, recordsPending: 0, oldestPendingReceivedAt: nil))
    }

    /// Appending many records at once (a read of the socket) writes what appending them one by one writes: the
    /// same segment files, byte for byte, a segment rolled over where the next record would not fit.
    @Test(arguments: [1, 7, 64, 200])
    func appendingManyAtOnceWritesWhatOneByOneWrites(runLength: Int) throws {
        var messages: [(message: RawMessage, tag: [UInt8])] = []
        for index in 0..<200 {
            let payload = [UInt8](repeating: UInt8(index % 256), count: 900 + index % 200)
            let receivedAt = Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
            let message = RawMessage(topic: "t/\(index % 10)", payload: payload, receivedAt: receivedAt)
            messages.append((message, [UInt8(index % 3)]))
        }
        func segments(_ append: (Spool) -> Void) throws -> [[UInt8]] {
            let directory = Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let spool = try Spool.open(
                Self.settings(directory, segmentBytes: 65_536, maxBytes: 1 << 20), logger: Self.logger)
            defer { spool.close() }
            append(spool)
            return try Spool.segmentIDs(in: directory).map { id in
                Array(try Data(contentsOf: URL(fileURLWithPath: Spool.path(id, in: directory))))
            }
        }
        let oneByOne = try segments { spool in
            for (message, tag) in messages { spool.append(message, tag: tag) }
        }
        let together = try segments { spool in
            for start in stride(from: 0, to: messages.count, by: runLength) {
                #expect(spool.append(contentsOf: Array(messages[start..<min(start + runLength, messages.count)])))
            }
        }
        #expect(oneByOne.count >= 3)
        #expect(oneByOne.allSatisfy { $0.count <= 65_536 })
        #expect(together == oneByOne)
    }

    /// A run that does not fit a full spool: what fits is written, the rest waits for a commit.
    @Test func aRunWaitsWhereTheSpoolIsFull() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(
            Self.settings(directory, segmentBytes: 65_536, maxBytes: 131_072), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        let message = RawMessage(topic: "t", payload: Array(repeating: 3, count: 1_000), receivedAt: Date())
        let done = Locked(false)
        let producer = Thread {
            spool.append(contentsOf: Array(repeating: (message, []), count: 140))  // 128 fit
            done.value = true
        }
        producer.start()
        try await Harness.waitUntil(timeout: 5, "128 records written") { spool.status().recordsPending == 128 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!done.value, "the rest of the run waits while the spool is full")
        #expect(spool.status().recordsPending == 128)
        let records = try Self.readAll(spool)
        spool.commit(through: records[records.count - 1].end, records: records.count)
        try await Harness.waitUntil(timeout: 5, "the run finished") { done.value }
        #expect(try Self.readAll(spool).count == 12)
    }

    /// A restart resumes just after the checkpoint of this spool; a checkpoint of another spool
    /// (the directory was replaced) reads everything.
    @Test func reopenResumesAfterTheCheckpointOfThisSpoolOnly() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Spool.open(Self.settings(directory), logger: Self.logger)
        try first.seek(to: nil)
        for message in Self.messages { first.append(message) }
        let records = try Self.readAll(first)
        let checkpoint = SpoolCheckpoint(spoolID: first.identity, position: records[0].end)
        // A crash: no close, no commit in the spool (only the database has the checkpoint).

        let second = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { second.close() }
        #expect(second.identity == first.identity)
        try second.seek(to: checkpoint)
        #expect(second.status().recordsPending == 2)
        #expect(Self.same(try Self.readAll(second).map(\.message), Array(Self.messages.dropFirst())))

        let third = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { third.close() }
        try third.seek(to: SpoolCheckpoint(spoolID: "another", position: records[2].end))
        #expect(Self.same(try Self.readAll(third).map(\.message), Self.messages))
    }

    /// An emptied directory is a new spool: an old checkpoint must not make it skip records.
    @Test func anEmptiedDirectoryGetsANewIdentity() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Spool.open(Self.settings(directory), logger: Self.logger)
        first.close()
        for id in try Spool.segmentIDs(in: directory) { unlink(Spool.path(id, in: directory)) }
        let second = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { second.close() }
        #expect(second.identity != first.identity)
    }

    /// At `maxBytes` the producer waits (no PUBACK, the broker queues) until a commit frees a
    /// segment; then it goes on.
    @Test func appendWaitsWhileFullAndResumesWhenACommitFreesSpace() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(
            Self.settings(directory, segmentBytes: 65_536, maxBytes: 131_072), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        let message = RawMessage(topic: "t", payload: Array(repeating: 2, count: 1_000), receivedAt: Date())
        for _ in 0..<128 { #expect(spool.append(message)) }  // 128 × 1023 bytes: just under the bound

        let appended = Locked(0)
        let producer = Thread {
            for _ in 0..<10 {
                spool.append(message)
                appended.value += 1
            }
        }
        producer.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(appended.value == 0, "the producer waits while the spool is full")
        #expect(spool.status().bytes <= 131_072)

        let records = try Self.readAll(spool)
        spool.commit(through: records[records.count - 1].end, records: records.count)
        try await Harness.waitUntil(timeout: 5, "the producer resumed") { appended.value == 10 }
        #expect(try Self.readAll(spool).count == 10)
    }

    @Test func stoppedIntakeIsReportedOnceEverythingIsRead() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(Self.settings(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        spool.append(Self.messages[0])
        spool.stopIntake()
        #expect(!spool.isIntakeStoppedAndRead)
        #expect(try spool.read(upTo: 10, waitingUntil: Date().addingTimeInterval(5)).count == 1)
        #expect(spool.isIntakeStoppedAndRead)
        let started = Date()
        #expect(try spool.read(upTo: 10, waitingUntil: Date().addingTimeInterval(5)).isEmpty)
        #expect(Date().timeIntervalSince(started) < 1, "a stopped, read spool does not make the reader wait")
    }

    @Test func refusesMaxBytesBelowTwoSegments() {
        #expect(throws: SpoolError.self) {
            try Spool.open(
                Self.settings(Self.temporaryDirectory(), segmentBytes: 1 << 20, maxBytes: 1 << 20), logger: Self.logger)
        }
    }
}
