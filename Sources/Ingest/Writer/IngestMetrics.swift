import Foundation
import Telemetry

/// Counters of the ingest path, since start, and the spool's gauges. One lock guards them, hence
/// `@unchecked Sendable`.
public final class IngestMetrics: @unchecked Sendable {
    /// A consistent copy of the counters.
    public struct Snapshot: Sendable, Equatable {
        public var messagesReceived: UInt64 = 0
        public var readingsStored: UInt64 = 0
        /// Valid readings already in the database (a replay or a repeated message).
        public var readingsDuplicate: UInt64 = 0
        public var rejected: [RejectionReason: UInt64] = [:]
        /// Messages that carried nothing to store and nothing wrong, by kind (see ``IgnoredKind``).
        public var ignored: [IgnoredKind: UInt64] = [:]
        public var batchesCommitted: UInt64 = 0
        public var lastCommitSeconds: Double = 0
        public var databaseErrors: UInt64 = 0
        /// Rows (readings and rejections) per committed batch.
        public var batchRows = Histogram(bounds: [1, 10, 100, 500, 1_000, 5_000, 10_000, 50_000])
        /// Seconds from BEGIN to COMMIT of a batch.
        public var commitSeconds = Histogram(bounds: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5])
        /// Whether the MQTT client is connected to the broker.
        public var brokerConnected = false
        /// Whether the writer's last attempt to reach PostgreSQL succeeded.
        public var databaseConnected = false
        /// Bytes of the spool's segment files.
        public var spoolBytes: Int64 = 0
        /// Records received and not yet committed to PostgreSQL.
        public var spoolRecordsPending: Int = 0
        /// How long the oldest of them has waited, seconds (0 when none).
        public var spoolOldestRecordAgeSeconds: Double = 0
        /// Commands published to outlets (the command relay).
        public var commandsPublished: UInt64 = 0
        /// Results published on `set/result`, by result (accepted, sent, confirmed, timed_out, …).
        public var commandResults: [String: UInt64] = [:]

        public var rejectedTotal: UInt64 { rejected.values.reduce(0, +) }
    }

    /// A cumulative histogram: `counts[i]` observations ≤ `bounds[i]`, plus the total count and sum.
    public struct Histogram: Sendable, Equatable {
        public let bounds: [Double]
        public private(set) var counts: [UInt64]
        public private(set) var count: UInt64 = 0
        public private(set) var sum: Double = 0

        public init(bounds: [Double]) {
            self.bounds = bounds
            self.counts = Array(repeating: 0, count: bounds.count)
        }

        public mutating func observe(_ value: Double) {
            count += 1
            sum += value
            for index in bounds.indices where value <= bounds[index] { counts[index] += 1 }
        }
    }

    private let lock = NSLock()
    private var state = Snapshot()
    private var spool: Spool?

    public init() {}

    /// The counters, and the spool's gauges as of now.
    public func snapshot() -> Snapshot {
        lock.lock()
        var snapshot = state
        let spool = self.spool
        lock.unlock()
        if let status = spool?.status() {
            snapshot.spoolBytes = status.bytes
            snapshot.spoolRecordsPending = status.recordsPending
            snapshot.spoolOldestRecordAgeSeconds =
                status.oldestPendingReceivedAt.map { max(0, Date().timeIntervalSince($0)) } ?? 0
        }
        return snapshot
    }

    /// Where the spool gauges come from.
    func observe(_ spool: Spool) {
        lock.lock()
        self.spool = spool
        lock.unlock()
    }

    func messageReceived() {
        lock.lock()
        state.messagesReceived += 1
        lock.unlock()
    }

    /// A message was ignored (nothing to store, nothing wrong).
    func messageIgnored(_ kind: IgnoredKind) {
        lock.lock()
        state.ignored[kind, default: 0] += 1
        lock.unlock()
    }

    /// Readings left out of a message because an earlier one of it has the same time.
    func duplicatesDropped(_ count: Int) {
        lock.lock()
        state.readingsDuplicate += UInt64(count)
        lock.unlock()
    }

    func batchCommitted(stored: Int, duplicates: Int, rejected: [RejectionReason: Int], seconds: Double) {
        lock.lock()
        state.readingsStored += UInt64(stored)
        state.readingsDuplicate += UInt64(duplicates)
        for (reason, count) in rejected { state.rejected[reason, default: 0] += UInt64(count) }
        state.batchesCommitted += 1
        state.lastCommitSeconds = seconds
        state.batchRows.observe(Double(stored + duplicates + rejected.values.reduce(0, +)))
        state.commitSeconds.observe(seconds)
        state.databaseConnected = true
        lock.unlock()
    }

    /// A set request, state or availability report was refused (counted with the readings' rejections).
    func commandMessageRejected(_ reason: RejectionReason) {
        lock.lock()
        state.rejected[reason, default: 0] += 1
        lock.unlock()
    }

    func commandResultPublished(_ result: String) {
        lock.lock()
        state.commandResults[result, default: 0] += 1
        lock.unlock()
    }

    func commandPublished() {
        lock.lock()
        state.commandsPublished += 1
        lock.unlock()
    }

    func databaseError() {
        lock.lock()
        state.databaseErrors += 1
        state.databaseConnected = false
        lock.unlock()
    }

    func setDatabaseConnected(_ connected: Bool) {
        lock.lock()
        state.databaseConnected = connected
        lock.unlock()
    }

    func setBrokerConnected(_ connected: Bool) {
        lock.lock()
        state.brokerConnected = connected
        lock.unlock()
    }

}
