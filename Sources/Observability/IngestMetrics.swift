import Foundation
import Synchronization
import Telemetry

/// Counters of the ingest path, since start, and the spool's gauges, behind one `Mutex`.
public final class IngestMetrics: Sendable {
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

    /// What the spool holds, as its gauges show it.
    public struct BacklogGauges: Sendable {
        public var bytes: Int64
        public var records: Int
        public var oldestReceivedAt: Date?

        public init(bytes: Int64, records: Int, oldestReceivedAt: Date?) {
            self.bytes = bytes
            self.records = records
            self.oldestReceivedAt = oldestReceivedAt
        }
    }

    private struct State: Sendable {
        var counters = Snapshot()
        var backlog: (@Sendable () -> BacklogGauges)?
    }
    private let state = Mutex(State())

    public init() {}

    /// The counters, and the spool's gauges as of now.
    public func snapshot() -> Snapshot {
        let (counters, backlog) = state.withLock { ($0.counters, $0.backlog) }
        var snapshot = counters
        if let gauges = backlog?() {
            snapshot.spoolBytes = gauges.bytes
            snapshot.spoolRecordsPending = gauges.records
            snapshot.spoolOldestRecordAgeSeconds =
                gauges.oldestReceivedAt.map { max(0, Date().timeIntervalSince($0)) } ?? 0
        }
        return snapshot
    }

    /// Where the spool gauges come from.
    public func observeBacklog(_ gauges: @escaping @Sendable () -> BacklogGauges) {
        state.withLock { $0.backlog = gauges }
    }

    private func count(_ change: (inout Snapshot) -> Void) {
        state.withLock { change(&$0.counters) }
    }

    public func messageReceived() {
        count { $0.messagesReceived += 1 }
    }

    /// A message was ignored (nothing to store, nothing wrong).
    public func messageIgnored(_ kind: IgnoredKind) {
        count { $0.ignored[kind, default: 0] += 1 }
    }

    /// Readings left out of a message because an earlier one of it has the same time.
    public func duplicatesDropped(_ duplicates: Int) {
        count { $0.readingsDuplicate += UInt64(duplicates) }
    }

    public func batchCommitted(stored: Int, duplicates: Int, rejected: [RejectionReason: Int], seconds: Double) {
        count { counters in
            counters.readingsStored += UInt64(stored)
            counters.readingsDuplicate += UInt64(duplicates)
            for (reason, count) in rejected { counters.rejected[reason, default: 0] += UInt64(count) }
            counters.batchesCommitted += 1
            counters.lastCommitSeconds = seconds
            counters.batchRows.observe(Double(stored + duplicates + rejected.values.reduce(0, +)))
            counters.commitSeconds.observe(seconds)
            counters.databaseConnected = true
        }
    }

    /// A set request, state or availability report was refused (counted with the readings' rejections).
    public func commandMessageRejected(_ reason: RejectionReason) {
        count { $0.rejected[reason, default: 0] += 1 }
    }

    public func commandResultPublished(_ result: String) {
        count { $0.commandResults[result, default: 0] += 1 }
    }

    public func commandPublished() {
        count { $0.commandsPublished += 1 }
    }

    public func databaseError() {
        count {
            $0.databaseErrors += 1
            $0.databaseConnected = false
        }
    }

    public func setDatabaseConnected(_ connected: Bool) {
        count { $0.databaseConnected = connected }
    }

    public func setBrokerConnected(_ connected: Bool) {
        count { $0.brokerConnected = connected }
    }
}
