import Foundation
import MessageSpool
import Postgres
import Telemetry

/// The SQL of the write path: one transaction per ``Batch``.
///
/// Samples are COPYed into a session-local staging table and moved with
/// `INSERT … ON CONFLICT DO NOTHING RETURNING`, and the running totals are updated from the rows
/// that statement really inserted — so replaying or repeating a message never counts twice.
/// The power rollups (minute, hour, day) are then brought up to date, in the same transaction, from
/// those rows (`BatchStore+Rollups.swift`, docs/ROLLUPS.md). The daily partitions of `samples` that the batch needs
/// are created first when missing. Rejections are counted by reason, a bounded sample of them
/// stored, unknown codes upserted into `pending_devices` (bounded too).
public struct BatchStore: Sendable {
    /// What a committed batch did.
    public struct Outcome: Sendable, Equatable {
        public var inserted: Int
        public var duplicates: Int
        /// Whether a first attempt failed because a minute the rollups closed already had a stored
        /// row (which should never happen, see ``shortWaySQL(checked:)``), and the batch was
        /// written again, merging into that row.
        public var rewrittenAfterMinuteConflict = false
    }

    public var keepRejectedMessages: Int
    public var pendingDevicesMax: Int
    /// Whether `write` maintains the power rollups (`rollups.maintain`). Without, a batch drops
    /// its outlets' tails and notes in `rollup_settings.unmaintained_since` from when the rollups
    /// miss samples, until `outletd rollup rebuild` (``noteUnmaintainedSQL``; call
    /// ``RollupStore/stopMaintaining()`` first).
    public let maintainsRollups: Bool

    public init(keepRejectedMessages: Int, pendingDevicesMax: Int, maintainsRollups: Bool = true) {
        self.keepRejectedMessages = keepRejectedMessages
        self.pendingDevicesMax = pendingDevicesMax
        self.maintainsRollups = maintainsRollups
    }

    /// Creates what a fresh connection needs: staging tables and prepared statements. Run after
    /// every (re)connect.
    public func prepareSession(_ connection: PostgresConnection) throws {
        // A full batch sorts tens of thousands of rows per statement: in memory, not in temp files.
        try connection.execute("SET work_mem = '64MB'")
        try createStagingTable(
            "outletd_staging_samples",
            """
            device_id        integer NOT NULL,
            measured_us      bigint NOT NULL,
            received_us      bigint NOT NULL,
            device_us        bigint,
            voltage_volts    double precision,
            current_amperes  double precision,
            power_watts      double precision NOT NULL,
            power_factor     double precision,
            energy_wh        double precision,
            seq              bigint
            """, connection)
        try createStagingTable(
            "outletd_inserted_devices",
            """
            device_id          integer NOT NULL,
            sample_count       bigint NOT NULL,
            first_measured_at  timestamptz NOT NULL
            """, connection)
        try createStagingTable(
            "outletd_staging_chains",
            """
            device_id         integer NOT NULL,
            sample_count      bigint NOT NULL,
            first_us          bigint NOT NULL,
            first_power_watts double precision NOT NULL,
            first_energy_wh   double precision,
            last_us           bigint NOT NULL,
            last_power_watts  double precision NOT NULL,
            last_energy_wh    double precision,
            head_us           bigint NOT NULL,
            \(Self.stagedMeasureColumns(prefix: "total_")),
            minute_count      bigint NOT NULL,
            first_minute_us   bigint NOT NULL,
            \(Self.stagedMeasureColumns(prefix: "first_minute_", nullable: true)),
            \(Self.stagedMeasureColumns(prefix: "head_", nullable: true))
            """, connection)
        try createStagingTable(
            "outletd_staging_minutes",
            """
            device_id  integer NOT NULL,
            bucket_us  bigint NOT NULL,
            \(Self.stagedMeasureColumns())
            """, connection)
        try connection.prepare(name: Statement.ensurePartitions, sql: Self.ensurePartitionsSQL)
        try connection.prepare(
            name: Statement.moveSamples, sql: Self.moveSamplesSQL(notingInsertedDevices: maintainsRollups))
        try connection.prepare(name: Statement.lockInserted, sql: Self.lockInsertedSQL)
        try connection.prepare(name: Statement.shortWay, sql: Self.shortWaySQL(checked: false))
        try connection.prepare(name: Statement.shortWayChecked, sql: Self.shortWaySQL(checked: true))
        try connection.prepare(name: Statement.shortWayAcrossHours, sql: Self.shortWayAcrossHoursSQL)
        try connection.prepare(name: Statement.mergeRollups, sql: Self.mergeRollupsSQL)
        try connection.prepare(name: Statement.recomputeRollups, sql: Self.recomputeRollupsSQL)
        try connection.prepare(name: Statement.refreshTails, sql: Self.refreshTailsSQL)
        try connection.prepare(name: Statement.noteUnmaintained, sql: Self.noteUnmaintainedSQL)
    }

