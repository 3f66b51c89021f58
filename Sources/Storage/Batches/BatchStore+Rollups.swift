import Postgres

/// A batch's ``RollupDeltas`` and the binary COPY of their chains, made before the rollups need
/// them: the writer makes them while PostgreSQL moves the batch's samples (pure computation, no
/// connection).
struct StagedRollups {
    let deltas: RollupDeltas
    /// Whether the chains carry their first and last minute: when one spans minutes (the short way
    /// reads them instead of staged minutes; NULL for a chain of one minute, whose total is that
    /// minute). At a steady rate no chain does, and the columns are left out.
    let withEnds: Bool
    /// The COPY's data, in pieces.
    let chains: [[UInt8]]
    let maxGapSeconds: Double

    init(_ batch: Batch, maxGapSeconds: Double) {
        let deltas = RollupDeltas(batch.samples, maxGapSeconds: maxGapSeconds)
        let withEnds = deltas.chains.contains { $0.minuteCount > 1 }
        var chunks = CopyBinaryChunks(deltas.chains[...]) { deltas.encode($0, withEnds: withEnds, &$1) }
        var chains: [[UInt8]] = []
        if !deltas.chains.isEmpty {
            while let chunk = chunks.next() { chains.append(chunk) }
        }
        self.deltas = deltas
        self.withEnds = withEnds
        self.chains = chains
        self.maxGapSeconds = maxGapSeconds
    }
}

/// The rollup step of the write path (docs/ROLLUPS.md, "How the write path maintains them").
///
/// After the move statement has inserted a batch's samples and noted, per outlet, how many it
/// really inserted (`outletd_inserted_devices`), the writer stages its ``RollupDeltas`` (one row
/// per outlet; its first and last minute when they differ; the minutes between them; the other
/// minutes only once the short ways leave outlets for the merge), locks the outlets, and merges:
/// an outlet whose samples were all inserted and all come after its tail gets the staged deltas
/// plus the segment from its tail added to its open minute, hour and day (kept in its
/// `rollup_tails` row; a bucket goes to its table once the outlet's data has moved past it). Of
/// those, an outlet whose samples all fall in its open hour (the usual case), or all in one
/// minute of a later hour, takes a shorter way to the same result, first: one update of its
/// `rollup_tails` row, and the buckets it closes (``shortWaySQL``, ``shortWayAcrossHoursSQL``);
/// the rest go through ``mergeRollupsSQL``. Every other outlet (a replayed reading, a late
/// reading, two readings at one time) is recomputed from the raw samples by
/// `outletd_rollups_after_insert`, which first closes the outlet's open buckets.
extension BatchStore {
    /// `checkingClosedMinutes`: whether the short way stores the minutes it closes with a conflict
    /// check (``shortWaySQL``), which a first attempt leaves out.
    func updateRollups(
        _ staged: StagedRollups, checkingClosedMinutes: Bool, _ connection: PostgresConnection
    ) throws {
        let deltas = staged.deltas
        let maxGapSeconds = staged.maxGapSeconds
        if !deltas.chains.isEmpty {
            let endColumns = ["first_minute_", "head_"].flatMap { prefix in
                staged.withEnds ? Self.deltaMeasureNames.map { prefix + $0 } : []
            }
            var chunks = staged.chains.makeIterator()
            try connection.copyIn(
                """
                COPY outletd_staging_chains (device_id, sample_count, first_us, first_power_watts, first_energy_wh,
                    last_us, last_power_watts, last_energy_wh, head_us,
                    \(Self.deltaMeasureNames.map { "total_\($0)" }.joined(separator: ", ")),
                    minute_count, first_minute_us\(endColumns.map { ", \($0)" }.joined())) FROM STDIN (FORMAT binary)
                """
            ) { chunks.next() }
            // Only the minutes between a chain's first and last are staged as minutes.
            try stageMinutes(deltas.middleMinutes, connection)
        }
        try connection.executePrepared(name: Statement.lockInserted)
        var remaining = try connection.executePrepared(
            name: checkingClosedMinutes ? Statement.shortWayChecked : Statement.shortWay, [maxGapSeconds])
        guard try remaining.int64(row: 0, column: 0) != 0 else { return }
        remaining = try connection.executePrepared(name: Statement.shortWayAcrossHours, [maxGapSeconds])
        guard try remaining.int64(row: 0, column: 0) != 0 else { return }
        // The merge reads all minutes of the outlets left.
        try stageMinutes(deltas.endMinutes, connection)
        let merged = try connection.executePrepared(name: Statement.mergeRollups, [maxGapSeconds])
        let recompute = merged[0, 0] ?? "{}"
        if recompute != "{}" {
            try connection.executePrepared(name: Statement.recomputeRollups, [recompute])
            try connection.executePrepared(name: Statement.refreshTails, [recompute])
        }
    }

    private func stageMinutes(_ minutes: [RollupDeltas.Minute], _ connection: PostgresConnection) throws {
        guard !minutes.isEmpty else { return }
        var rows = CopyBinaryChunks(minutes[...], encode: RollupDeltas.encode)
        try connection.copyIn(
            """
            COPY outletd_staging_minutes (device_id, bucket_us, \(Self.deltaMeasureNames.joined(separator: ", ")))
                FROM STDIN (FORMAT binary)
            """
        ) { rows.next() }
    }

