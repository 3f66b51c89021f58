import Foundation
import Logging
import Postgres
import Runtime

/// This instance's membership of its share group (`mqtt.share_group`), as PostgreSQL sees it, and the
/// decision, on a graceful stop, whether to hand its share of the messages over to the other members.
///
/// mosquitto deals a shared subscription's messages to every member that has a session, running or not
/// (docs/SCALING.md): a stopped member's share waits in its session, and is lost with it if the member never
/// comes back. A stopping instance therefore unsubscribes its shared filters first, so that the broker
/// deals to the others, but only when another member is running: a sole instance keeps its subscriptions,
/// so that the broker queues for it while it is away (a restart, an upgrade).
///
/// Who runs is known without any table: while outletd runs, this job (a ``DatabaseWorker``) holds a shared
/// advisory lock on the group on its connection, taken again after a reconnect. The decision
/// (``decideHandover(timeout:)``) runs on that connection, in one transaction under an exclusive lock of the
/// group: it counts the other holders, then releases this instance's lock. Two instances stopping together
/// are thus decided one after the other, and the last to decide sees no other member and keeps its
/// subscriptions: never may all of them hand over at once. When the database cannot be reached the answer is
/// to keep them (nothing is lost; the share only arrives late).
///
/// The request and its answer pass between the stopping path and the worker's thread under one ``Guarded``
/// lock.
public final class ShareGroupMembership: DatabaseJob {
    /// The first key of the group's advisory locks ('outd'); the second is `hashtext(group)`.
    static let memberLockKey = AdvisoryLock.Pair.shareGroupMember.rawValue
    /// The first key of the lock that serialises the group's handover decisions.
    static let decisionLockKey = AdvisoryLock.Pair.shareGroupDecision.rawValue

    public var name: String { "outletd-membership" }
    private let group: String
    private struct State: Sendable {
        /// Whether the member lock is held now.
        var holding = false
        var requested = false
        var answer: Bool?
    }
    private let state = Guarded(State())

    public init(group: String) {
        self.group = group
    }

    /// Done once the decision was made: the lock is not taken again.
    public var isFinished: Bool { state.withLock { $0.answer != nil } }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try connection.execute("SELECT pg_advisory_lock_shared($1, hashtext($2))", [Self.memberLockKey, group])
        state.update { $0.holding = true }
        defer { state.update { $0.holding = false } }
        while !context.stop.isSet {
            let asked = state.wait(until: Date(timeIntervalSinceNow: 2), for: \.requested) { _, ready in ready }
            if asked {
                let decision = try decide(connection)
                state.update { $0.answer = decision }
                return
            }
            // Keep-alive: a lost connection is noticed, and the lock taken again on a new one.
            try connection.execute("SELECT 1")
        }
    }

    private func decide(_ connection: PostgresConnection) throws -> Bool {
        try connection.transaction {
            try connection.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", [Self.decisionLockKey, group])
            let others = try connection.execute(
                """
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
                  AND classid = $1::int4::oid AND objid = hashtext($2)::oid AND objsubid = 2
                """, [Self.memberLockKey, group])
            try connection.execute("SELECT pg_advisory_unlock_shared($1, hashtext($2))", [Self.memberLockKey, group])
            return (try others.int64(row: 0, column: 0) ?? 0) > 0
        }
    }

    /// Whether this instance should hand its share over: true when another member of the group is running.
    /// Releases this instance's membership in the same transaction, so that a member deciding after it does not
    /// count it. Blocking: call it off the cooperative pool. False without the lock (the database is down) or
    /// without an answer within `timeout` seconds.
    public func decideHandover(timeout: Double = 10) -> Bool {
        let asked = state.update { state -> Bool in
            if state.answer != nil { return false }
            guard state.holding else {
                state.answer = false
                return false
            }
            state.requested = true
            return true
        }
        return state.wait(until: asked ? Date(timeIntervalSinceNow: timeout) : nil, for: { $0.answer != nil }) {
            state, _ in
            if state.answer == nil { state.answer = false }
            return state.answer ?? false
        }
    }
}