    /// A session-local table (`columns`, one per line) whose rows live for one transaction.
    private func createStagingTable(_ name: String, _ columns: String, _ connection: PostgresConnection) throws {
        try connection.execute("CREATE TEMPORARY TABLE IF NOT EXISTS \(name) (\n\(columns)\n) ON COMMIT DELETE ROWS")
    }

    /// The measures ``RollupDeltas`` stages for a minute (and, `prefix`ed, for a chain's total,
    /// first and last minute) with their types, as the columns of a temp table:
    /// ``deltaMeasureNames``, in its COPY order. `nullable`: all may be NULL (a chain's first and
    /// last minute, which a chain of one minute leaves out).
    static func stagedMeasureColumns(prefix: String = "", nullable: Bool = false) -> String {
        deltaMeasureNames.map { name in
            let type = name == "sample_count" || name.hasSuffix("_us") ? "bigint" : "double precision"
            let required = !nullable && !name.hasSuffix("_volts")
            return "\(prefix)\(name) \(type)\(required ? " NOT NULL" : "")"
        }.joined(separator: ",\n")
    }

    enum Statement {
        static let ensurePartitions = "outletd_ensure_partitions"
        static let moveSamples = "outletd_move_samples"
        static let lockInserted = "outletd_lock_inserted"
        static let shortWay = "outletd_short_way"
        static let shortWayChecked = "outletd_short_way_checked"
        static let shortWayAcrossHours = "outletd_short_way_across_hours"
        static let mergeRollups = "outletd_merge_rollups"
        static let recomputeRollups = "outletd_recompute_rollups"
        static let refreshTails = "outletd_refresh_tails"
        static let noteUnmaintained = "outletd_note_unmaintained"
    }

    /// Writes the batch in one transaction, with `checkpoint` (the spool position just after the
    /// batch's last record) as `instanceID`'s row of `ingest_checkpoints`. Throws without
    /// committing anything on error.
    public func write(
        _ batch: Batch, to connection: PostgresConnection, checkpoint: (instanceID: String, SpoolCheckpoint)? = nil
    ) throws -> Outcome {
        do {
            return try write(batch, to: connection, checkpoint: checkpoint, checkingClosedMinutes: false)
        } catch let error as PostgresError where Self.isClosedMinuteConflict(error) {
            var outcome = try write(batch, to: connection, checkpoint: checkpoint, checkingClosedMinutes: true)
            outcome.rewrittenAfterMinuteConflict = true
            return outcome
        }
    }

    /// Whether `error` is the short way's plain insert of a closed minute finding a stored row.
    static func isClosedMinuteConflict(_ error: PostgresError) -> Bool {
        error.code == .queryFailed && error.sqlState == "23505"
            && error.constraintName == "power_rollups_minute_stored_pkey"
    }