    /// Takes the rollup lock of every outlet with an inserted sample (`outletd_lock_devices`).
    static let lockInsertedSQL = """
        SELECT outletd_lock_devices(array_agg(device_id)) FROM outletd_inserted_devices
        """

    /// Merges the staged deltas of the outlets that qualify (see the type's comment) into their open
    /// minute, hour and day (kept in `rollup_tails`, migration 10) and moves their tails; writes a
    /// bucket to its stored table once the outlet's data has moved past it. Returns the other outlets
    /// with inserted samples, as an array. `$1` is the maximum gap the deltas were computed with; if
    /// the stored setting differs, every outlet is recomputed.
    static let mergeRollupsSQL = """
        WITH settings AS (
            -- (LIMIT 1: the planner has no statistics on this one-row table.)
            SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
        ), fast AS MATERIALIZED (
            SELECT c.device_id,
                   \(timestamp("c.first_us")) AS first_at,
                   c.first_power_watts, c.first_energy_wh,
                   \(timestamp("c.last_us")) AS last_at,
                   c.last_power_watts, c.last_energy_wh,
                   t.measured_at AS tail_at, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
                   t.device_id IS NOT NULL AS has_tail
            FROM outletd_staging_chains c
            JOIN outletd_inserted_devices i ON i.device_id = c.device_id AND i.sample_count = c.sample_count
            LEFT JOIN rollup_tails t ON t.device_id = c.device_id
            WHERE (t.measured_at IS NULL OR t.measured_at < i.first_measured_at) AND (SELECT same_gap FROM settings)
        ), staged AS (
            SELECT m.device_id, \(timestamp("m.bucket_us")) AS bucket_start,
                   m.sample_count, m.power_sum_watts, m.power_integral_watt_seconds, m.covered_seconds, m.energy_wh,
                   m.min_power_watts, m.peak_power_watts, m.min_voltage_volts, m.max_voltage_volts, m.last_power_watts,
                   m.peak_us::double precision AS peak_us, m.last_us::double precision AS last_us
            FROM outletd_staging_minutes m
            WHERE EXISTS (SELECT FROM fast f WHERE f.device_id = m.device_id)
        ), links AS (
            -- The segment from each tail to its outlet's first new sample, in the tail's minute.
            SELECT device_id, date_trunc('minute', tail_at, 'UTC') AS bucket_start, tail_power_watts,
                   \(microseconds("tail_at")) AS tail_us, \(linkIntegral) AS power_integral_watt_seconds,
                   \(linkCovered) AS covered_seconds, \(linkEnergy) AS energy_wh
            FROM (SELECT *, extract(epoch FROM first_at - tail_at)::double precision AS seconds
                  FROM fast WHERE tail_at IS NOT NULL) f
        ), joined AS (
            -- A link joins the staged row of its minute when the batch has one. Alone, it counts no
            -- sample and carries the tail as minimum, peak and last sample: the minute holds the
            -- tail already, so merging that changes nothing there.
            SELECT coalesce(m.device_id, l.device_id) AS device_id, coalesce(m.bucket_start, l.bucket_start) AS bucket_start,
                   coalesce(m.sample_count, 0) AS sample_count, coalesce(m.power_sum_watts, 0) AS power_sum_watts,
                   coalesce(m.power_integral_watt_seconds, 0) + coalesce(l.power_integral_watt_seconds, 0)
                       AS power_integral_watt_seconds,
                   coalesce(m.covered_seconds, 0) + coalesce(l.covered_seconds, 0) AS covered_seconds,
                   coalesce(m.min_power_watts, l.tail_power_watts) AS min_power_watts,
                   coalesce(m.peak_power_watts, l.tail_power_watts) AS peak_power_watts,
                   coalesce(m.peak_us, l.tail_us) AS peak_us,
                   coalesce(m.energy_wh, 0) + coalesce(l.energy_wh, 0) AS energy_wh,
                   m.min_voltage_volts, m.max_voltage_volts,
                   coalesce(m.last_power_watts, l.tail_power_watts) AS last_power_watts,
                   coalesce(m.last_us, l.tail_us) AS last_us
            FROM staged m
            FULL JOIN links l ON l.device_id = m.device_id AND l.bucket_start = m.bucket_start
        ), buckets AS MATERIALIZED (
            -- The local hour and day of each minute, once per distinct minute (a batch spans few).
            SELECT bucket_start, hour_start, day, day::timestamp AT TIME ZONE zone AS day_start
            FROM (SELECT bucket_start, hour_start, (hour_start AT TIME ZONE zone)::date AS day, zone
                  FROM (SELECT b.bucket_start, outletd_hour_start(b.bucket_start, s.zone) AS hour_start, s.zone
                        FROM (SELECT DISTINCT bucket_start FROM joined) b CROSS JOIN settings s) with_hour) with_day
        ), delta AS MATERIALIZED (
            SELECT j.*, b.hour_start, b.day, b.day_start FROM joined j JOIN buckets b USING (bucket_start)
        ), heads AS MATERIALIZED (
            -- Per outlet, the minute, hour and day of its newest sample, open after this batch, and
            -- the buckets open before it.
            SELECT f.device_id, f.has_tail, f.last_at, f.last_power_watts, f.last_energy_wh,
                   b.bucket_start AS minute_start, b.hour_start, b.day, b.day_start,
                   \(openColumns("open_minute")), \(openColumns("open_hour")), \(openColumns("open_day")),
                   t.open_day_date
            FROM fast f
            JOIN buckets b ON b.bucket_start = date_trunc('minute', f.last_at, 'UTC')
            LEFT JOIN rollup_tails t ON t.device_id = f.device_id
        ), \(adopted("minute", key: "bucket_start", head: "minute_start")), \
        \(adopted("hourly", key: "bucket_start", head: "hour_start")), \
        \(adopted("daily", key: "day", head: "day")), \
        earlier_minutes AS (
            -- Per outlet, the minute it had before this batch: open, or taken from its table.
            SELECT device_id, open_minute_start AS bucket_start, \(openMeasures("open_minute", aliased: true))
            FROM heads WHERE open_minute_start IS NOT NULL
            UNION ALL
            SELECT device_id, bucket_start, \(storedMeasures) FROM adopted_minute
        ), minute_sums AS MATERIALIZED (
            -- The delta has one row per outlet and minute: only the minute an outlet had before
            -- needs adding to (a join, not a grouping: the batch's minutes are most of the rows).
            SELECT device_id, bucket_start, \(fromMicroseconds)
            FROM (SELECT d.device_id, d.bucket_start, \(deltaMeasures("d")) FROM delta d
                  WHERE NOT EXISTS (SELECT FROM earlier_minutes e
                                    WHERE e.device_id = d.device_id AND e.bucket_start = d.bucket_start)
                  UNION ALL
                  SELECT e.device_id, e.bucket_start, \(added("e", "d"))
                  FROM earlier_minutes e
                  LEFT JOIN delta d ON d.device_id = e.device_id AND d.bucket_start = e.bucket_start) parts
        ), hour_sums AS MATERIALIZED (
            SELECT device_id, bucket_start, \(summedMeasures)
            FROM (SELECT device_id, hour_start AS bucket_start, \(deltaMeasures) FROM delta
                  UNION ALL
                  SELECT device_id, open_hour_start, \(openMeasures("open_hour")) FROM heads
                  WHERE open_hour_start IS NOT NULL
                  UNION ALL
                  SELECT device_id, bucket_start, \(storedMeasures) FROM adopted_hourly) parts
            GROUP BY device_id, bucket_start
        ), day_sums AS MATERIALIZED (
            -- (Grouped by day alone: should the time zone have changed, the day keeps its first start.)
            SELECT device_id, day, min(bucket_start) AS bucket_start, \(summedMeasures)
            FROM (SELECT device_id, day, day_start AS bucket_start, \(deltaMeasures) FROM delta
                  UNION ALL
                  SELECT device_id, open_day_date, open_day_start, \(openMeasures("open_day")) FROM heads
                  WHERE open_day_start IS NOT NULL
                  UNION ALL
                  SELECT device_id, day, bucket_start, \(storedMeasures) FROM adopted_daily) parts
            GROUP BY device_id, day
        ), minutes AS (
            INSERT INTO power_rollups_minute_stored AS m (device_id, bucket_start, \(measureColumns))
            SELECT s.device_id, s.bucket_start, \(measureColumns("s"))
            FROM minute_sums s JOIN heads h ON h.device_id = s.device_id AND h.minute_start <> s.bucket_start
            ORDER BY s.device_id, s.bucket_start
            ON CONFLICT (device_id, bucket_start) DO UPDATE SET \(mergedMeasures("m"))
        ), hours AS (
            INSERT INTO power_rollups_hourly_stored AS r (device_id, bucket_start, \(measureColumns))
            SELECT s.device_id, s.bucket_start, \(measureColumns("s"))
            FROM hour_sums s JOIN heads h ON h.device_id = s.device_id AND h.hour_start <> s.bucket_start
            ORDER BY s.device_id, s.bucket_start
            ON CONFLICT (device_id, bucket_start) DO UPDATE SET \(mergedMeasures("r"))
        ), days AS (
            INSERT INTO power_rollups_daily_stored AS r (device_id, day, bucket_start, \(measureColumns))
            SELECT s.device_id, s.day, s.bucket_start, \(measureColumns("s"))
            FROM day_sums s JOIN heads h ON h.device_id = s.device_id AND h.day <> s.day
            ORDER BY s.device_id, s.day
            ON CONFLICT (device_id, day) DO UPDATE SET \(mergedMeasures("r"))
        ), opened AS (
            SELECT h.device_id, h.has_tail, h.last_at, h.last_power_watts, h.last_energy_wh,
                   \(opening("m", as: "open_minute")), \(opening("o", as: "open_hour")),
                   \(opening("d", as: "open_day")), d.day AS open_day_date
            FROM heads h
            JOIN minute_sums m ON m.device_id = h.device_id AND m.bucket_start = h.minute_start
            JOIN hour_sums o ON o.device_id = h.device_id AND o.bucket_start = h.hour_start
            JOIN day_sums d ON d.device_id = h.device_id AND d.day = h.day
        ), moved AS (
            UPDATE rollup_tails t SET (measured_at, power_watts, energy_wh, \(openBucketColumns)) =
                (o.last_at, o.last_power_watts, o.last_energy_wh, \(openBucketColumns("o")))
            FROM opened o
            WHERE o.has_tail AND t.device_id = o.device_id
        ), added AS (
            INSERT INTO rollup_tails (device_id, measured_at, power_watts, energy_wh, \(openBucketColumns))
            SELECT device_id, last_at, last_power_watts, last_energy_wh, \(openBucketColumns)
            FROM opened
            WHERE NOT has_tail
        )
        SELECT coalesce(array_agg(i.device_id ORDER BY i.device_id), '{}')
        FROM outletd_inserted_devices i
        WHERE NOT EXISTS (SELECT FROM fast f WHERE f.device_id = i.device_id)
        """

