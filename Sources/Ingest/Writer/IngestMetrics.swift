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
        public var batchesCommitted: UInt64 = 0
        public var lastCommitSeconds: Double = 0
        public var databaseErrors: UInt64 = 0
        /// Bytes of the spool's segment files.
        public var spoolBytes: Int64 = 0
        /// Records received and not yet committed to PostgreSQL.
        public var spoolRecordsPending: Int = 0
        /// How long the oldest of them has waited, seconds (0 when none).
        public var spoolOldestRecordAgeSeconds: Double = 0

        public var rejectedTotal: UInt64 { rejected.values.reduce(0, +) }
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

    func batchCommitted(stored: Int, duplicates: Int, rejected: [RejectionReason: Int], seconds: Double) {
        lock.lock()
        state.readingsStored += UInt64(stored)
        state.readingsDuplicate += UInt64(duplicates)
        for (reason, count) in rejected { state.rejected[reason, default: 0] += UInt64(count) }
        state.batchesCommitted += 1
        state.lastCommitSeconds = seconds
        lock.unlock()
    }

    func databaseError() {
        lock.lock()
        state.databaseErrors += 1
        lock.unlock()
    }
}
