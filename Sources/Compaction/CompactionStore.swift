import Foundation
import Postgres
import Runtime

/// The SQL of compaction (sql/0026_compact_days.sql and sql/0032_compaction_pass.sql hold the schema): which days
/// are due, one day compacted chunk by chunk of outlets, one day expanded, and what each day holds. Blocking (libpq):
/// a ``DatabaseWorker``'s thread or the CLI runs it.
///
/// A pass never deletes from the day's partition row by row: in a day written as ingest writes it, a chunk's outlets
/// have readings on a large share of its pages, and the full-page images of the pages a delete dirties go into the
/// WAL that ingest's commits wait for. Each chunk of outlets, in one transaction that locks the partition against
/// writes (SHARE: a late reading of that day waits for the chunk; readers do not), reads the chunk's readings and
/// writes one *pending* `samples_compact` row per outlet, which no reader reads. The pass ends in one transaction
/// (``finish(day:table:)``) that makes them visible and truncates the partition, keeping the readings no pending row
/// holds. A reading that reaches a pending outlet-day meanwhile marks its row touched (the partition's guard
/// trigger); the end packs that outlet again. A crash or `kill -9` at any point leaves every reading readable once:
/// pending rows are not read, and the next pass goes on from them. The guard also refuses a reading already in a
/// visible compact row, so a retransmission after the pass is still a duplicate. Instances take a session advisory
/// lock per day (``AdvisoryLock/compaction``), so no two compact the same day at once.
public struct CompactionStore {
    let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// What compacting one day did.
    public struct Outcome: Equatable, Sendable {
        public var day: String
        /// Another instance holds the day's lock: nothing was done.
        public var skipped = false
        public var outlets = 0
        public var readings = 0
        /// Outlet-days left in row form because they cannot be packed (a device time centuries away).
        public var leftInRows = 0
        public var seconds = 0.0
    }

    /// Days due: their partition's day ended at least `afterHours` before `now`, and it has readings in row form
    /// (never compacted, or late readings since). Oldest first.
    public func daysDue(afterHours: Int, now: Date = Date()) throws -> [String] {
        let partitions = try connection.execute(
            """
            SELECT to_char(day, 'YYYY-MM-DD'), format('%I.%I', schema_name, partition_name) FROM sample_partitions
            WHERE starts_at + interval '1 day' + make_interval(hours => $2) <= $1::timestamptz ORDER BY day
            """, [now, Int32(clamping: afterHours)])
        var due: [String] = []
        for row in 0..<partitions.rowCount {
            guard let day = partitions[row, 0], let table = partitions[row, 1] else { continue }
            let rows = try connection.execute("SELECT EXISTS (SELECT 1 FROM \(table))")
            if try rows.bool(row: 0, column: 0) == true { due.append(day) }
        }
        return due
    }

    /// How long ingest's batches waited, seconds: the longest `batch_wait_seconds` of the instances whose writer
    /// committed a batch in the last `recentSeconds` (0 when none did). ``CompactionPacer`` waits while it is high.
    public func ingestWait(recentSeconds: Double = 10) throws -> Double {
        let rows = try connection.execute(
            """
            SELECT coalesce(max(batch_wait_seconds), 0) FROM ingest_checkpoints
            WHERE updated_at > now() - make_interval(secs => $1)
            """, [recentSeconds])
        return try rows.double(row: 0, column: 0) ?? 0
    }