    /// Brings up to date, in one update of its `rollup_tails` row, every outlet whose samples all
    /// fall in its open hour (inserted, all after its tail; the usual batch at a steady rate or
    /// catching up), and, when other outlets remain, takes it out of `outletd_inserted_devices`:
    /// what ``mergeRollupsSQL`` would do for it, without its groupings. The segment from the tail
    /// and the chain's total (summed by the writer) add to the open hour and day. If the samples
    /// stay in the open minute, they add to it too; else the open minute, with the segment and the
    /// batch's share of it (the chain's first minute, staged with the chain), goes to
    /// `power_rollups_minute_stored` with the batch's other minutes before its last, and the last
    /// one opens. Returns how many outlets with inserted samples remain (for
    /// ``shortWayAcrossHoursSQL``, then ``mergeRollupsSQL``). `$1` is the maximum gap the deltas
    /// were computed with.
    ///
    /// The minutes it closes never have a stored row (an open bucket never has one beside it, and
    /// the minutes after the tail have no samples stored), so without `checked` they are stored
    /// with a plain `INSERT`: the conflict check of `ON CONFLICT` costs ~7 % of the statement
    /// (docs/ROLLUPS.md, "Benchmark"). Should that ever be wrong, the insert fails on the table's
    /// key and the writer writes the batch again with `checked`
    /// (``BatchStore/write(_:to:checkpoint:)``), which merges into the stored row.
    static func shortWaySQL(checked: Bool) -> String {
        """
        WITH settings AS (
            SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
        ), moved AS (
            -- (Each outlet's old open minute, with what closing it adds, comes back from the update:
            -- the rows it closes are stored from there, without materialising every joined column.)
            UPDATE rollup_tails t
            SET measured_at = s.last_at, power_watts = s.last_power_watts, energy_wh = s.last_energy_wh,
                open_minute_start = \(timestamp("s.head_us")),
                \(openBucketsMoved)
            FROM (SELECT device_id, tail_ctid, head_us, open_minute_us, open_minute_start, first_minute_us, minute_count,
                         last_energy_wh,
                         \(linkColumns),
                         \(linkedTotal),
                         \(headMeasures),
                         \(list(measures.map { "open_minute_\($0)" })),
                         \(list(deltaMeasureNames.map { "first_minute_\($0)" }))
                  FROM (SELECT c.*, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
                               \(secondsFromTail) AS seconds, t.ctid AS tail_ctid,
                               t.open_minute_us, t.open_minute_start, \(list(measures.map { "open_minute_\($0)" }, of: "t"))
                        FROM outletd_staging_chains c
                        JOIN outletd_inserted_devices i ON i.device_id = c.device_id AND i.sample_count = c.sample_count
                        JOIN (SELECT *, ctid, (\(microseconds("open_minute_start")))::bigint AS open_minute_us FROM rollup_tails) t
                            ON t.device_id = c.device_id
                        WHERE t.measured_at < i.first_measured_at
                          AND t.open_minute_start IS NOT NULL AND t.open_day_start IS NOT NULL
                          AND outletd_hour_start(\(timestamp("c.head_us")), (SELECT zone FROM settings)) = t.open_hour_start
                          AND (SELECT same_gap FROM settings)
                        OFFSET 0) joined  -- (kept a subquery: its `seconds` is computed once, not at every use)
                 ) s
            -- (By the row version the join read: no second look-up of each outlet's row by key.)
            WHERE t.ctid = s.tail_ctid
            RETURNING t.device_id, s.head_us, s.open_minute_us, s.open_minute_start, s.first_minute_us, s.minute_count,
                      \(closedOpenMinute),
                      \(list(deltaMeasureNames.map { "first_minute_\($0)" }, of: "s"))
        ), closed AS (
            INSERT INTO power_rollups_minute_stored AS r (device_id, bucket_start, \(measureColumns))
            SELECT * FROM (
                SELECT m.device_id, m.open_minute_start AS bucket_start, \(list(measures.map { "closed_\($0)" }, of: "m"))
                FROM moved m
                WHERE m.head_us <> m.open_minute_us
                UNION ALL
                -- The chain's first minute, when it is neither the open minute nor the last.
                SELECT m.device_id, \(timestamp("m.first_minute_us")),
                       \(measures.map(stagedMeasure("m.first_minute_")).joined(separator: ", "))
                FROM moved m
                WHERE m.minute_count > 1 AND m.first_minute_us <> m.open_minute_us
                UNION ALL
                -- The minutes between its first and last: the only ones staged so far.
                SELECT m.device_id, \(timestamp("m.bucket_us")),
                       \(measures.map(stagedMeasure("m.")).joined(separator: ", "))
                FROM outletd_staging_minutes m
                JOIN moved s ON s.device_id = m.device_id
            ) minutes
            ORDER BY device_id, bucket_start
            \(checked ? "ON CONFLICT (device_id, bucket_start) DO UPDATE SET \(mergedMeasures("r"))" : "")
        ), \(handledAndRemaining)
        """
    }

