import Foundation
import Postgres

extension CompactionStore {
    /// How long the end of a pass waits for the partition before it gives way and tries again: while it waits for
    /// its lock, every newcomer to the partition waits behind it.
    static let finishLockTimeout = "500ms"
    static let finishAttempts = 40

    /// Ends a pass over `day` in one transaction: packs again the pending outlets that changed since their chunk,
    /// keeps aside the partition's readings that no pending row holds (outlets that cannot be packed, or that came
    /// after their chunk), makes the pending rows visible, truncates the partition and puts the kept readings back.
    /// Writers to the day wait (EXCLUSIVE) while readers go on; only the truncation itself, a moment, holds readers
    /// off (ACCESS EXCLUSIVE, taken with a short lock_timeout and retried, so that the wait never queues ingest
    /// behind it for long). Returns what the repacking added.
    func finish(day: String, table: String) throws -> Outcome {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try connection.transaction { try finishOnce(day: day, table: table) }
            } catch let error as PostgresError where error.sqlState == "55P03" && attempt < Self.finishAttempts {
                Thread.sleep(forTimeInterval: min(5, 0.1 * Double(attempt)))
            } catch let error as PostgresError where error.sqlState == "55P03" {
                throw CompactionError(
                    message: "compaction of \(day): the day's partition stayed busy (\(Self.finishAttempts) tries); "
                        + "its packed outlets wait, pending, for the next pass")
            }
        }
    }

    private func finishOnce(day: String, table: String) throws -> Outcome {
        var outcome = Outcome(day: day)
        try connection.execute("SET LOCAL lock_timeout = '\(Self.finishLockTimeout)'")
        try connection.execute("LOCK TABLE \(table) IN EXCLUSIVE MODE")
        let touched = try connection.execute(
            "SELECT device_id FROM samples_compact WHERE day = $1::date AND pending AND touched ORDER BY device_id",
            [day])
        for row in 0..<touched.rowCount {
            guard let id = try touched.int64(row: row, column: 0) else { continue }
            try connection.execute(
                "DELETE FROM samples_compact WHERE day = $1::date AND device_id = $2 AND pending", [day, id])
            let repacked = try pack(day: day, table: table, from: id, to: id + 1)
            outcome.readings += repacked.readings
            outcome.leftInRows += repacked.leftInRows
        }
        let pending = try connection.execute(
            "SELECT count(*) FROM samples_compact WHERE day = $1::date AND pending", [day])
        guard try pending.int(row: 0, column: 0) ?? 0 > 0 else { return outcome }
        // The outlets in the partition, one index probe each (a loose index scan), less those with a pending row.
        try connection.execute("CREATE TEMPORARY TABLE outletd_compaction_kept (LIKE \(table)) ON COMMIT DROP")
        try connection.execute(
            """
            INSERT INTO outletd_compaction_kept
            WITH RECURSIVE outlets (id) AS (
                SELECT min(device_id) FROM \(table)
                UNION ALL
                SELECT (SELECT min(device_id) FROM \(table) WHERE device_id > outlets.id) FROM outlets
                WHERE outlets.id IS NOT NULL
            )
            SELECT p.* FROM \(table) p
            WHERE p.device_id IN (SELECT id FROM outlets o WHERE id IS NOT NULL AND NOT EXISTS (
                                     SELECT 1 FROM samples_compact c
                                     WHERE c.device_id = o.id AND c.day = $1::date AND c.pending))
            """, [day])
        try connection.execute(
            "UPDATE samples_compact SET pending = false, touched = false WHERE day = $1::date AND pending", [day])
        try connection.execute("LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE")
        try connection.execute("TRUNCATE \(table)")
        try connection.execute(
            "INSERT INTO \(table) SELECT * FROM outletd_compaction_kept WHERE (SELECT outletd_compaction_checked())")
        return outcome
    }
}