    /// Compacts `day` (`YYYY-MM-DD`), `chunkOutlets` outlet ids a transaction; `pause` is called between chunks
    /// with how long the chunk took (the task rests there: ``CompactionPacer``), `resize` with the last chunk's
    /// outlet ids and how long it took, for the next chunk's (by default, the same).
    public func compact(
        day: String, chunkOutlets: Int = 64, pause: (Double) throws -> Void = { _ in },
        resize: (Int, Double) -> Int = { outlets, _ in outlets }, progress: (Outcome) -> Void = { _ in }
    ) throws -> Outcome {
        let started = Date()
        var outcome = Outcome(day: day)
        let table = try partition(day)
        let dayNumber = try dayNumber(day)
        guard
            try connection.execute("SELECT pg_try_advisory_lock($1, $2)", [AdvisoryLock.compaction, dayNumber])
                .bool(row: 0, column: 0) == true
        else {
            outcome.skipped = true
            return outcome
        }
        defer {
            _ = try? connection.execute("SELECT pg_advisory_unlock($1, $2)", [AdvisoryLock.compaction, dayNumber])
        }
        try installGuard(table)
        let bounds = try connection.execute(
            """
            SELECT least((SELECT min(device_id) FROM \(table)), (SELECT min(device_id) FROM samples_compact
                                                                  WHERE day = $1::date)),
                   greatest((SELECT max(device_id) FROM \(table)), (SELECT max(device_id) FROM samples_compact
                                                                     WHERE day = $1::date))
            """, [day])
        if let low = try bounds.int64(row: 0, column: 0), let high = try bounds.int64(row: 0, column: 1) {
            var step = Int64(max(1, chunkOutlets))
            var from = low
            while from <= high {
                let chunkStarted = Date()
                let chunk = try compactChunk(day: day, table: table, from: from, to: from + step)
                outcome.outlets += chunk.outlets
                outcome.readings += chunk.readings
                outcome.leftInRows += chunk.leftInRows
                progress(outcome)
                from += step
                if chunk.readings > 0 {
                    let busy = Date().timeIntervalSince(chunkStarted)
                    step = Int64(max(1, resize(Int(step), busy)))
                    try pause(busy)
                }
            }
        }
        let finished = try finish(day: day, table: table)
        outcome.outlets += finished.outlets
        outcome.readings += finished.readings
        outcome.leftInRows += finished.leftInRows
        outcome.seconds = Date().timeIntervalSince(started)
        try connection.execute(
            """
            INSERT INTO compacted_days (day, compacted_at, readings, outlets, seconds)
            SELECT $1::date, now(), coalesce(sum(readings), 0), count(*), $2 FROM samples_compact
            WHERE day = $1::date AND NOT pending
            ON CONFLICT (day) DO UPDATE
            SET compacted_at = excluded.compacted_at, readings = excluded.readings, outlets = excluded.outlets,
                seconds = excluded.seconds
            """, [day, outcome.seconds])
        // What late readings of outlet-days compacted before left behind (their rows deleted when folded in).
        try connection.execute("VACUUM \(table)")
        return outcome
    }

    /// One chunk of outlets, [from, to), in one transaction.
    private func compactChunk(day: String, table: String, from: Int64, to: Int64) throws -> Outcome {
        try connection.transaction {
            try connection.execute("LOCK TABLE \(table) IN SHARE MODE")
            return try pack(day: day, table: table, from: from, to: to)
        }
    }