    /// A measure of a staged row (a minute, a chain's total or one of its end minutes: columns
    /// `prefix`ed with a table's alias and a dot, and/or `total_`, `head_`, `first_minute_`) as the
    /// rollup tables name it, its times (`peak_at`, `last_at`) from microseconds.
    private static func stagedMeasure(_ prefix: String) -> (String) -> String {
        { name in name.hasSuffix("_at") ? timestamp("\(prefix)\(name.dropLast(3))_us") : "\(prefix)\(name)" }
    }

    /// The end of both short ways, after their CTE `moved` (the `rollup_tails` rows of the outlets
    /// they take, updated): the outlets taken leave `outletd_inserted_devices` when others remain
    /// (only then do the next statements need to tell them apart), and the statement returns how
    /// many remain.
    private static let handledAndRemaining = """
        remaining AS MATERIALIZED (
                    -- (Counted once: the delete's condition and the result both read it.)
                    SELECT (SELECT count(*) FROM outletd_inserted_devices) - (SELECT count(*) FROM moved) AS count
                ), handled AS (
                    DELETE FROM outletd_inserted_devices i USING moved m
                    WHERE i.device_id = m.device_id AND (SELECT count > 0 FROM remaining)
                )
                SELECT count FROM remaining
        """

    /// The segment from an outlet's tail to its chain's first sample (``linkIntegral``,
    /// ``linkCovered``, ``linkEnergy``), as the columns `link_…` of the outlets both short ways take
    /// (`s`).
    private static let linkColumns = """
        \(linkIntegral) AS link_power_integral_watt_seconds, \(linkCovered) AS link_covered_seconds,
                   \(linkEnergy) AS link_energy_wh
        """

