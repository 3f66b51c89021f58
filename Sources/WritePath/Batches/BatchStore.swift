import Foundation
import MessageSpool
import Postgres
import Synchronization
import Telemetry

/// The SQL of the write path: one transaction per ``Batch``.
///
/// Samples are COPYed straight into `samples`, by outlet then time, under a savepoint, with what each outlet's
/// samples add to its running totals beside them; when one of them is stored already (a replay: unique_violation),
/// or two of an outlet share a time, the batch goes the careful way instead: COPYed into a session-local staging
/// table and moved with `INSERT … ON CONFLICT DO NOTHING RETURNING`, which notes what it really inserted. The
/// running totals are updated from the rows really inserted — so replaying or repeating a message never counts
/// twice. The power rollups (minute, hour, day) are then brought up to date, in the same transaction, from
/// those rows (`BatchStore+Rollups.swift`, docs/ROLLUPS.md). The daily partitions of `samples` that the batch needs
/// are created first when missing. Rejections are counted by reason, a bounded sample of them
/// stored, unknown codes upserted into `pending_devices` (bounded too).
public struct BatchStore: Sendable {
    /// What a committed batch did.
    public struct Outcome: Sendable, Equatable {
        public var inserted: Int
        public var duplicates: Int
        /// Whether a first attempt failed because a minute the rollups closed already had a stored
        /// row (which should never happen, see sql/write/short_way.sql), and the batch was
        /// written again, merging into that row.
        public var rewrittenAfterMinuteConflict = false
    }

    /// What a batch's transaction stores as its instance's row of `ingest_checkpoints`: the spool position just
    /// after the batch's last record, and how long its oldest message waited (`batch_wait_seconds`, which
    /// compaction reads to give way to ingest: docs/COMPACTION.md).
    public struct Checkpoint: Sendable {
        public var instanceID: String
        public var spool: SpoolCheckpoint
        /// When the batch's oldest message was received; nil stores no wait.
        public var oldestReceivedAt: Date?

        public init(instanceID: String, spool: SpoolCheckpoint, oldestReceivedAt: Date? = nil) {
            self.instanceID = instanceID
            self.spool = spool
            self.oldestReceivedAt = oldestReceivedAt
        }
    }

    public var keepRejectedMessages: Int
    public var pendingDevicesMax: Int
    /// Whether `write` maintains the power rollups (`rollups.maintain`). Without, a batch drops
    /// its outlets' tails and notes in `rollup_settings.unmaintained_since` from when the rollups
    /// miss samples, until `outletd rollup rebuild` (sql/write/note_unmaintained.sql; call
    /// ``RollupStore/stopMaintaining()`` first).
    public let maintainsRollups: Bool
    /// Whether a batch met a stored sample lately (see `insertSamples`): shared by the copies of this store.
    private let duplicates = RecentDuplicates()

    public init(keepRejectedMessages: Int, pendingDevicesMax: Int, maintainsRollups: Bool = true) {
        self.keepRejectedMessages = keepRejectedMessages
        self.pendingDevicesMax = pendingDevicesMax
        self.maintainsRollups = maintainsRollups
    }

    /// Creates what a fresh connection needs: staging tables and prepared statements
    /// (sql/write/session.sql and the statements of sql/write/). Run after every (re)connect.
    public func prepareSession(_ connection: PostgresConnection) throws {
        try connection.execute(WriteSQL.session)
        let statements = [
            (Statement.ensurePartitions, WriteSQL.ensurePartitions),
            (Statement.moveSamples, WriteSQL.moveSamples),
            (Statement.addTotals, WriteSQL.addTotals),
            (Statement.addTotalsByKey, Self.addTotalsByKey),
            (Statement.lockInserted, WriteSQL.lockInserted),
            (Statement.shortWay, WriteSQL.shortWay),
            (Statement.shortWayAcrossHours, WriteSQL.shortWayAcrossHours),
            (Statement.mergeRollups, WriteSQL.mergeRollups),
            (Statement.recomputeRollups, WriteSQL.recomputeRollups),
            (Statement.refreshTails, WriteSQL.refreshTails),
            (Statement.noteUnmaintained, WriteSQL.noteUnmaintained),
        ]
        for (name, sql) in statements { try connection.prepare(name: name, sql: sql) }
    }

    enum Statement {
        static let ensurePartitions = "outletd_ensure_partitions"
        static let moveSamples = "outletd_move_samples"
        static let addTotals = "outletd_add_totals"
        static let addTotalsByKey = "outletd_add_totals_by_key"
        static let lockInserted = "outletd_lock_inserted"
        static let shortWay = "outletd_short_way"
        static let shortWayAcrossHours = "outletd_short_way_across_hours"
        static let mergeRollups = "outletd_merge_rollups"
        static let recomputeRollups = "outletd_recompute_rollups"
        static let refreshTails = "outletd_refresh_tails"
        static let noteUnmaintained = "outletd_note_unmaintained"
    }