    /// Packs the outlets in [from, to) that have readings in row form and no pending row (a pass cut short left
    /// those): an outlet-day compacted before gets its visible row again, with the late readings folded in and
    /// deleted from the partition (they are few); any other gets a pending row. In the caller's transaction, with the
    /// partition locked against writes.
    func pack(day: String, table: String, from: Int64, to: Int64) throws -> Outcome {
        var outcome = Outcome(day: day)
        let compacted = try connection.execute(
            """
            SELECT device_id, pending FROM samples_compact
            WHERE day = $1::date AND device_id >= $2 AND device_id < $3
            """, [day, from, to])
        var pendingIDs: [Int32] = []
        var visible = Set<Int64>()
        for row in 0..<compacted.rowCount {
            let id = try compacted.int64(row: row, column: 0) ?? 0
            if try compacted.bool(row: row, column: 1) == true {
                pendingIDs.append(Int32(clamping: id))
            } else {
                visible.insert(id)
            }
        }
        let rowForm = try connection.execute(
            """
            SELECT EXISTS (SELECT 1 FROM \(table)
                           WHERE device_id >= $1 AND device_id < $2 AND device_id <> ALL ($3::integer[]))
            """, [from, to, pendingIDs])
        guard try rowForm.bool(row: 0, column: 0) == true else { return outcome }
        // A chunk of many outlets reads the day in its physical order (one sequential scan, sorted by outlet by the
        // server), not an index scan per outlet: in a day written as ingest writes it, the chunk's readings lie on a
        // large share of the day's pages, which an index scan visits at random, again for every chunk, and from disk
        // once the day has left the cache. The rows come through a cursor, an outlet at a time in memory.
        let sequential = to - from > Self.indexScanOutlets
        if sequential {
            try connection.execute("SET LOCAL enable_indexscan = off")
            try connection.execute("SET LOCAL enable_bitmapscan = off")
            try connection.execute("SET LOCAL work_mem = '\(Self.sortMemory)'")
        }
        try connection.execute(
            "DECLARE outletd_compaction_chunk NO SCROLL CURSOR FOR "
                + (try Self.readChunk(day: day, from: from, to: to, excluded: pendingIDs)))
        if sequential {
            // Planned: what follows in the transaction may use indexes again (the sort's memory holds until commit,
            // as the cursor's sort takes it at its first fetch).
            try connection.execute("SET LOCAL enable_indexscan TO DEFAULT")
            try connection.execute("SET LOCAL enable_bitmapscan TO DEFAULT")
        }
        var blocks: [(device: Int64, day: CompactDay)] = []
        var readings: [CompactReading] = []
        var device: Int64?
        func flush() {
            guard let current = device else { return }
            if let packed = CompactDay(readings) {
                blocks.append((current, packed))
                outcome.readings += readings.count
            } else {
                outcome.leftInRows += 1
            }
            readings.removeAll(keepingCapacity: true)
        }
        while true {
            let rows = try connection.execute("FETCH \(Self.fetchRows) FROM outletd_compaction_chunk")
            guard rows.rowCount > 0 else { break }
            for row in 0..<rows.rowCount {
                let id = try rows.int64(row: row, column: 0) ?? 0
                if id != device {
                    flush()
                    device = id
                }
                readings.append(try Self.reading(rows, row))
            }
        }
        flush()
        try connection.execute("CLOSE outletd_compaction_chunk")
        outcome.outlets = blocks.count
        guard !blocks.isEmpty else { return outcome }
        let folded = blocks.filter { visible.contains($0.device) }.map { Int32(clamping: $0.device) }
        if !folded.isEmpty {
            try connection.execute(
                "DELETE FROM samples_compact WHERE day = $1::date AND device_id = ANY ($2::integer[])", [day, folded])
        }
        var text = ""
        for block in blocks {
            text += Self.copyLine(
                device: block.device, day: day, block.day, pending: !visible.contains(block.device))
        }
        _ = try connection.copyIn(Self.copyBlocks, data: Array(text.utf8))
        if !folded.isEmpty {
            try connection.execute("DELETE FROM \(table) WHERE device_id = ANY ($1::integer[])", [folded])
        }
        return outcome
    }

    /// Takes `day` back to row form (all its outlets); returns how many readings.
    public func expand(day: String) throws -> Int {
        let table = try partition(day)
        let dayNumber = try dayNumber(day)
        try connection.execute("SELECT pg_advisory_lock($1, $2)", [AdvisoryLock.compaction, dayNumber])
        defer {
            _ = try? connection.execute("SELECT pg_advisory_unlock($1, $2)", [AdvisoryLock.compaction, dayNumber])
        }
        return try connection.transaction {
            try connection.execute("LOCK TABLE \(table) IN SHARE ROW EXCLUSIVE MODE")
            try connection.execute("DROP TRIGGER IF EXISTS samples_compacted_guard ON \(table)")
            let expanded = try connection.execute("SELECT outletd_expand_outlet_day(NULL, $1::date)", [day])
            try connection.execute("DELETE FROM compacted_days WHERE day = $1::date", [day])
            return try expanded.int(row: 0, column: 0) ?? 0
        }
    }