    /// The measures of a chain's last minute (`head_…`): its total when it has one minute.
    private static let headMeasures = measures.map {
        "CASE WHEN minute_count = 1 THEN \(stagedMeasure("total_")($0)) ELSE \(stagedMeasure("head_")($0)) END AS head_\($0)"
    }.joined(separator: ",\n")

    /// A chain's total with the segment from its tail added (in the outlets both short ways take,
    /// `s`): what the batch adds to the open hour and day.
    private static let linkedTotal = """
        total_sample_count AS sample_count, total_power_sum_watts AS power_sum_watts,
                   total_power_integral_watt_seconds + \(linkIntegral) AS power_integral_watt_seconds,
                   total_covered_seconds + \(linkCovered) AS covered_seconds,
                   total_energy_wh + \(linkEnergy) AS energy_wh,
                   total_min_power_watts AS min_power_watts, total_peak_power_watts AS peak_power_watts,
                   \(timestamp("total_peak_us")) AS peak_at,
                   total_min_voltage_volts AS min_voltage_volts, total_max_voltage_volts AS max_voltage_volts,
                   total_last_power_watts AS last_power_watts,
                   \(timestamp("total_last_us")) AS last_at
        """

    /// ``shortWaySQL`` for the outlets left whose samples are all in one minute of a later hour:
    /// at a steady rate, every outlet once an hour. Their open minute and hour (and day, when the
    /// minute is in a later day) close with the segment from the tail, and the minute opens them.
    /// A statement of its own, run only when outlets remain, so that the usual batch pays nothing
    /// for it.
    static let shortWayAcrossHoursSQL = """
        WITH settings AS (
            SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
        ), staying AS MATERIALIZED (
            SELECT device_id, head_us, last_energy_wh,
                   head_hour_start, head_day, head_day <> open_day_date AS new_day,
                   CASE WHEN head_day <> open_day_date
                        THEN head_day::timestamp AT TIME ZONE (SELECT zone FROM settings) END AS head_day_start,
                   \(linkColumns),
                   \(linkedTotal),
                   \(measures.map { "\(stagedMeasure("total_")($0)) AS head_\($0)" }.joined(separator: ", "))
            FROM (SELECT c.*, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
                         \(secondsFromTail) AS seconds,
                         t.open_hour_start, t.open_day_date,
                         outletd_hour_start(\(timestamp("c.head_us")), (SELECT zone FROM settings)) AS head_hour_start
                  FROM outletd_staging_chains c
                  JOIN outletd_inserted_devices i ON i.device_id = c.device_id AND i.sample_count = c.sample_count
                  JOIN rollup_tails t ON t.device_id = c.device_id
                  WHERE t.measured_at < i.first_measured_at
                    AND t.open_minute_start IS NOT NULL AND t.open_day_start IS NOT NULL
                    -- All in the minute the batch ends in (whose measures are the total's).
                    AND c.minute_count = 1
                    AND (SELECT same_gap FROM settings)
                  OFFSET 0) joined,
                 LATERAL (SELECT (head_hour_start AT TIME ZONE (SELECT zone FROM settings))::date AS head_day) day
            WHERE head_hour_start <> open_hour_start
        ), \(closing("open_minute", into: "power_rollups_minute_stored", as: "closed")),
        \(closing("open_hour", into: "power_rollups_hourly_stored", as: "closed_hour")),
        \(closing("open_day", into: "power_rollups_daily_stored", as: "closed_day", onlyIf: "s.new_day")),
        moved AS (
            UPDATE rollup_tails t
            SET measured_at = s.last_at, power_watts = s.last_power_watts, energy_wh = s.last_energy_wh,
                open_minute_start = \(timestamp("s.head_us")),
                open_hour_start = s.head_hour_start,
                -- (A day's start stays as it opened, should the time zone change: as in the merge.)
                open_day_start = coalesce(s.head_day_start, t.open_day_start),
                open_day_date = s.head_day,
                \(openBucketsMovedAcrossHours)
            FROM staying s
            WHERE t.device_id = s.device_id
            RETURNING t.device_id
        ), \(handledAndRemaining)
        """