    /// Writes the batch in one transaction, with `checkpoint` as its instance's row of `ingest_checkpoints`.
    /// Throws without committing anything on error.
    public func write(
        _ batch: Batch, to connection: PostgresConnection, checkpoint: Checkpoint? = nil
    ) throws -> Outcome {
        do {
            return try write(batch, to: connection, checkpoint: checkpoint, shortWays: true)
        } catch let error as PostgresError where Self.isClosedMinuteConflict(error) {
            var outcome = try write(batch, to: connection, checkpoint: checkpoint, shortWays: false)
            outcome.rewrittenAfterMinuteConflict = true
            return outcome
        }
    }

    /// add_totals.sql with its line marked `by key:` in: the outlets' ids as an array beside the join's condition,
    /// which PostgreSQL answers with an index probe per outlet instead of hashing every outlet's totals.
    static let addTotalsByKey = WriteSQL.addTotals.replacingOccurrences(of: "-- by key: ", with: "")

    /// Whether a batch of `batchOutlets` outlets adds to the running totals by key (``addTotalsByKey``) rather
    /// than by a join that hashes every outlet's totals (add_totals.sql): when it holds at most a third of the
    /// `outletsWithTotals` (the statistics' count, negative when not counted yet). Measured on 18,000 outlets,
    /// by key is faster up to about 40 % of them (docs/PERFORMANCE.md, "Design decisions the figures led to").
    static func findsTotalsByKey(batchOutlets: Int, outletsWithTotals: Double) -> Bool {
        outletsWithTotals > 0 && Double(batchOutlets) * 3 <= outletsWithTotals
    }

    /// Whether `error` is the short way's plain insert of a closed minute finding a stored row.
    static func isClosedMinuteConflict(_ error: PostgresError) -> Bool {
        error.code == .queryFailed && error.sqlState == "23505"
            && error.constraintName == "power_rollups_minute_stored_pkey"
    }