    /// One day as `outletd storage status` lists it.
    public struct DayStatus: Equatable, Sendable {
        public var day: String
        /// Readings in row form (the planner's estimate after VACUUM/ANALYZE: exact enough to plan with).
        public var rowReadings: Int64
        public var rowBytes: Int64
        public var compactReadings: Int64
        public var compactBytes: Int64
        public var compactedAt: Date?
        /// Readings packed by a pass not finished (still read from the row form, counted in rowReadings).
        public var pendingReadings: Int64 = 0

        public var form: String {
            switch (compactReadings > 0, rowReadings > 0) {
            case _ where pendingReadings > 0: "compacting"
            case (true, true): "compact+rows"
            case (true, false): "compact"
            case (false, _): "rows"
            }
        }
    }

    /// Every day with a partition, oldest first. Compact bytes are the day's share of `samples_compact` with its
    /// TOAST table and index, by its rows' stored (compressed) column sizes (a pass not finished: its pending rows').
    public func status() throws -> [DayStatus] {
        let result = try connection.execute(
            """
            WITH compact AS (
                SELECT day, sum(readings) FILTER (WHERE NOT pending) AS readings,
                       sum(readings) FILTER (WHERE pending) AS pending,
                       sum(pg_column_size(measured_at) + pg_column_size(received_at) + pg_column_size(device_time)
                           + pg_column_size(voltage) + pg_column_size(current) + pg_column_size(power)
                           + pg_column_size(power_factor) + pg_column_size(energy) + pg_column_size(seq)) AS columns
                FROM samples_compact GROUP BY day
            ), total AS (
                SELECT sum(columns) AS columns, pg_total_relation_size('samples_compact') AS bytes FROM compact
            )
            SELECT to_char(p.day, 'YYYY-MM-DD'),
                   greatest(c.reltuples, 0)::bigint,
                   pg_total_relation_size(c.oid),
                   coalesce(k.readings, 0),
                   coalesce(round(k.columns * t.bytes / nullif(t.columns, 0)), 0)::bigint,
                   d.compacted_at,
                   coalesce(k.pending, 0)
            FROM sample_partitions p
            JOIN pg_class c ON c.relname = p.partition_name
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = p.schema_name
            LEFT JOIN compact k ON k.day = p.day
            LEFT JOIN compacted_days d ON d.day = p.day
            CROSS JOIN total t
            ORDER BY p.day
            """)
        return try (0..<result.rowCount).map { row in
            DayStatus(
                day: result[row, 0] ?? "", rowReadings: try result.int64(row: row, column: 1) ?? 0,
                rowBytes: try result.int64(row: row, column: 2) ?? 0,
                compactReadings: try result.int64(row: row, column: 3) ?? 0,
                compactBytes: try result.int64(row: row, column: 4) ?? 0,
                compactedAt: try result.date(row: row, column: 5),
                pendingReadings: try result.int64(row: row, column: 6) ?? 0)
        }
    }

    // MARK: SQL

    /// A chunk's readings in both forms (row form and this day's visible compact rows, to fold late readings in), by
    /// outlet and time, but for the outlets in $4 (pending already); the times in microseconds as ``CompactReading``
    /// has them.
    /// Chunks of at most this many outlet ids read through the primary key's index; larger ones read the day in order.
    public static let indexScanOutlets: Int64 = 32
    /// The server's sort memory for a chunk read in order (beyond it the sort goes to temporary files).
    static let sortMemory = "1GB"
    static let fetchRows = 50_000