    /// An outlet's open minute (in ``shortWaySQL``'s outlets `s`) with the segment from its tail
    /// and the batch's share of it (its first minute, when the chain starts in the open minute)
    /// added: the row it is stored as.
    private static let closedOpenMinute = addedMeasures(
        linked("open_minute", of: "s"),
        { "CASE WHEN s.first_minute_us = s.open_minute_us THEN \(stagedMeasure("s.first_minute_")($0)) END" },
        time: "_at"
    ).map { "\($1) AS closed_\($0)" }.joined(separator: ",\n")

    /// A CTE (`name`) of ``shortWayAcrossHoursSQL`` storing the open bucket `level` (`open_minute`,
    /// `open_hour`, `open_day`) of each outlet in `staying s` (`onlyIf` a condition holds) into
    /// `table`, with the segment from the tail added: the outlet's data has moved past it.
    private static func closing(_ level: String, into table: String, as name: String, onlyIf condition: String? = nil)
        -> String
    {
        let (keys, conflict) =
            level == "open_day" ? ("day, bucket_start", "day") : ("bucket_start", "bucket_start")
        let values = level == "open_day" ? "t.open_day_date, t.open_day_start" : "t.\(level)_start"
        return """
            \(name) AS (
                        INSERT INTO \(table) AS r (device_id, \(keys), \(measureColumns))
                        SELECT s.device_id, \(values), \(measures.map(linked(level)).joined(separator: ",\n"))
                        FROM staying s
                        JOIN rollup_tails t ON t.device_id = s.device_id
                        \(condition.map { "WHERE \($0)" } ?? "")
                        ORDER BY s.device_id
                        ON CONFLICT (device_id, \(conflict)) DO UPDATE SET \(mergedMeasures("r"))
                    )
            """
    }

    /// A measure of an open bucket (`level`) of `rollup_tails t` with the segment from the tail (in
    /// `s`, the outlets taken) added: the segment's sums add; it brings no sample of its own.
    private static func linked(_ level: String, of table: String = "t") -> (String) -> String {
        { name in
            ["power_integral_watt_seconds", "covered_seconds", "energy_wh"].contains(name)
                ? "\(table).\(level)_\(name) + s.link_\(name)" : "\(table).\(level)_\(name)"
        }
    }

    /// The SET list moving an outlet's open buckets in `rollup_tails t` by `s` (the outlets taken):
    /// its hour and day gain the batch's total; its minute gains it too when the samples stayed in
    /// it, else it is the batch's last minute (`head_…`).
    private static let openBucketsMoved =
        (addedMeasures({ "t.open_minute_\($0)" }, column(of: "s"), time: "_at").map { name, added in
            "open_minute_\(name) = CASE WHEN s.head_us = s.open_minute_us THEN \(added) ELSE s.head_\(name) END"
        }
        + ["open_hour", "open_day"].flatMap { level in
            addedMeasures({ "t.\(level)_\($0)" }, column(of: "s"), time: "_at").map { "\(level)_\($0) = \($1)" }
        }).joined(separator: ",\n")

    /// The same for samples all in one minute of a later hour (`head_…`): that minute opens the
    /// minute and hour, and the day too if it is a later one; else the day gains the batch's total.
    private static let openBucketsMovedAcrossHours =
        (["open_minute", "open_hour"].flatMap { level in measures.map { "\(level)_\($0) = s.head_\($0)" } }
        + addedMeasures({ "t.open_day_\($0)" }, column(of: "s"), time: "_at").map { name, added in
            "open_day_\(name) = CASE WHEN s.new_day THEN s.head_\(name) ELSE \(added) END"
        }).joined(separator: ",\n")

    /// The seconds from an outlet's tail (`rollup_tails t`) to its chain's first sample
    /// (`outletd_staging_chains c`), as the writer computes a segment's: the microseconds between
    /// them over a million. (`extract(epoch FROM …)` gives the same double through a numeric, at
    /// several times the cost.)
    private static let secondsFromTail = "(c.first_us - \(microseconds("t.measured_at"))) / 1000000"

