import Foundation
import Logging
import Postgres

/// This instance's membership of its share group (`mqtt.share_group`), as PostgreSQL sees it, and the
/// decision, on a graceful stop, whether to hand its share of the messages over to the other members.
///
/// mosquitto deals a shared subscription's messages to every member that has a session, running or not
/// (docs/SCALING.md): a stopped member's share waits in its session, and is lost with it if the member never
/// comes back. A stopping instance therefore unsubscribes its shared filters first, so that the broker
/// deals to the others, but only when another member is running: a sole instance keeps its subscriptions,
/// so that the broker queues for it while it is away (a restart, an upgrade).
///
/// Who runs is known without any table: while outletd runs, one connection of its own holds a shared
/// advisory lock on the group (re-taken after a reconnect). The decision (``decideHandover()``) runs on
/// that connection, in one transaction under an exclusive lock of the group: it counts the other holders,
/// then releases this instance's lock. Two instances stopping together are thus decided one after the
/// other, and the last to decide sees no other member and keeps its subscriptions: never may all of them
/// hand over at once. When the database cannot be reached the answer is to keep them (nothing is lost,
/// the share only arrives late).
///
/// The connection is used by the keeper thread and by ``decideHandover()``, one at a time under `lock`,
/// hence `@unchecked Sendable`.
public final class ShareGroupMembership: @unchecked Sendable {
    /// The first key of the group's advisory locks ('outd'); the second is `hashtext(group)`.
    static let memberLockKey: Int32 = 0x6F75_7464
    /// The first key of the lock that serialises the group's handover decisions.
    static let decisionLockKey: Int32 = 0x6F75_7465

    private let group: String
    private let connectionString: String
    private let logger: Logger
    private let worker = WorkerThread(name: "outletd-membership")
    private let lock = NSLock()
    /// The connection holding the member lock; nil while there is none. Guarded by `lock`.
    private var connection: PostgresConnection?
    /// Set once the decision ran: the lock is not taken again.
    private var decided = false

    public init(group: String, connectionString: String, logger: Logger) {
        self.group = group
        self.connectionString = connectionString
        self.logger = logger
    }

    /// Takes the member lock on a thread of its own, and keeps it (reconnecting) until ``stop()``.
    public func start() {
        worker.start { [self] in keep() }
    }

    private func keep() {
        var backoff = Backoff(initial: 0.5, maximum: 10)
        while !worker.stopFlag.isSet {
            let healthy: Bool = lock.withLock {
                guard !decided else { return true }
                if let connection, (try? connection.execute("SELECT 1")) != nil { return true }
                connection?.close()
                connection = nil
                do {
                    let fresh = try PostgresConnection(
                        connectionString: connectionString, applicationName: "outletd-membership")
                    try fresh.execute(
                        "SELECT pg_advisory_lock_shared($1, hashtext($2))", [Self.memberLockKey, group])
                    connection = fresh
                    return true
                } catch {
                    logger.debug("share group membership not held; retrying", metadata: ["error": "\(error)"])
                    return false
                }
            }
            if healthy { backoff.reset() }
            worker.stopFlag.sleep(seconds: healthy ? 2 : backoff.nextDelay())
        }
        lock.withLock {
            connection?.close()
            connection = nil
        }
    }

    /// Whether this instance should hand its share over: true when another member of the group is running.
    /// Releases this instance's membership in the same transaction, so that a member deciding after it
    /// does not count it. Blocking (libpq): call it off the cooperative pool.
    public func decideHandover() -> Bool {
        lock.withLock {
            decided = true
            guard let connection else { return false }
            do {
                return try connection.transaction {
                    try connection.execute(
                        "SELECT pg_advisory_xact_lock($1, hashtext($2))", [Self.decisionLockKey, group])
                    let others = try connection.execute(
                        """
                        SELECT count(*) FROM pg_locks
                        WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
                          AND classid = $1::int4::oid AND objid = hashtext($2)::oid AND objsubid = 2
                        """, [Self.memberLockKey, group])
                    try connection.execute(
                        "SELECT pg_advisory_unlock_shared($1, hashtext($2))", [Self.memberLockKey, group])
                    return (try others.int64(row: 0, column: 0) ?? 0) > 0
                }
            } catch {
                logger.warning(
                    "cannot tell whether another member of the share group runs; keeping the subscriptions",
                    metadata: ["error": "\(error)"])
                return false
            }
        }
    }

    /// Ends the keeper thread and closes the connection (releasing the member lock if still held).
    public func stop() async {
        await worker.stop()
    }
}