    /// A chunk's readings in both forms (row form and this day's visible compact rows, to fold late readings in), by
    /// outlet and time, but for the outlets in `excluded` (pending already); the times in microseconds as
    /// ``CompactReading`` has them. The values are written into the text (a cursor's query takes no parameters):
    /// the day must be `YYYY-MM-DD`.
    static func readChunk(day: String, from: Int64, to: Int64, excluded: [Int32]) throws -> String {
        guard day.utf8.count == 10, day.utf8.allSatisfy({ (48...57).contains($0) || $0 == 45 }) else {
            throw CompactionError(message: "not a day: \(day)")
        }
        let list = "'{" + excluded.map(String.init).joined(separator: ",") + "}'::integer[]"
        return """
            WITH day AS (SELECT date '\(day)' AS day, date '\(day)'::timestamp AT TIME ZONE 'UTC' AS starts_at)
            SELECT s.device_id,
                   (extract(epoch FROM s.measured_at - day.starts_at) * 1000000)::bigint,
                   (extract(epoch FROM s.received_at - s.measured_at) * 1000000)::bigint,
                   (extract(epoch FROM s.device_time - s.measured_at) * 1000000)::bigint,
                   s.voltage_volts, s.current_amperes, s.power_watts, s.power_factor, s.energy_wh, s.seq
            FROM day, LATERAL (
                SELECT * FROM samples_rows
                WHERE device_id >= \(from) AND device_id < \(to) AND device_id <> ALL (\(list))
                  AND measured_at >= day.starts_at AND measured_at < day.starts_at + interval '1 day'
                UNION ALL
                SELECT c.device_id, r.*
                FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
                WHERE c.day = day.day AND c.device_id >= \(from) AND c.device_id < \(to) AND NOT c.pending
            ) s
            ORDER BY s.device_id, s.measured_at
            """
    }

    static let copyBlocks = """
        COPY samples_compact (device_id, day, readings, first_at, last_at, measured_at, received_at, device_time,
                              voltage, current, power, power_factor, energy, seq, pending) FROM STDIN
        """

    /// One row of ``copyBlocks`` in COPY's text format (the literals hold no tab, newline or backslash).
    static func copyLine(device: Int64, day: String, _ block: CompactDay, pending: Bool) -> String {
        func at(_ microseconds: Int64) -> String {
            let seconds = microseconds / 1_000_000
            let fraction = String(microseconds % 1_000_000)
            let clock = [seconds / 3_600, seconds / 60 % 60, seconds % 60].map { $0 < 10 ? "0\($0)" : "\($0)" }
            return
                "\(day) \(clock.joined(separator: ":")).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)+00"
        }
        var fields = [String(device), day, String(block.readings), at(block.firstAt), at(block.lastAt)]
        fields += block.columns.map(\.literal)
        fields.append(pending ? "t" : "f")
        return fields.joined(separator: "\t") + "\n"
    }

    private static func reading(_ rows: PostgresResult, _ row: Int) throws -> CompactReading {
        CompactReading(
            measuredAt: try rows.int64(row: row, column: 1) ?? 0,
            receivedAfter: try rows.int64(row: row, column: 2) ?? 0,
            deviceTimeAfter: try rows.int64(row: row, column: 3),
            voltage: try rows.double(row: row, column: 4), current: try rows.double(row: row, column: 5),
            power: try rows.double(row: row, column: 6) ?? 0, powerFactor: try rows.double(row: row, column: 7),
            energy: try rows.double(row: row, column: 8), seq: try rows.int64(row: row, column: 9))
    }

    /// The day's partition, quoted, or an error naming the day.
    private func partition(_ day: String) throws -> String {
        let result = try connection.execute(
            "SELECT format('%I.%I', schema_name, partition_name) FROM sample_partitions WHERE day = $1::date", [day])
        guard result.rowCount == 1, let table = result[0, 0] else {
            throw CompactionError(
                message: "no partition of samples holds \(day) (retention dropped it, or it is ahead)")
        }
        return table
    }

    private func dayNumber(_ day: String) throws -> Int32 {
        let result = try connection.execute("SELECT $1::date - date '1970-01-01'", [day])
        return Int32(try result.int(row: 0, column: 0) ?? 0)
    }

    /// The trigger that keeps a compacted reading from coming back in row form and marks a pending outlet-day that
    /// changes (before any chunk commits).
    private func installGuard(_ table: String) throws {
        try connection.execute(
            """
            DO $$
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '\(table)'::regclass
                                                           AND tgname = 'samples_compacted_guard') THEN
                    CREATE TRIGGER samples_compacted_guard BEFORE INSERT OR UPDATE OR DELETE ON \(table)
                        FOR EACH ROW EXECUTE FUNCTION outletd_compacted_guard();
                END IF;
            END
            $$
            """)
    }
}

/// A compaction request that cannot be done, with the reason.
public struct CompactionError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