    /// The segment from an outlet's tail to its first new sample (columns `seconds` between them,
    /// `tail_power_watts`, `first_power_watts`, `tail_energy_wh`, `first_energy_wh`; `$1` the maximum
    /// gap): its power integral, the seconds it covers, its energy (from the counters when both
    /// samples have one, `outletd_counter_energy`; else integrated; nothing over a longer gap).
    private static let linkIntegral =
        "CASE WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds ELSE 0 END"
    private static let linkCovered = "CASE WHEN seconds <= $1 THEN seconds ELSE 0 END"
    private static let linkEnergy = """
        CASE WHEN tail_energy_wh IS NOT NULL AND first_energy_wh IS NOT NULL
                 THEN outletd_counter_energy(tail_energy_wh, first_energy_wh)
             WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds / 3600
             ELSE 0 END
        """

    /// The measures of a bucket, in the column order of the rollup tables.
    private static let measures = [
        "sample_count", "power_sum_watts", "power_integral_watt_seconds", "covered_seconds", "min_power_watts",
        "peak_power_watts", "peak_at", "energy_wh", "min_voltage_volts", "max_voltage_volts", "last_power_watts",
        "last_at",
    ]

    /// ``measures`` with the times (`peak_at`, `last_at`) in microseconds since 1970 (`peak_us`,
    /// `last_us`): the form ``summedMeasures`` and ``added(_:_:)`` read, and the columns (in order)
    /// of the minutes and totals ``RollupDeltas`` stages.
    static let deltaMeasureNames = measures.map { $0.hasSuffix("_at") ? $0.dropLast(3) + "_us" : $0 }

