import Postgres

/// Where the primary's WAL is and how far its standbys have it, for `database.durability: replicated`: a batch's
/// spool records may go once a standby's `flush_lsn` covers the WAL position read just after its commit.
public struct ReplicationStatus: Sendable, Equatable {
    /// `pg_current_wal_lsn()`, as a byte position: at or past the end of every commit made before it was read.
    public var currentLSN: UInt64
    /// The most advanced physical standby's `flush_lsn`, nil when none is connected or its position is hidden.
    public var standbyFlushLSN: UInt64?
    /// Physical standbys connected (streaming or catching up).
    public var standbys: Int

    public init(currentLSN: UInt64, standbyFlushLSN: UInt64?, standbys: Int) {
        self.currentLSN = currentLSN
        self.standbyFlushLSN = standbyFlushLSN
        self.standbys = standbys
    }

    /// Bytes of WAL the most advanced standby has not flushed yet; nil without one.
    public var lagBytes: UInt64? {
        standbyFlushLSN.map { currentLSN > $0 ? currentLSN - $0 : 0 }
    }

    /// Physical standbys only: a logical walsender (a change-data-capture client) runs in a database, a physical one
    /// in none. Their positions are visible to superusers and members of `pg_read_all_stats` (`pg_monitor`);
    /// to others `flush_lsn` is NULL, which reads as "no position".
    static let query = """
        SELECT (pg_current_wal_lsn() - '0/0')::text,
               (max(r.flush_lsn) - '0/0')::text,
               count(r.pid)
        FROM (SELECT 1) one
        LEFT JOIN pg_stat_replication r
          ON r.pid IN (SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname IS NULL)
        """

    /// Reads it over `connection` (a connection to the primary: a standby has no current WAL position to write to).
    public static func read(_ connection: PostgresConnection) throws -> ReplicationStatus {
        let rows = try connection.execute(query, [])
        guard rows.rowCount == 1, let current = rows[0, 0].flatMap({ UInt64($0) }) else {
            throw PostgresError(code: .unexpectedResult, message: "pg_current_wal_lsn() gave no position")
        }
        let standbys = rows[0, 2].flatMap { Int($0) } ?? 0
        return ReplicationStatus(
            currentLSN: current, standbyFlushLSN: rows[0, 1].flatMap { UInt64($0) }, standbys: standbys)
    }
}