    private func write(
        _ batch: Batch, to connection: PostgresConnection, checkpoint: Checkpoint?, shortWays: Bool
    ) throws -> Outcome {
        try connection.transaction {
            var inserted = 0
            if !batch.samples.isEmpty {
                let order = SampleOrder(batch.samples)
                let begun = try connection.executePrepared(
                    name: Statement.ensurePartitions, [Self.utcDays(batch.samples)])
                let maxGapSeconds = try begun.double(row: 0, column: 1) ?? 0
                let outletsWithTotals = try begun.double(row: 0, column: 2) ?? -1
                let staged: Bool
                (inserted, staged) = try insertSamples(batch.samples, order, connection)
                // The outlets' rollup locks, before their totals: two writers never wait for each other in a circle.
                try connection.executePrepared(name: Statement.lockInserted)
                // While PostgreSQL adds to the totals, the writer computes the batch's rollup deltas: its work
                // and the server's overlap.
                var rollups: StagedRollups?
                let addTotals =
                    Self.findsTotalsByKey(batchOutlets: order.outletCount, outletsWithTotals: outletsWithTotals)
                    ? Statement.addTotalsByKey : Statement.addTotals
                try connection.executePrepared(name: addTotals) {
                    if maintainsRollups && inserted > 0 {
                        rollups = StagedRollups(batch, order: order, maxGapSeconds: maxGapSeconds)
                    }
                }
                if let rollups {
                    // The outlets recomputed from the raw samples are read from the staging table.
                    let stageSamples = {
                        if !staged { try Self.copy(batch.samples, order, WriteSQL.stageSamples, connection) }
                    }
                    try updateRollups(rollups, shortWays: shortWays, stagingSamples: stageSamples, connection)
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
            if let checkpoint {
                try Self.saveCheckpoint(checkpoint, connection)
            }
            return Outcome(inserted: inserted, duplicates: batch.samples.count - inserted)
        }
    }

    /// Inserts the batch's samples into `samples` and notes per outlet what they add to its totals
    /// (`outletd_inserted_devices`). Returns how many it inserted, and whether the batch is in the staging table.
    ///
    /// Straight into `samples` first (sql/write/copy_samples.sql), under a savepoint, unless two samples of an
    /// outlet share a time or a batch met a stored sample lately; when one is stored already (unique_violation),
    /// the batch goes the careful way: into the staging table, and from there with ON CONFLICT DO NOTHING
    /// (sql/write/move_samples.sql), and so do the next batches for a while.
    private func insertSamples(_ samples: [DeviceSample], _ order: SampleOrder, _ connection: PostgresConnection)
        throws -> (inserted: Int, staged: Bool)
    {
        if !order.hasRepeatedTimes && duplicates.expectsNone() {
            try connection.execute("SAVEPOINT outletd_insert")
            var inserted: Int?
            do {
                inserted = try Self.copy(samples, order, WriteSQL.copySamples, connection, encode: StoredSample.encode)
                try connection.execute("RELEASE SAVEPOINT outletd_insert")
            } catch let error as PostgresError where error.code == .queryFailed && error.sqlState == "23505" {
                try connection.execute("ROLLBACK TO SAVEPOINT outletd_insert")
                duplicates.met()
            }
            if let inserted {
                var totals = CopyBinaryChunks(order.outletTotals(of: samples)[...], encode: OutletTotals.encode)
                try connection.copyIn(WriteSQL.copyInsertedDevices) { totals.next() }
                return (inserted, false)
            }
        }
        try Self.copy(samples, order, WriteSQL.stageSamples, connection)
        let moved = try connection.executePrepared(name: Statement.moveSamples)
        return (try moved.int64(row: 0, column: 0).map(Int.init) ?? 0, true)
    }

    /// COPYs the samples, in `order`, with `sql` (copy_samples.sql with `StoredSample.encode`, or stage_samples.sql
    /// with `encode`); returns how many.
    @discardableResult
    static func copy(
        _ samples: [DeviceSample], _ order: SampleOrder, _ sql: String, _ connection: PostgresConnection,
        encode: @escaping (DeviceSample, inout CopyBinaryEncoder) -> Void = encode
    ) throws -> Int {
        var rows = CopyBinaryChunks(order.keys[...]) { key, encoder in encode(samples[Int(key.index)], &encoder) }
        return try connection.copyIn(sql) { rows.next() }
    }

    static func saveCheckpoint(_ checkpoint: Checkpoint, _ connection: PostgresConnection) throws {
        let position = checkpoint.spool.position
        try connection.execute(
            """
            INSERT INTO ingest_checkpoints AS c (instance_id, spool_id, segment_id, byte_offset, batch_wait_seconds)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (instance_id) DO UPDATE SET spool_id = excluded.spool_id, segment_id = excluded.segment_id,
                                                    byte_offset = excluded.byte_offset, updated_at = now(),
                                                    batch_wait_seconds = excluded.batch_wait_seconds
            """,
            [
                checkpoint.instanceID, checkpoint.spool.spoolID, Int64(bitPattern: position.segment), position.offset,
                checkpoint.oldestReceivedAt.map { max(0, Date().timeIntervalSince($0)) },
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

    /// A sample as a binary `COPY` row of `outletd_staging_samples` (the columns of the view `samples`).
    static func encode(_ sample: DeviceSample, _ encoder: inout CopyBinaryEncoder) {
        let reading = sample.reading
        encoder.int32(sample.deviceID)
        encoder.timestamp(reading.measuredAt)
        encoder.timestamp(reading.receivedAt)
        // A device clock may claim any year; PostgreSQL stores years 1–9999 here (else NULL).
        if let deviceTime = reading.deviceTime.map(CopyBinaryEncoder.microseconds),
            Self.storableMicroseconds.contains(deviceTime)
        {
            encoder.timestamp(microseconds: deviceTime)
        } else {
            encoder.null()
        }
        encoder.double(reading.voltageVolts)
        encoder.double(reading.currentAmperes)
        encoder.double(reading.powerWatts)
        encoder.double(reading.powerFactor)
        encoder.double(reading.energyWattHours)
        encoder.int64(reading.sequence)
    }

    private func writeRejections(_ batch: Batch, _ connection: PostgresConnection) throws {
        let reasons = batch.rejectionCounts.keys.sorted { $0.rawValue < $1.rawValue }
        let lastAt = batch.storedRejections.map(\.receivedAt).max() ?? Date()
        try connection.execute(
            WriteSQL.countRejections,
            [reasons.map(\.rawValue), reasons.map { Int64(batch.rejectionCounts[$0] ?? 0) }, lastAt])
        guard !batch.storedRejections.isEmpty && keepRejectedMessages > 0 else { return }
        let rejections = batch.storedRejections
        try connection.execute(
            WriteSQL.storeRejections,
            [
                rejections.map { CopyBinaryEncoder.microseconds($0.receivedAt) },
                rejections.map(\.topic),
                rejections.map { $0.deviceCode ?? "" },
                rejections.map(\.reason.rawValue),
                rejections.map(\.detail),
                rejections.map { Int32($0.index ?? -1) },
                batch.storedExcerpts,
            ])
        try connection.execute(WriteSQL.trimRejections, [Int64(keepRejectedMessages)])
    }

    private func writePending(_ batch: Batch, _ connection: PostgresConnection) throws {
        let codes = batch.pending.keys.sorted()
        let sightings = codes.compactMap { batch.pending[$0] }
        try connection.execute(
            WriteSQL.countPending,
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

/// How many more batches are moved with ON CONFLICT DO NOTHING straight away, since one met a stored sample:
/// a fleet that repeats readings does not pay for a failed plain insert in every batch.
final class RecentDuplicates: Sendable {
    /// Batches moved the careful way after one that met a duplicate.
    static let carefulBatches = 100
    private let remaining = Mutex(0)

    /// Whether the next batch tries the plain insert (counting down the careful batches).
    func expectsNone() -> Bool {
        remaining.withLock { remaining in
            guard remaining > 0 else { return true }
            remaining -= 1
            return false
        }
    }

    func met() { remaining.withLock { $0 = Self.carefulBatches } }
}
