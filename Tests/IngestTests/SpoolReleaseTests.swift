import Foundation
import Logging
import Telemetry
import TestSupport
import Testing

@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Runtime
@testable import Storage
@testable import WritePath

/// `database.durability: replicated` in the spool: committed records stay until released, the bound counts them,
/// and the cursor moves back to what a new primary lacks. Real files in a temporary directory.
@Suite struct SpoolReleaseTests {
    static let logger = Logger(label: "spool-release-test")
    static let message = RawMessage(topic: "t", payload: Array(repeating: 7, count: 1_000), receivedAt: Date())

    static func keeping(_ directory: String, maxBytes: Int64 = 8 << 20) -> Spool.Settings {
        Spool.Settings(directory: directory, maxBytes: maxBytes, segmentBytes: 65_536, keepUntilReleased: true)
    }

    static func segments(_ directory: String) throws -> Int {
        try Spool.segmentIDs(in: directory).count
    }

    @Test func committedSegmentsStayUntilReleased() throws {
        let directory = SpoolTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(Self.keeping(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        for _ in 0..<200 { spool.append(Self.message) }  // about three segments of 64 KiB
        let records = try SpoolTests.readAll(spool)
        #expect(records.count == 200)
        let before = try Self.segments(directory)
        #expect(before >= 3)

        spool.commit(through: records[199].end, records: 200)
        #expect(spool.status().recordsPending == 0)
        #expect(try Self.segments(directory) == before, "committed but not on a standby: kept")
        #expect(spool.status().unconfirmedBytes == spool.status().bytes)

        spool.release(through: records[99].end)
        #expect(try Self.segments(directory) < before)
        #expect(try Self.segments(directory) > 1)
        spool.release(through: records[199].end)
        #expect(try Self.segments(directory) == 1, "only the active segment is left")
        #expect(spool.status().unconfirmedBytes == 0)
    }

    /// Released but not committed does not delete either: both must hold.
    @Test func releaseAheadOfTheCommitWaitsForIt() throws {
        let directory = SpoolTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(Self.keeping(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        for _ in 0..<200 { spool.append(Self.message) }
        let records = try SpoolTests.readAll(spool)
        let before = try Self.segments(directory)
        spool.release(through: records[199].end)
        #expect(try Self.segments(directory) == before)
        spool.commit(through: records[199].end, records: 200)
        #expect(try Self.segments(directory) == 1)
    }

    /// After a failover the new primary's checkpoint is behind: seeking there reads the records again and counts
    /// them pending.
    @Test func seekingBackReadsAgainWhatTheDatabaseLacks() throws {
        let directory = SpoolTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(Self.keeping(directory), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        for _ in 0..<200 { spool.append(Self.message) }
        let records = try SpoolTests.readAll(spool)
        spool.commit(through: records[149].end, records: 150)
        spool.release(through: records[49].end)
        #expect(spool.status().recordsPending == 50)

        try spool.seek(to: SpoolCheckpoint(spoolID: spool.identity, position: records[79].end))
        #expect(spool.status().recordsPending == 120)
        #expect(spool.committedPosition == records[79].end)
        let again = try SpoolTests.readAll(spool)
        #expect(again.map(\.end) == records[80...].map(\.end))
    }

    /// The bound counts committed records kept for a standby: intake waits (the broker queues) until one has them.
    @Test func appendWaitsForAReleaseWhenUnconfirmedRecordsFillTheSpool() async throws {
        let directory = SpoolTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool.open(Self.keeping(directory, maxBytes: 131_072), logger: Self.logger)
        defer { spool.close() }
        try spool.seek(to: nil)
        for _ in 0..<126 { #expect(spool.append(Self.message)) }
        let records = try SpoolTests.readAll(spool)
        spool.commit(through: records[records.count - 1].end, records: records.count)
        #expect(spool.status().recordsPending == 0)

        let appended = Locked(0)
        let producer = Thread {
            for _ in 0..<10 {
                spool.append(Self.message)
                appended.value += 1
            }
        }
        producer.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(appended.value < 10, "the producer waits while unconfirmed records fill the spool")
        #expect(spool.status().bytes <= 131_072)

        spool.release(through: records[records.count - 1].end)
        try await Harness.waitUntil(timeout: 5, "the producer resumed") { appended.value == 10 }
    }

    /// A restart keeps what lies before the checkpoint: no standby is known to have it yet.
    @Test func aRestartKeepsWhatPrecedesTheCheckpoint() throws {
        let directory = SpoolTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Spool.open(Self.keeping(directory), logger: Self.logger)
        try first.seek(to: nil)
        for _ in 0..<200 { first.append(Self.message) }
        let records = try SpoolTests.readAll(first)
        first.commit(through: records[199].end, records: 200)
        first.close()
        let kept = try Self.segments(directory)

        let second = try Spool.open(Self.keeping(directory), logger: Self.logger)
        defer { second.close() }
        try second.seek(to: SpoolCheckpoint(spoolID: second.identity, position: records[199].end))
        #expect(second.status().recordsPending == 0)
        #expect(try Self.segments(directory) == kept + 1, "kept, and a new active segment")
        second.release(through: records[199].end)
        #expect(try Self.segments(directory) == 1)
    }
}

@Suite struct ReplicationTrackerTests {
    static func position(_ offset: Int64) -> SpoolPosition { SpoolPosition(segment: 1, offset: offset) }

    struct Case: Sendable, CustomTestStringConvertible {
        var commits: [(end: Int64, lsn: UInt64)]
        var flush: UInt64?
        var released: Int64?
        var left: Int
        var testDescription: String {
            "flush \(flush.map(String.init) ?? "none") → \(released.map(String.init) ?? "nothing")"
        }
    }

    @Test(arguments: [
        Case(commits: [(100, 1_000), (200, 2_000), (300, 3_000)], flush: nil, released: nil, left: 3),
        Case(commits: [(100, 1_000), (200, 2_000), (300, 3_000)], flush: 999, released: nil, left: 3),
        Case(commits: [(100, 1_000), (200, 2_000), (300, 3_000)], flush: 1_000, released: 100, left: 2),
        Case(commits: [(100, 1_000), (200, 2_000), (300, 3_000)], flush: 2_500, released: 200, left: 1),
        Case(commits: [(100, 1_000), (200, 2_000), (300, 3_000)], flush: 9_000, released: 300, left: 0),
        Case(commits: [], flush: 9_000, released: nil, left: 0),
    ])
    func releasesWhatTheStandbyFlushed(_ example: Case) {
        var tracker = ReplicationTracker()
        for commit in example.commits { tracker.committed(through: Self.position(commit.end), before: commit.lsn) }
        #expect(tracker.confirmed(byFlushLSN: example.flush) == example.released.map(Self.position))
        #expect(tracker.unconfirmed.count == example.left)
    }

    @Test func aRestartForgetsTheOldServersPositions() {
        var tracker = ReplicationTracker()
        tracker.committed(through: Self.position(100), before: 9_000)
        tracker.restart(committedBefore: Self.position(50), lsn: 500)
        #expect(tracker.confirmed(byFlushLSN: 600) == Self.position(50))
        #expect(tracker.unconfirmed.isEmpty)
        tracker.restart(committedBefore: nil, lsn: 500)
        #expect(tracker.unconfirmed.isEmpty)
    }

    @Test(arguments: [
        (ReplicationStatus(currentLSN: 500, standbyFlushLSN: nil, standbys: 0), "no standby is connected"),
        (ReplicationStatus(currentLSN: 500, standbyFlushLSN: nil, standbys: 1), "grant it pg_monitor"),
        (ReplicationStatus(currentLSN: 500, standbyFlushLSN: 400, standbys: 2), nil),
    ])
    func saysWhyReadingsStay(_ status: ReplicationStatus, _ problem: String?) {
        let gauges = ReplicationTracker.gauges(status)
        #expect(gauges.problem.map { $0.contains(problem ?? "\u{0}") } ?? (problem == nil))
        #expect(gauges.standbys == status.standbys)
        #expect(gauges.lagBytes == status.standbyFlushLSN.map { 500 - $0 })
    }
}

/// The replication gauges as /metrics shows them: absent with `durability: local`, the lag in bytes with a standby,
/// NaN without one.
@Suite struct ReplicationGaugeTests {
    @Test func exposesTheLagInBytes() {
        let metrics = IngestMetrics()
        let exposition = PrometheusExposition(metrics: metrics)
        #expect(!exposition.render(process: nil).contains("outletd_replication_lag_bytes"))

        metrics.observeBacklog { .init(bytes: 10, records: 0, oldestReceivedAt: nil, unconfirmedBytes: 4_096) }
        metrics.setReplication(.init(standbys: 1, lagBytes: 1_034_480, problem: nil))
        var samples = PrometheusText(exposition.render(process: nil)).samples
        #expect(samples["outletd_replication_lag_bytes"] == 1_034_480)
        #expect(samples["outletd_replication_standbys"] == 1)
        #expect(samples["outletd_spool_unconfirmed_bytes"] == 4_096)

        metrics.setReplication(.init(standbys: 0, lagBytes: nil, problem: "no standby is connected"))
        samples = PrometheusText(exposition.render(process: nil)).samples
        #expect(samples["outletd_replication_lag_bytes"]?.isNaN == true)
        #expect(samples["outletd_replication_standbys"] == 0)
    }
}
