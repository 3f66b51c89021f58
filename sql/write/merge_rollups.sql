-- The general merge: the staged deltas of every outlet whose samples were all inserted and all come after its
-- tail (any number of minutes, hours and days) are added to its open minute, hour and day (`rollup_tails`),
-- the tail moves, and a bucket goes to its stored table once the outlet's data has moved past it (merging into
-- a stored row, if there is one). Returns, as an array, the other outlets with inserted samples (a replayed or
-- late reading, two readings at one time): they are recomputed from the raw samples. $1: the maximum gap the
-- deltas were computed with; if the stored setting differs, every outlet is recomputed.
WITH settings AS (
    -- (LIMIT 1: the planner has no statistics on this one-row table.)
    SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
), fast AS MATERIALIZED (
    SELECT c.device_id,
           timestamptz 'epoch' + c.first_us * interval '1 microsecond' AS first_at,
           c.first_power_watts, c.first_energy_wh,
           timestamptz 'epoch' + c.last_us * interval '1 microsecond' AS last_at,
           c.last_power_watts, c.last_energy_wh,
           t.measured_at AS tail_at, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
           t.device_id IS NOT NULL AS has_tail
    FROM outletd_staging_chains c
    JOIN outletd_inserted_devices i ON i.device_id = c.device_id AND i.sample_count = c.sample_count
    LEFT JOIN rollup_tails t ON t.device_id = c.device_id
    WHERE (t.measured_at IS NULL OR t.measured_at < i.first_measured_at) AND (SELECT same_gap FROM settings)
), staged AS (
    SELECT m.device_id, timestamptz 'epoch' + m.bucket_us * interval '1 microsecond' AS bucket_start,
           m.sample_count, m.power_sum_watts, m.power_integral_watt_seconds, m.covered_seconds, m.energy_wh,
           m.min_power_watts, m.peak_power_watts, m.min_voltage_volts, m.max_voltage_volts, m.last_power_watts,
           m.peak_us::double precision AS peak_us, m.last_us::double precision AS last_us
    FROM outletd_staging_minutes m
    WHERE EXISTS (SELECT FROM fast f WHERE f.device_id = m.device_id)
), links AS (
    -- The segment from each tail to its outlet's first new sample, in the tail's minute.
    SELECT device_id, date_trunc('minute', tail_at, 'UTC') AS bucket_start, tail_power_watts,
           round(date_part('epoch', tail_at) * 1000000) AS tail_us, CASE WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds ELSE 0 END AS power_integral_watt_seconds,
           CASE WHEN seconds <= $1 THEN seconds ELSE 0 END AS covered_seconds, CASE WHEN tail_energy_wh IS NOT NULL AND first_energy_wh IS NOT NULL
         THEN outletd_counter_energy(tail_energy_wh, first_energy_wh)
     WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds / 3600
     ELSE 0 END AS energy_wh
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
           t.open_minute_start, t.open_minute_sample_count, t.open_minute_power_sum_watts, t.open_minute_power_integral_watt_seconds, t.open_minute_covered_seconds, t.open_minute_min_power_watts, t.open_minute_peak_power_watts, t.open_minute_peak_at, t.open_minute_energy_wh, t.open_minute_min_voltage_volts, t.open_minute_max_voltage_volts, t.open_minute_last_power_watts, t.open_minute_last_at, round(date_part('epoch', t.open_minute_peak_at) * 1000000) AS open_minute_peak_us, round(date_part('epoch', t.open_minute_last_at) * 1000000) AS open_minute_last_us, t.open_hour_start, t.open_hour_sample_count, t.open_hour_power_sum_watts, t.open_hour_power_integral_watt_seconds, t.open_hour_covered_seconds, t.open_hour_min_power_watts, t.open_hour_peak_power_watts, t.open_hour_peak_at, t.open_hour_energy_wh, t.open_hour_min_voltage_volts, t.open_hour_max_voltage_volts, t.open_hour_last_power_watts, t.open_hour_last_at, round(date_part('epoch', t.open_hour_peak_at) * 1000000) AS open_hour_peak_us, round(date_part('epoch', t.open_hour_last_at) * 1000000) AS open_hour_last_us, t.open_day_start, t.open_day_sample_count, t.open_day_power_sum_watts, t.open_day_power_integral_watt_seconds, t.open_day_covered_seconds, t.open_day_min_power_watts, t.open_day_peak_power_watts, t.open_day_peak_at, t.open_day_energy_wh, t.open_day_min_voltage_volts, t.open_day_max_voltage_volts, t.open_day_last_power_watts, t.open_day_last_at, round(date_part('epoch', t.open_day_peak_at) * 1000000) AS open_day_peak_us, round(date_part('epoch', t.open_day_last_at) * 1000000) AS open_day_last_us,
           t.open_day_date
    FROM fast f
    JOIN buckets b ON b.bucket_start = date_trunc('minute', f.last_at, 'UTC')
    LEFT JOIN rollup_tails t ON t.device_id = f.device_id
), adopted_minute AS (
            DELETE FROM power_rollups_minute_stored s USING heads h
            WHERE h.open_minute_start IS NULL AND s.device_id = h.device_id AND s.bucket_start = h.minute_start
            RETURNING s.*
        ), adopted_hourly AS (
            DELETE FROM power_rollups_hourly_stored s USING heads h
            WHERE h.open_minute_start IS NULL AND s.device_id = h.device_id AND s.bucket_start = h.hour_start
            RETURNING s.*
        ), adopted_daily AS (
            DELETE FROM power_rollups_daily_stored s USING heads h
            WHERE h.open_minute_start IS NULL AND s.device_id = h.device_id AND s.day = h.day
            RETURNING s.*
        ), earlier_minutes AS (
    -- Per outlet, the minute it had before this batch: open, or taken from its table.
    SELECT device_id, open_minute_start AS bucket_start, open_minute_sample_count AS sample_count, open_minute_power_sum_watts AS power_sum_watts, open_minute_power_integral_watt_seconds AS power_integral_watt_seconds, open_minute_covered_seconds AS covered_seconds, open_minute_min_power_watts AS min_power_watts, open_minute_peak_power_watts AS peak_power_watts, open_minute_peak_us AS peak_us, open_minute_energy_wh AS energy_wh, open_minute_min_voltage_volts AS min_voltage_volts, open_minute_max_voltage_volts AS max_voltage_volts, open_minute_last_power_watts AS last_power_watts, open_minute_last_us AS last_us
    FROM heads WHERE open_minute_start IS NOT NULL
    UNION ALL
    SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, round(date_part('epoch', peak_at) * 1000000), energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, round(date_part('epoch', last_at) * 1000000) FROM adopted_minute
), minute_sums AS MATERIALIZED (
    -- The delta has one row per outlet and minute: only the minute an outlet had before
    -- needs adding to (a join, not a grouping: the batch's minutes are most of the rows).
    SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, timestamptz 'epoch' + peak_us * interval '1 microsecond' AS peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, timestamptz 'epoch' + last_us * interval '1 microsecond' AS last_at
    FROM (SELECT d.device_id, d.bucket_start, d.sample_count, d.power_sum_watts, d.power_integral_watt_seconds, d.covered_seconds, d.min_power_watts, d.peak_power_watts, d.peak_us, d.energy_wh, d.min_voltage_volts, d.max_voltage_volts, d.last_power_watts, d.last_us FROM delta d
          WHERE NOT EXISTS (SELECT FROM earlier_minutes e
                            WHERE e.device_id = d.device_id AND e.bucket_start = d.bucket_start)
          UNION ALL
          SELECT e.device_id, e.bucket_start, e.sample_count + coalesce(d.sample_count, 0) AS sample_count,
          e.power_sum_watts + coalesce(d.power_sum_watts, 0) AS power_sum_watts,
          e.power_integral_watt_seconds + coalesce(d.power_integral_watt_seconds, 0) AS power_integral_watt_seconds,
          e.covered_seconds + coalesce(d.covered_seconds, 0) AS covered_seconds,
          least(e.min_power_watts, d.min_power_watts) AS min_power_watts,
          greatest(e.peak_power_watts, d.peak_power_watts) AS peak_power_watts,
          CASE WHEN d.peak_power_watts > e.peak_power_watts
                         OR (d.peak_power_watts = e.peak_power_watts AND d.peak_us < e.peak_us) THEN d.peak_us ELSE e.peak_us END AS peak_us,
          e.energy_wh + coalesce(d.energy_wh, 0) AS energy_wh,
          least(e.min_voltage_volts, d.min_voltage_volts) AS min_voltage_volts,
          greatest(e.max_voltage_volts, d.max_voltage_volts) AS max_voltage_volts,
          CASE WHEN d.last_us >= e.last_us THEN d.last_power_watts ELSE e.last_power_watts END AS last_power_watts,
          greatest(e.last_us, d.last_us) AS last_us
          FROM earlier_minutes e
          LEFT JOIN delta d ON d.device_id = e.device_id AND d.bucket_start = e.bucket_start) parts
), hour_sums AS MATERIALIZED (
    SELECT device_id, bucket_start, sum(sample_count) AS sample_count, sum(power_sum_watts) AS power_sum_watts,
           sum(power_integral_watt_seconds) AS power_integral_watt_seconds,
           sum(covered_seconds) AS covered_seconds, min(min_power_watts) AS min_power_watts,
           (max(ARRAY[peak_power_watts, -peak_us]))[1] AS peak_power_watts,
           timestamptz 'epoch' - (max(ARRAY[peak_power_watts, -peak_us]))[2] * interval '1 microsecond' AS peak_at,
           sum(energy_wh) AS energy_wh, min(min_voltage_volts) AS min_voltage_volts,
           max(max_voltage_volts) AS max_voltage_volts,
           (max(ARRAY[last_us, last_power_watts]))[2] AS last_power_watts,
           timestamptz 'epoch' + (max(ARRAY[last_us, last_power_watts]))[1] * interval '1 microsecond' AS last_at
    FROM (SELECT device_id, hour_start AS bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_us, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_us FROM delta
          UNION ALL
          SELECT device_id, open_hour_start, open_hour_sample_count, open_hour_power_sum_watts, open_hour_power_integral_watt_seconds, open_hour_covered_seconds, open_hour_min_power_watts, open_hour_peak_power_watts, open_hour_peak_us, open_hour_energy_wh, open_hour_min_voltage_volts, open_hour_max_voltage_volts, open_hour_last_power_watts, open_hour_last_us FROM heads
          WHERE open_hour_start IS NOT NULL
          UNION ALL
          SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, round(date_part('epoch', peak_at) * 1000000), energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, round(date_part('epoch', last_at) * 1000000) FROM adopted_hourly) parts
    GROUP BY device_id, bucket_start
), day_sums AS MATERIALIZED (
    -- (Grouped by day alone: should the time zone have changed, the day keeps its first start.)
    SELECT device_id, day, min(bucket_start) AS bucket_start, sum(sample_count) AS sample_count, sum(power_sum_watts) AS power_sum_watts,
           sum(power_integral_watt_seconds) AS power_integral_watt_seconds,
           sum(covered_seconds) AS covered_seconds, min(min_power_watts) AS min_power_watts,
           (max(ARRAY[peak_power_watts, -peak_us]))[1] AS peak_power_watts,
           timestamptz 'epoch' - (max(ARRAY[peak_power_watts, -peak_us]))[2] * interval '1 microsecond' AS peak_at,
           sum(energy_wh) AS energy_wh, min(min_voltage_volts) AS min_voltage_volts,
           max(max_voltage_volts) AS max_voltage_volts,
           (max(ARRAY[last_us, last_power_watts]))[2] AS last_power_watts,
           timestamptz 'epoch' + (max(ARRAY[last_us, last_power_watts]))[1] * interval '1 microsecond' AS last_at
    FROM (SELECT device_id, day, day_start AS bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_us, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_us FROM delta
          UNION ALL
          SELECT device_id, open_day_date, open_day_start, open_day_sample_count, open_day_power_sum_watts, open_day_power_integral_watt_seconds, open_day_covered_seconds, open_day_min_power_watts, open_day_peak_power_watts, open_day_peak_us, open_day_energy_wh, open_day_min_voltage_volts, open_day_max_voltage_volts, open_day_last_power_watts, open_day_last_us FROM heads
          WHERE open_day_start IS NOT NULL
          UNION ALL
          SELECT device_id, day, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, round(date_part('epoch', peak_at) * 1000000), energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, round(date_part('epoch', last_at) * 1000000) FROM adopted_daily) parts
    GROUP BY device_id, day
), minutes AS (
    INSERT INTO power_rollups_minute_stored AS m (device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT s.device_id, s.bucket_start, s.sample_count, s.power_sum_watts, s.power_integral_watt_seconds, s.covered_seconds, s.min_power_watts, s.peak_power_watts, s.peak_at, s.energy_wh, s.min_voltage_volts, s.max_voltage_volts, s.last_power_watts, s.last_at
    FROM minute_sums s JOIN heads h ON h.device_id = s.device_id AND h.minute_start <> s.bucket_start
    ORDER BY s.device_id, s.bucket_start
    ON CONFLICT (device_id, bucket_start) DO UPDATE SET sample_count = m.sample_count + coalesce(excluded.sample_count, 0),
    power_sum_watts = m.power_sum_watts + coalesce(excluded.power_sum_watts, 0),
    power_integral_watt_seconds = m.power_integral_watt_seconds + coalesce(excluded.power_integral_watt_seconds, 0),
    covered_seconds = m.covered_seconds + coalesce(excluded.covered_seconds, 0),
    min_power_watts = least(m.min_power_watts, excluded.min_power_watts),
    peak_power_watts = greatest(m.peak_power_watts, excluded.peak_power_watts),
    peak_at = CASE WHEN excluded.peak_power_watts > m.peak_power_watts
                         OR (excluded.peak_power_watts = m.peak_power_watts AND excluded.peak_at < m.peak_at) THEN excluded.peak_at ELSE m.peak_at END,
    energy_wh = m.energy_wh + coalesce(excluded.energy_wh, 0),
    min_voltage_volts = least(m.min_voltage_volts, excluded.min_voltage_volts),
    max_voltage_volts = greatest(m.max_voltage_volts, excluded.max_voltage_volts),
    last_power_watts = CASE WHEN excluded.last_at >= m.last_at THEN excluded.last_power_watts ELSE m.last_power_watts END,
    last_at = greatest(m.last_at, excluded.last_at)
), hours AS (
    INSERT INTO power_rollups_hourly_stored AS r (device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT s.device_id, s.bucket_start, s.sample_count, s.power_sum_watts, s.power_integral_watt_seconds, s.covered_seconds, s.min_power_watts, s.peak_power_watts, s.peak_at, s.energy_wh, s.min_voltage_volts, s.max_voltage_volts, s.last_power_watts, s.last_at
    FROM hour_sums s JOIN heads h ON h.device_id = s.device_id AND h.hour_start <> s.bucket_start
    ORDER BY s.device_id, s.bucket_start
    ON CONFLICT (device_id, bucket_start) DO UPDATE SET sample_count = r.sample_count + coalesce(excluded.sample_count, 0),
    power_sum_watts = r.power_sum_watts + coalesce(excluded.power_sum_watts, 0),
    power_integral_watt_seconds = r.power_integral_watt_seconds + coalesce(excluded.power_integral_watt_seconds, 0),
    covered_seconds = r.covered_seconds + coalesce(excluded.covered_seconds, 0),
    min_power_watts = least(r.min_power_watts, excluded.min_power_watts),
    peak_power_watts = greatest(r.peak_power_watts, excluded.peak_power_watts),
    peak_at = CASE WHEN excluded.peak_power_watts > r.peak_power_watts
                         OR (excluded.peak_power_watts = r.peak_power_watts AND excluded.peak_at < r.peak_at) THEN excluded.peak_at ELSE r.peak_at END,
    energy_wh = r.energy_wh + coalesce(excluded.energy_wh, 0),
    min_voltage_volts = least(r.min_voltage_volts, excluded.min_voltage_volts),
    max_voltage_volts = greatest(r.max_voltage_volts, excluded.max_voltage_volts),
    last_power_watts = CASE WHEN excluded.last_at >= r.last_at THEN excluded.last_power_watts ELSE r.last_power_watts END,
    last_at = greatest(r.last_at, excluded.last_at)
), days AS (
    INSERT INTO power_rollups_daily_stored AS r (device_id, day, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT s.device_id, s.day, s.bucket_start, s.sample_count, s.power_sum_watts, s.power_integral_watt_seconds, s.covered_seconds, s.min_power_watts, s.peak_power_watts, s.peak_at, s.energy_wh, s.min_voltage_volts, s.max_voltage_volts, s.last_power_watts, s.last_at
    FROM day_sums s JOIN heads h ON h.device_id = s.device_id AND h.day <> s.day
    ORDER BY s.device_id, s.day
    ON CONFLICT (device_id, day) DO UPDATE SET sample_count = r.sample_count + coalesce(excluded.sample_count, 0),
    power_sum_watts = r.power_sum_watts + coalesce(excluded.power_sum_watts, 0),
    power_integral_watt_seconds = r.power_integral_watt_seconds + coalesce(excluded.power_integral_watt_seconds, 0),
    covered_seconds = r.covered_seconds + coalesce(excluded.covered_seconds, 0),
    min_power_watts = least(r.min_power_watts, excluded.min_power_watts),
    peak_power_watts = greatest(r.peak_power_watts, excluded.peak_power_watts),
    peak_at = CASE WHEN excluded.peak_power_watts > r.peak_power_watts
                         OR (excluded.peak_power_watts = r.peak_power_watts AND excluded.peak_at < r.peak_at) THEN excluded.peak_at ELSE r.peak_at END,
    energy_wh = r.energy_wh + coalesce(excluded.energy_wh, 0),
    min_voltage_volts = least(r.min_voltage_volts, excluded.min_voltage_volts),
    max_voltage_volts = greatest(r.max_voltage_volts, excluded.max_voltage_volts),
    last_power_watts = CASE WHEN excluded.last_at >= r.last_at THEN excluded.last_power_watts ELSE r.last_power_watts END,
    last_at = greatest(r.last_at, excluded.last_at)
), opened AS (
    SELECT h.device_id, h.has_tail, h.last_at, h.last_power_watts, h.last_energy_wh,
           m.bucket_start AS open_minute_start, m.sample_count AS open_minute_sample_count, m.power_sum_watts AS open_minute_power_sum_watts, m.power_integral_watt_seconds AS open_minute_power_integral_watt_seconds, m.covered_seconds AS open_minute_covered_seconds, m.min_power_watts AS open_minute_min_power_watts, m.peak_power_watts AS open_minute_peak_power_watts, m.peak_at AS open_minute_peak_at, m.energy_wh AS open_minute_energy_wh, m.min_voltage_volts AS open_minute_min_voltage_volts, m.max_voltage_volts AS open_minute_max_voltage_volts, m.last_power_watts AS open_minute_last_power_watts, m.last_at AS open_minute_last_at, o.bucket_start AS open_hour_start, o.sample_count AS open_hour_sample_count, o.power_sum_watts AS open_hour_power_sum_watts, o.power_integral_watt_seconds AS open_hour_power_integral_watt_seconds, o.covered_seconds AS open_hour_covered_seconds, o.min_power_watts AS open_hour_min_power_watts, o.peak_power_watts AS open_hour_peak_power_watts, o.peak_at AS open_hour_peak_at, o.energy_wh AS open_hour_energy_wh, o.min_voltage_volts AS open_hour_min_voltage_volts, o.max_voltage_volts AS open_hour_max_voltage_volts, o.last_power_watts AS open_hour_last_power_watts, o.last_at AS open_hour_last_at,
           d.bucket_start AS open_day_start, d.sample_count AS open_day_sample_count, d.power_sum_watts AS open_day_power_sum_watts, d.power_integral_watt_seconds AS open_day_power_integral_watt_seconds, d.covered_seconds AS open_day_covered_seconds, d.min_power_watts AS open_day_min_power_watts, d.peak_power_watts AS open_day_peak_power_watts, d.peak_at AS open_day_peak_at, d.energy_wh AS open_day_energy_wh, d.min_voltage_volts AS open_day_min_voltage_volts, d.max_voltage_volts AS open_day_max_voltage_volts, d.last_power_watts AS open_day_last_power_watts, d.last_at AS open_day_last_at, d.day AS open_day_date
    FROM heads h
    JOIN minute_sums m ON m.device_id = h.device_id AND m.bucket_start = h.minute_start
    JOIN hour_sums o ON o.device_id = h.device_id AND o.bucket_start = h.hour_start
    JOIN day_sums d ON d.device_id = h.device_id AND d.day = h.day
), moved AS (
    UPDATE rollup_tails t SET (measured_at, power_watts, energy_wh, open_minute_start, open_minute_sample_count, open_minute_power_sum_watts, open_minute_power_integral_watt_seconds, open_minute_covered_seconds, open_minute_min_power_watts, open_minute_peak_power_watts, open_minute_peak_at, open_minute_energy_wh, open_minute_min_voltage_volts, open_minute_max_voltage_volts, open_minute_last_power_watts, open_minute_last_at, open_hour_start, open_hour_sample_count, open_hour_power_sum_watts, open_hour_power_integral_watt_seconds, open_hour_covered_seconds, open_hour_min_power_watts, open_hour_peak_power_watts, open_hour_peak_at, open_hour_energy_wh, open_hour_min_voltage_volts, open_hour_max_voltage_volts, open_hour_last_power_watts, open_hour_last_at, open_day_start, open_day_sample_count, open_day_power_sum_watts, open_day_power_integral_watt_seconds, open_day_covered_seconds, open_day_min_power_watts, open_day_peak_power_watts, open_day_peak_at, open_day_energy_wh, open_day_min_voltage_volts, open_day_max_voltage_volts, open_day_last_power_watts, open_day_last_at, open_day_date) =
        (o.last_at, o.last_power_watts, o.last_energy_wh, o.open_minute_start, o.open_minute_sample_count, o.open_minute_power_sum_watts, o.open_minute_power_integral_watt_seconds, o.open_minute_covered_seconds, o.open_minute_min_power_watts, o.open_minute_peak_power_watts, o.open_minute_peak_at, o.open_minute_energy_wh, o.open_minute_min_voltage_volts, o.open_minute_max_voltage_volts, o.open_minute_last_power_watts, o.open_minute_last_at, o.open_hour_start, o.open_hour_sample_count, o.open_hour_power_sum_watts, o.open_hour_power_integral_watt_seconds, o.open_hour_covered_seconds, o.open_hour_min_power_watts, o.open_hour_peak_power_watts, o.open_hour_peak_at, o.open_hour_energy_wh, o.open_hour_min_voltage_volts, o.open_hour_max_voltage_volts, o.open_hour_last_power_watts, o.open_hour_last_at, o.open_day_start, o.open_day_sample_count, o.open_day_power_sum_watts, o.open_day_power_integral_watt_seconds, o.open_day_covered_seconds, o.open_day_min_power_watts, o.open_day_peak_power_watts, o.open_day_peak_at, o.open_day_energy_wh, o.open_day_min_voltage_volts, o.open_day_max_voltage_volts, o.open_day_last_power_watts, o.open_day_last_at, o.open_day_date)
    FROM opened o
    WHERE o.has_tail AND t.device_id = o.device_id
), added AS (
    INSERT INTO rollup_tails (device_id, measured_at, power_watts, energy_wh, open_minute_start, open_minute_sample_count, open_minute_power_sum_watts, open_minute_power_integral_watt_seconds, open_minute_covered_seconds, open_minute_min_power_watts, open_minute_peak_power_watts, open_minute_peak_at, open_minute_energy_wh, open_minute_min_voltage_volts, open_minute_max_voltage_volts, open_minute_last_power_watts, open_minute_last_at, open_hour_start, open_hour_sample_count, open_hour_power_sum_watts, open_hour_power_integral_watt_seconds, open_hour_covered_seconds, open_hour_min_power_watts, open_hour_peak_power_watts, open_hour_peak_at, open_hour_energy_wh, open_hour_min_voltage_volts, open_hour_max_voltage_volts, open_hour_last_power_watts, open_hour_last_at, open_day_start, open_day_sample_count, open_day_power_sum_watts, open_day_power_integral_watt_seconds, open_day_covered_seconds, open_day_min_power_watts, open_day_peak_power_watts, open_day_peak_at, open_day_energy_wh, open_day_min_voltage_volts, open_day_max_voltage_volts, open_day_last_power_watts, open_day_last_at, open_day_date)
    SELECT device_id, last_at, last_power_watts, last_energy_wh, open_minute_start, open_minute_sample_count, open_minute_power_sum_watts, open_minute_power_integral_watt_seconds, open_minute_covered_seconds, open_minute_min_power_watts, open_minute_peak_power_watts, open_minute_peak_at, open_minute_energy_wh, open_minute_min_voltage_volts, open_minute_max_voltage_volts, open_minute_last_power_watts, open_minute_last_at, open_hour_start, open_hour_sample_count, open_hour_power_sum_watts, open_hour_power_integral_watt_seconds, open_hour_covered_seconds, open_hour_min_power_watts, open_hour_peak_power_watts, open_hour_peak_at, open_hour_energy_wh, open_hour_min_voltage_volts, open_hour_max_voltage_volts, open_hour_last_power_watts, open_hour_last_at, open_day_start, open_day_sample_count, open_day_power_sum_watts, open_day_power_integral_watt_seconds, open_day_covered_seconds, open_day_min_power_watts, open_day_peak_power_watts, open_day_peak_at, open_day_energy_wh, open_day_min_voltage_volts, open_day_max_voltage_volts, open_day_last_power_watts, open_day_last_at, open_day_date
    FROM opened
    WHERE NOT has_tail
)
SELECT coalesce(array_agg(i.device_id ORDER BY i.device_id), '{}')
FROM outletd_inserted_devices i
WHERE NOT EXISTS (SELECT FROM fast f WHERE f.device_id = i.device_id)