    private func write(
        _ batch: Batch, to connection: PostgresConnection, checkpoint: (instanceID: String, SpoolCheckpoint)?,
        checkingClosedMinutes: Bool
    ) throws -> Outcome {
        try connection.transaction {
            var inserted = 0
            if !batch.samples.isEmpty {
                let begun = try connection.executePrepared(
                    name: Statement.ensurePartitions, [Self.utcDays(batch.samples)])
                var samples = CopyBinaryChunks(batch.samples[...], encode: Self.encode)
                try connection.copyIn(
                    """
                    COPY outletd_staging_samples (device_id, measured_us, received_us, device_us, voltage_volts,
                        current_amperes, power_watts, power_factor, energy_wh, seq) FROM STDIN (FORMAT binary)
                    """
                ) { samples.next() }
                // While PostgreSQL moves the samples, the writer computes the batch's rollup deltas
                // and encodes them for their COPY: its work and the server's overlap.
                var rollups: StagedRollups?
                let maxGapSeconds = try begun.double(row: 0, column: 1) ?? 0
                let moved = try connection.executePrepared(name: Statement.moveSamples) {
                    if maintainsRollups { rollups = StagedRollups(batch, maxGapSeconds: maxGapSeconds) }
                }
                inserted = try moved.int64(row: 0, column: 0).map(Int.init) ?? 0
                if inserted > 0, let rollups {
                    try updateRollups(rollups, checkingClosedMinutes: checkingClosedMinutes, connection)
                } else if inserted > 0, let earliest = batch.samples.lazy.map(\.reading.measuredAt).min() {
                    let outlets = Array(Set(batch.samples.map(\.deviceID)))
                    try connection.executePrepared(name: Statement.noteUnmaintained, [earliest, outlets])
                }
            }
            if !batch.rejectionCounts.isEmpty {
                try writeRejections(batch, connection)
            }
            if !batch.pending.isEmpty && pendingDevicesMax > 0 {
                try writePending(batch, connection)
            }
            if let (instanceID, checkpoint) = checkpoint {
                try Self.saveCheckpoint(checkpoint, of: instanceID, connection)
            }
            return Outcome(inserted: inserted, duplicates: batch.samples.count - inserted)
        }
    }