    private static func list(_ names: [String], of table: String? = nil) -> String {
        names.map { name in table.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    private static let measureColumns = list(measures)

    private static func measureColumns(_ table: String) -> String { list(measures, of: table) }

    private static let deltaMeasures = list(deltaMeasureNames)

    private static func deltaMeasures(_ table: String) -> String { list(deltaMeasureNames, of: table) }

    /// Microseconds since 1970 of a `timestamptz` expression, as a double precision (exact: the
    /// double `date_part` gives is within a microsecond, and the rounding removes the error).
    private static func microseconds(_ time: String) -> String {
        "round(date_part('epoch', \(time)) * 1000000)"
    }

    /// ``deltaMeasures`` of a stored row.
    private static let storedMeasures = measures.map { $0.hasSuffix("_at") ? microseconds($0) : $0 }
        .joined(separator: ", ")

    /// The columns of an outlet's open buckets in `rollup_tails` (`open_minute_start`,
    /// `open_minute_sample_count`, …, `open_day_date`).
    private static let openBucketColumnNames =
        ["open_minute", "open_hour", "open_day"].flatMap { level in
            ["\(level)_start"] + measures.map { "\(level)_\($0)" }
        } + ["open_day_date"]

    private static let openBucketColumns = list(openBucketColumnNames)

    private static func openBucketColumns(_ table: String) -> String { list(openBucketColumnNames, of: table) }

    /// An open bucket's columns of `rollup_tails t`, read once: its start and measures, with its
    /// times also in microseconds (`<level>_peak_us`, `<level>_last_us`).
    private static func openColumns(_ level: String) -> String {
        (["start"] + measures).map { "t.\(level)_\($0)" }.joined(separator: ", ") + ", "
            + measures.filter { $0.hasSuffix("_at") }.map {
                "\(microseconds("t.\(level)_\($0)")) AS \(level)_\($0.dropLast(3))_us"
            }.joined(separator: ", ")
    }

    /// The ``deltaMeasures`` of an open bucket read by ``openColumns(_:)``, `aliased` to their
    /// ``deltaMeasures`` names.
    private static func openMeasures(_ level: String, aliased: Bool = false) -> String {
        deltaMeasureNames.map { "\(level)_\($0)" + (aliased ? " AS \($0)" : "") }.joined(separator: ", ")
    }

    /// The measures of a row in ``deltaMeasures`` form, times back to `timestamptz`.
    private static let fromMicroseconds = deltaMeasureNames.map {
        $0.hasSuffix("_us") ? "\(timestamp($0)) AS \($0.dropLast(3))_at" : $0
    }.joined(separator: ", ")

    /// Per measure, a bucket with a delta added: sums add, extremes compare, the earliest time at
    /// the peak and the latest sample win. `bucket` and `delta` name a measure's column of each (the
    /// delta's columns are NULL when there is none); `time` is the suffix of the two time columns:
    /// `_at` (timestamps) or `_us` (microseconds).
    private static func addedMeasures(
        _ bucket: (String) -> String, _ delta: (String) -> String, time: String
    ) -> [(String, String)] {
        let newPeak = """
            \(delta("peak_power_watts")) > \(bucket("peak_power_watts"))
                                     OR (\(delta("peak_power_watts")) = \(bucket("peak_power_watts")) AND \(delta("peak\(time)")) < \(bucket("peak\(time)")))
            """
        func sum(_ name: String) -> (String, String) { (name, "\(bucket(name)) + coalesce(\(delta(name)), 0)") }
        func extreme(_ name: String, _ function: String) -> (String, String) {
            (name, "\(function)(\(bucket(name)), \(delta(name)))")
        }
        return [
            sum("sample_count"), sum("power_sum_watts"), sum("power_integral_watt_seconds"), sum("covered_seconds"),
            extreme("min_power_watts", "least"), extreme("peak_power_watts", "greatest"),
            ("peak\(time)", "CASE WHEN \(newPeak) THEN \(delta("peak\(time)")) ELSE \(bucket("peak\(time)")) END"),
            sum("energy_wh"), extreme("min_voltage_volts", "least"), extreme("max_voltage_volts", "greatest"),
            (
                "last_power_watts",
                "CASE WHEN \(delta("last\(time)")) >= \(bucket("last\(time)")) THEN \(delta("last_power_watts")) ELSE \(bucket("last_power_watts")) END"
            ),
            extreme("last\(time)", "greatest"),
        ]
    }

    /// A column of table (or alias) `table`, as ``addedMeasures(_:_:time:)`` names it.
    private static func column(of table: String) -> (String) -> String { { "\(table).\($0)" } }

    /// A bucket in ``deltaMeasures`` form with a delta (the same form, NULL when there is none)
    /// added, as a select list.
    private static func added(_ bucket: String, _ delta: String) -> String {
        addedMeasures(column(of: bucket), column(of: delta), time: "_us").map { "\($1) AS \($0)" }
            .joined(separator: ",\n")
    }

    /// Adds a delta (`excluded`) to a stored bucket (`table`), as the SET list of an upsert.
    private static func mergedMeasures(_ table: String) -> String {
        addedMeasures(column(of: table), column(of: "excluded"), time: "_at").map { "\($0) = \($1)" }
            .joined(separator: ",\n")
    }

    /// A bucket of `sums` (a ``summedMeasures`` grouping) as the columns of an open bucket.
    private static func opening(_ sums: String, as level: String) -> String {
        (["bucket_start"] + measures).map {
            "\(sums).\($0) AS \(level)_\($0 == "bucket_start" ? "start" : $0)"
        }.joined(separator: ", ")
    }

    /// Deletes the stored row of the bucket (of `table`) that opens for an outlet that had no open
    /// buckets, and returns it: its measures join the open bucket, which never has a stored row
    /// beside it. (An outlet has no open buckets when it is new, or after a late reading, a
    /// rebuild or retention closed them.)
    private static func adopted(_ table: String, key: String, head: String) -> String {
        """
        adopted_\(table) AS (
                    DELETE FROM power_rollups_\(table)_stored s USING heads h
                    WHERE h.open_minute_start IS NULL AND s.device_id = h.device_id AND s.\(key) = h.\(head)
                    RETURNING s.*
                )
        """
    }

    /// The measures of a group of rows in ``deltaMeasures`` form, for one bucket. The peak
    /// (highest power, then earliest time) and the last sample (latest time) are the maximum of a
    /// two-element array of power and time in microseconds (exact in a double until the year
    /// 2255): an ordered `array_agg` would sort every group on its own, twice per group.
    private static let summedMeasures = """
        sum(sample_count) AS sample_count, sum(power_sum_watts) AS power_sum_watts,
                   sum(power_integral_watt_seconds) AS power_integral_watt_seconds,
                   sum(covered_seconds) AS covered_seconds, min(min_power_watts) AS min_power_watts,
                   (max(ARRAY[peak_power_watts, -peak_us]))[1] AS peak_power_watts,
                   timestamptz 'epoch' - (max(ARRAY[peak_power_watts, -peak_us]))[2] * interval '1 microsecond' AS peak_at,
                   sum(energy_wh) AS energy_wh, min(min_voltage_volts) AS min_voltage_volts,
                   max(max_voltage_volts) AS max_voltage_volts,
                   (max(ARRAY[last_us, last_power_watts]))[2] AS last_power_watts,
                   \(timestamp("(max(ARRAY[last_us, last_power_watts]))[1]")) AS last_at
        """

    /// Recomputes, from the raw samples, the minutes touched by the staged samples of the outlets in
    /// `$1` (a superset of the rows inserted, which recomputes some minutes to what they are).
    static let recomputeRollupsSQL = """
        SELECT outletd_rollups_after_insert(array_agg(device_id), array_agg(measured_at))
        FROM (SELECT DISTINCT device_id, \(timestamp("measured_us")) AS measured_at
              FROM outletd_staging_samples WHERE device_id = ANY ($1::integer[])) staged
        """

    /// Moves the tails of the outlets in `$1` to their newest sample: one inserted now, or the tail.
    static let refreshTailsSQL = """
        INSERT INTO rollup_tails AS t (device_id, measured_at, power_watts, energy_wh)
        SELECT DISTINCT ON (s.device_id) s.device_id, s.measured_at, s.power_watts, s.energy_wh
        FROM outletd_inserted_devices i
        JOIN samples s ON s.device_id = i.device_id AND s.measured_at >= i.first_measured_at
        WHERE i.device_id = ANY ($1::integer[])
        ORDER BY s.device_id, s.measured_at DESC
        ON CONFLICT (device_id) DO UPDATE SET
            measured_at = excluded.measured_at, power_watts = excluded.power_watts, energy_wh = excluded.energy_wh
        WHERE excluded.measured_at > t.measured_at
        """
}
