import Foundation
import Telemetry

/// Counters of the ingest path, since start. One lock guards them, hence `@unchecked Sendable`.
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
        /// Commands published to outlets (the command relay).
        public var commandsPublished: UInt64 = 0

        public var rejectedTotal: UInt64 { rejected.values.reduce(0, +) }
    }

    private let lock = NSLock()
    private var state = Snapshot()

    public init() {}

    public func snapshot() -> Snapshot {
        lock.lock()
        defer { lock.unlock() }
        return state
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

    /// A set request, state or availability report was refused (counted with the readings' rejections).
    func commandMessageRejected(_ reason: RejectionReason) {
        lock.lock()
        state.rejected[reason, default: 0] += 1
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
        lock.unlock()
    }
}