    static func saveCheckpoint(
        _ checkpoint: SpoolCheckpoint, of instanceID: String, _ connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO ingest_checkpoints AS c (instance_id, spool_id, segment_id, byte_offset)
            VALUES ($1, $2, $3, $4)
            ON CONFLICT (instance_id) DO UPDATE SET spool_id = excluded.spool_id, segment_id = excluded.segment_id,
                                                    byte_offset = excluded.byte_offset, updated_at = now()
            """,
            [
                instanceID, checkpoint.spoolID, Int64(bitPattern: checkpoint.position.segment),
                checkpoint.position.offset,
            ])
    }

    /// `instanceID`'s stored spool position, or nil before its first batch.
    public static func loadCheckpoint(of instanceID: String, _ connection: PostgresConnection) throws
        -> SpoolCheckpoint?
    {
        let rows = try connection.execute(
            "SELECT spool_id, segment_id, byte_offset FROM ingest_checkpoints WHERE instance_id = $1", [instanceID])
        guard rows.rowCount > 0, let spoolID = rows[0, 0], let segment = try rows.int64(row: 0, column: 1),
            let offset = try rows.int64(row: 0, column: 2), segment >= 0, offset >= 0
        else { return nil }
        return SpoolCheckpoint(
            spoolID: spoolID, position: SpoolPosition(segment: UInt64(segment), offset: offset))
    }

    /// 0001-01-01 to 9999-12-31 in microseconds since the Unix epoch.
    static let storableMicroseconds: ClosedRange<Int64> = -62_135_596_800_000_000...253_402_300_799_000_000

    /// The UTC days (since 1970-01-01) the samples fall on: the partitions of `samples` they need.
    static func utcDays(_ samples: [DeviceSample]) -> [Int32] {
        let days = Set(
            samples.map {
                Int32(clamping: Int64(($0.reading.measuredAt.timeIntervalSince1970 / 86_400).rounded(.down)))
            })
        return days.sorted()
    }

    /// The `timestamptz` of an expression in microseconds since 1970 (the staged rows' times).
    static func timestamp(_ microseconds: String) -> String {
        "timestamptz 'epoch' + \(microseconds) * interval '1 microsecond'"
    }

    /// For a batch stored without maintaining the rollups: drops the tails of its outlets (`$2`)
    /// and notes that the rollups miss samples from the earliest of its readings (`$1`) and of
    /// those tails. The segment from an outlet's tail to its next sample belongs to the tail's
    /// minute, so a rebuild from the note restates it; with the tail gone, a maintained batch
    /// later starts the outlet afresh instead of linking across samples the rollups never saw.
    /// The note is written only when it moves earlier, and once every outlet's tail is gone the
    /// delete finds nothing: a run of such batches costs little past its first.
    static let noteUnmaintainedSQL = """
        WITH dropped AS (
            DELETE FROM rollup_tails WHERE device_id = ANY ($2::integer[]) RETURNING measured_at
        ), earliest AS (
            SELECT least($1::timestamptz, (SELECT min(measured_at) FROM dropped)) AS at
        )
        UPDATE rollup_settings SET unmaintained_since = e.at FROM earliest e
        WHERE unmaintained_since IS NULL OR unmaintained_since > e.at
        """

    /// Creates the missing daily partitions of `samples` for the days in `$1`; returns, besides, the
    /// rollups' maximum gap (which the writer's rollup deltas need, computed while the samples move).
    static let ensurePartitionsSQL = """
        SELECT outletd_ensure_sample_partitions($1::integer[]), (SELECT max_gap_seconds FROM rollup_settings LIMIT 1)
        """

    /// A sample as a binary `COPY` row of `outletd_staging_samples`.
    static func encode(_ sample: DeviceSample, _ encoder: inout CopyBinaryEncoder) {
        let reading = sample.reading
        encoder.int32(sample.deviceID)
        encoder.microseconds(reading.measuredAt)
        encoder.microseconds(reading.receivedAt)
        // A device clock may claim any year; PostgreSQL stores years 1–9999 here (else NULL).
        encoder.int64(
            reading.deviceTime.map(CopyBinaryEncoder.microseconds).flatMap {
                Self.storableMicroseconds.contains($0) ? $0 : nil
            })
        encoder.double(reading.voltageVolts)
        encoder.double(reading.currentAmperes)
        encoder.double(reading.powerWatts)
        encoder.double(reading.powerFactor)
        encoder.double(reading.energyWattHours)
        encoder.int64(reading.sequence)
    }

    /// Moves staged samples into `samples`, skipping ones already there, adds the rows it really
    /// inserted to `device_power_totals` and (`notingInsertedDevices`, for the rollups) notes, per
    /// outlet, how many it inserted in `outletd_inserted_devices`. Returns the number inserted.
    /// Of two staged readings of one outlet at one time, the one received first is inserted (inside one
    /// message the decoder kept the first already), as a later message's reading finds the earlier stored.
    static func moveSamplesSQL(notingInsertedDevices: Bool) -> String {
        """
        WITH inserted AS (
            INSERT INTO samples (device_id, measured_at, received_at, device_time, voltage_volts, current_amperes,
                                 power_watts, power_factor, energy_wh, seq)
            SELECT device_id,
                   \(timestamp("measured_us")),
                   \(timestamp("received_us")),
                   \(timestamp("device_us")),
                   voltage_volts, current_amperes, power_watts, power_factor, energy_wh, seq
            FROM outletd_staging_samples
            ORDER BY device_id, measured_us, received_us
            ON CONFLICT (device_id, measured_at) DO NOTHING
            RETURNING device_id, measured_at, power_watts
        ), per_device AS (
            SELECT device_id,
                   count(*) AS sample_count,
                   sum(power_watts) AS power_sum_watts,
                   max(power_watts) AS peak_power_watts,
                   (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1] AS peak_at,
                   min(measured_at) AS first_measured_at,
                   max(measured_at) AS last_measured_at
            FROM inserted
            GROUP BY device_id
        ), totals AS (
            INSERT INTO device_power_totals AS t (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                                  first_measured_at, last_measured_at)
            SELECT device_id, sample_count, power_sum_watts, peak_power_watts, peak_at, first_measured_at,
                   last_measured_at
            FROM per_device
            ORDER BY device_id
            ON CONFLICT (device_id) DO UPDATE SET
                sample_count = t.sample_count + excluded.sample_count,
                power_sum_watts = t.power_sum_watts + excluded.power_sum_watts,
                peak_power_watts = GREATEST(t.peak_power_watts, excluded.peak_power_watts),
                peak_at = CASE
                    WHEN excluded.peak_power_watts > t.peak_power_watts
                      OR (excluded.peak_power_watts = t.peak_power_watts AND excluded.peak_at < t.peak_at)
                    THEN excluded.peak_at ELSE t.peak_at END,
                first_measured_at = LEAST(t.first_measured_at, excluded.first_measured_at),
                last_measured_at = GREATEST(t.last_measured_at, excluded.last_measured_at)
        )\(notingInsertedDevices ? Self.notingInsertedDevices : "")
        SELECT count(*) FROM inserted
        """
    }

    private static let notingInsertedDevices = """
        , noted AS (
            INSERT INTO outletd_inserted_devices (device_id, sample_count, first_measured_at)
            SELECT device_id, sample_count, first_measured_at FROM per_device
        )
        """

    private func writeRejections(_ batch: Batch, _ connection: PostgresConnection) throws {
        let reasons = batch.rejectionCounts.keys.sorted { $0.rawValue < $1.rawValue }
        let lastAt = batch.storedRejections.map(\.receivedAt).max() ?? Date()
        try connection.execute(
            """
            INSERT INTO rejection_counts AS r (reason, count, last_at)
            SELECT reason, count, $3 FROM unnest($1::text[], $2::bigint[]) AS c(reason, count)
            ON CONFLICT (reason) DO UPDATE SET count = r.count + excluded.count,
                                               last_at = GREATEST(r.last_at, excluded.last_at)
            """,
            [reasons.map(\.rawValue), reasons.map { Int64(batch.rejectionCounts[$0] ?? 0) }, lastAt])
        guard !batch.storedRejections.isEmpty && keepRejectedMessages > 0 else { return }
        let rejections = batch.storedRejections
        try connection.execute(
            """
            INSERT INTO rejected_messages (received_at, topic, device_code, reason, detail, reading_index,
                                           payload_excerpt)
            SELECT \(Self.timestamp("received_us")), topic, NULLIF(device_code, ''),
                   reason, detail, NULLIF(reading_index, -1), payload_excerpt
            FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[])
                 AS r(received_us, topic, device_code, reason, detail, reading_index, payload_excerpt)
            """,
            [
                rejections.map { CopyBinaryEncoder.microseconds($0.receivedAt) },
                rejections.map(\.topic),
                rejections.map { $0.deviceCode ?? "" },
                rejections.map(\.reason.rawValue),
                rejections.map(\.detail),
                rejections.map { Int32($0.index ?? -1) },
                batch.storedExcerpts,
            ])
        // Keep the newest `keepRejectedMessages` rows: the table stays bounded under any flood.
        try connection.execute(
            "DELETE FROM rejected_messages WHERE id <= (SELECT max(id) FROM rejected_messages) - $1",
            [Int64(keepRejectedMessages)])
    }

    private func writePending(_ batch: Batch, _ connection: PostgresConnection) throws {
        let codes = batch.pending.keys.sorted()
        let sightings = codes.compactMap { batch.pending[$0] }
        try connection.execute(
            """
            WITH incoming AS (
                SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[])
                       AS i(code, messages, first_us, last_us, topic)
            ), updated AS (
                UPDATE pending_devices p
                SET message_count = p.message_count + i.messages,
                    last_seen_at = GREATEST(p.last_seen_at, \(Self.timestamp("i.last_us"))),
                    last_topic = i.topic
                FROM incoming i
                WHERE p.code = i.code
                RETURNING p.code
            )
            INSERT INTO pending_devices AS p (code, first_seen_at, last_seen_at, message_count, last_topic)
            SELECT code, \(Self.timestamp("first_us")),
                   \(Self.timestamp("last_us")), messages, topic
            FROM incoming
            WHERE code NOT IN (SELECT code FROM updated)
            ORDER BY code
            LIMIT GREATEST(0, $6 - (SELECT count(*) FROM pending_devices))
            ON CONFLICT (code) DO UPDATE SET message_count = p.message_count + excluded.message_count,
                                             last_seen_at = GREATEST(p.last_seen_at, excluded.last_seen_at)
            """,
            [
                codes,
                sightings.map { Int64($0.messages) },
                sightings.map { CopyBinaryEncoder.microseconds($0.firstSeenAt) },
                sightings.map { CopyBinaryEncoder.microseconds($0.lastSeenAt) },
                sightings.map(\.lastTopic),
                Int64(pendingDevicesMax),
            ])
    }
}
