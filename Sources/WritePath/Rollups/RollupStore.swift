import Config
import Foundation
import Postgres

/// The rollups' settings in the database, retention, and `outletd rollup rebuild`.
///
/// Every call is blocking libpq: use it from a thread of its own (``MaintenanceTask``, the CLI) or
/// through ``Blocking/run(_:_:)``.
public struct RollupStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// The settings the SQL reads (`rollup_settings`).
    public struct Settings: Sendable, Equatable {
        /// IANA name of the zone of the day buckets.
        public var timeZone: String
        /// Longest gap between consecutive samples that still integrates energy, seconds.
        public var maxGapSeconds: Double

        public init(timeZone: String, maxGapSeconds: Double) {
            self.timeZone = timeZone
            self.maxGapSeconds = maxGapSeconds
        }

        public init(_ configuration: OutletdConfiguration) {
            self.init(timeZone: configuration.rollups.timeZone, maxGapSeconds: configuration.rollups.maxGapSeconds)
        }
    }

    /// The settings stored in the database.
    public func settings() throws -> Settings {
        let result = try connection.execute("SELECT time_zone, max_gap_seconds FROM rollup_settings")
        return Settings(timeZone: result[0, 0] ?? "UTC", maxGapSeconds: try result.double(row: 0, column: 1) ?? 600)
    }

    /// Stores `settings`; returns the previous ones when they differ (the rollups already stored
    /// were computed with those: `rollup rebuild` restates them). Fails when PostgreSQL does not
    /// know the time zone.
    @discardableResult
    public func store(_ settings: Settings) throws -> Settings? {
        _ = try connection.execute("SELECT now() AT TIME ZONE $1", [settings.timeZone])
        let previous = try self.settings()
        guard previous != settings else { return nil }
        try connection.execute(
            "UPDATE rollup_settings SET time_zone = $1, max_gap_seconds = $2",
            [settings.timeZone, settings.maxGapSeconds])
        return previous
    }

    /// Prepares the database for batches that do not maintain the rollups (`rollups.maintain:
    /// false`): every open bucket goes to its stored table, so that the tables hold all the
    /// rollups had. Those batches then drop the tails of their outlets and note from when the
    /// rollups miss samples (``unmaintainedSince()``); maintained batches later start each such
    /// outlet afresh from its next sample.
    public func stopMaintaining() throws {
        try connection.transaction {
            try connection.execute(
                """
                SELECT outletd_rollups_close(array_agg(device_id ORDER BY device_id)) FROM rollup_tails
                WHERE open_minute_start IS NOT NULL OR open_hour_start IS NOT NULL OR open_day_start IS NOT NULL
                HAVING count(*) > 0
                """)
        }
    }

    /// From when the rollups miss samples stored without rollup maintenance (the earliest reading
    /// or dropped tail of such a batch), rounded down to the second so that its RFC 3339 text, a
    /// `--since` for the rebuild, is not later. Nil when nothing is missing.
    public func unmaintainedSince() throws -> Date? {
        try connection.execute("SELECT date_trunc('second', unmaintained_since) FROM rollup_settings")
            .date(row: 0, column: 0)
    }

    /// After a rebuild of every outlet from `since`: forgets ``unmaintainedSince()`` when the
    /// rebuild covered it. Returns whether it did.
    @discardableResult
    public func rebuilt(since: Date) throws -> Bool {
        let result = try connection.execute(
            "UPDATE rollup_settings SET unmaintained_since = NULL WHERE unmaintained_since >= $1", [since])
        return (result.affectedRows ?? 0) > 0
    }

    /// What one maintenance pass did.
    public struct MaintenanceOutcome: Sendable, Equatable {
        public var partitionsCreated = 0
        public var partitionsDropped: [String] = []
        /// Partitions whose index was rebuilt packed (``packSettledPartitions(now:)``).
        public var partitionsPacked: [String] = []
        public var minuteRowsDeleted = 0
        public var hourlyRowsDeleted = 0
        public var dailyRowsDeleted = 0
    }

    /// Creates the partitions of `samples` from yesterday to `partitionsAheadDays` ahead, drops the
    /// partitions older than `rawDays`, packs the indexes of settled ones, and deletes rollups past their retention. `now` is a
    /// parameter so that tests can move time.
    public func maintain(_ retention: OutletdConfiguration.RetentionSettings, now: Date = Date()) throws
        -> MaintenanceOutcome
    {
        var outcome = MaintenanceOutcome()
        let today = Int32(clamping: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down)))
        let days = (today - 1...today + Int32(retention.partitionsAheadDays)).map { $0 }
        try connection.transaction {
            let created = try connection.execute("SELECT outletd_ensure_sample_partitions($1::integer[])", [days])
            outcome.partitionsCreated = try created.int(row: 0, column: 0) ?? 0
        }
        try connection.transaction {
            let dropped = try connection.execute(
                "SELECT outletd_drop_sample_partitions($1::timestamptz - make_interval(days => $2))",
                [now, Int32(retention.rawDays)])
            outcome.partitionsDropped = (0..<dropped.rowCount).compactMap { dropped[$0, 0] }
        }
        outcome.partitionsPacked = try packSettledPartitions(now: now)
        outcome.minuteRowsDeleted = try deleteOlder(.minute, retention.minuteRollupDays, now)
        outcome.hourlyRowsDeleted = try deleteOlder(.hourly, retention.hourlyRollupDays, now)
        outcome.dailyRowsDeleted = try deleteOlder(.daily, retention.dailyRollupDays, now)
        return outcome
    }

    /// A level of the rollups, and its retention's two statements: write the open buckets that old (of
    /// outlets silent since) to the stored table (`outletd_rollups_close`, which takes their rollup locks),
    /// then delete the stored rows older than `$2` days before `$1`.
    enum Level {
        case minute, hourly, daily

        var closeOpenBucketsSQL: String {
            switch self {
            case .minute:
                """
                SELECT outletd_rollups_close(array_agg(device_id ORDER BY device_id)) FROM rollup_tails
                WHERE open_minute_start < $1::timestamptz - make_interval(days => $2) HAVING count(*) > 0
                """
            case .hourly:
                """
                SELECT outletd_rollups_close(array_agg(device_id ORDER BY device_id)) FROM rollup_tails
                WHERE open_hour_start < $1::timestamptz - make_interval(days => $2) HAVING count(*) > 0
                """
            case .daily:
                """
                SELECT outletd_rollups_close(array_agg(device_id ORDER BY device_id)) FROM rollup_tails
                WHERE open_day_start < $1::timestamptz - make_interval(days => $2) HAVING count(*) > 0
                """
            }
        }

        var deleteStoredSQL: String {
            switch self {
            case .minute:
                "DELETE FROM power_rollups_minute_stored WHERE bucket_start < $1::timestamptz - make_interval(days => $2)"
            case .hourly:
                "DELETE FROM power_rollups_hourly_stored WHERE bucket_start < $1::timestamptz - make_interval(days => $2)"
            case .daily:
                "DELETE FROM power_rollups_daily_stored WHERE bucket_start < $1::timestamptz - make_interval(days => $2)"
            }
        }
    }

    /// Deletes the rollups of `level` whose bucket started more than `days` before `now`; 0 days keeps all.
    /// An open bucket that old (an outlet silent since) is closed first, so that it goes too.
    private func deleteOlder(_ level: Level, _ days: Int, _ now: Date) throws -> Int {
        guard days > 0 else { return 0 }
        let parameters: [(any PostgresBindable)?] = [now, Int32(days)]
        return try connection.transaction {
            try connection.execute(level.closeOpenBucketsSQL, parameters)
            return try connection.execute(level.deleteStoredSQL, parameters).affectedRows ?? 0
        }
    }

    /// One outlet's share of a rebuild.
    public struct RebuildTarget: Sendable, Equatable {
        public var deviceID: Int32
        public var code: String
        /// First minute recomputed: the later of `since` and the oldest raw partition.
        public var from: Date
        /// Just after the outlet's newest sample or minute rollup.
        public var until: Date
    }

    /// A rebuild asked for an outlet that is not registered.
    struct UnknownDevice: Error, Sendable, Equatable, CustomStringConvertible {
        var code: String
        var description: String { "no device \(code) is registered" }
    }

    /// ``rebuildTargets(since:code:)``'s query: $1 since, $2 one outlet's code or null. (`bounds` is materialized:
    /// a sub-select in samples_between's arguments would keep PostgreSQL from inlining it, and each outlet's call
    /// would be planned and run on its own, 12 ms instead of 0.01 ms an outlet.)
    static let rebuildTargetsSQL = """
        WITH bounds AS MATERIALIZED (
            SELECT date_trunc('minute', greatest($1::timestamptz, (SELECT min(starts_at) FROM sample_partitions)), 'UTC') AS from_at
        )
        SELECT d.id, d.code, b.from_at,
               greatest((SELECT max(measured_at) FROM samples_between(ARRAY[d.id], b.from_at, 'infinity')),
                        (SELECT max(bucket_start) FROM power_rollups_minute m
                         WHERE m.device_id = d.id AND m.bucket_start >= b.from_at)) + interval '1 minute'
        FROM devices d CROSS JOIN bounds b
        WHERE $2::text IS NULL OR d.code = $2
        ORDER BY d.code
        """

    /// Where a rebuild from `since` works, per outlet (one outlet when `code` is given). Raw
    /// samples older than the oldest partition are gone, so their minutes are left as they are.
    public func rebuildTargets(since: Date, code: String?) throws -> [RebuildTarget] {
        let result = try connection.execute(Self.rebuildTargetsSQL, [since, code])
        if let code, result.rowCount == 0 { throw UnknownDevice(code: code) }
        return try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0), let from = try result.date(row: row, column: 2) else {
                return nil
            }
            let until = try result.date(row: row, column: 3) ?? from
            return RebuildTarget(deviceID: Int32(id), code: result[row, 1] ?? "", from: from, until: until)
        }
    }

    /// Recomputes one outlet's rollups for minutes in `[from, until)`, one transaction per
    /// `chunkSeconds` (default a day), calling `progress` after each chunk with the chunk's end.
    /// Returns the number of minute buckets written.
    @discardableResult
    public func rebuild(
        _ target: RebuildTarget, chunkSeconds: Double = 86_400, progress: (Date, Int) -> Void = { _, _ in }
    )
        throws -> Int
    {
        var written = 0
        var chunkStart = target.from
        while chunkStart < target.until {
            let chunkEnd = min(target.until, chunkStart.addingTimeInterval(chunkSeconds))
            try connection.transaction {
                let result = try connection.execute(
                    "SELECT outletd_rollups_rebuild($1, $2, $3)", [target.deviceID, chunkStart, chunkEnd])
                written += try result.int(row: 0, column: 0) ?? 0
            }
            progress(chunkEnd, written)
            chunkStart = chunkEnd
        }
        return written
    }
}
