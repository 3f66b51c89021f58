-- outletd schema, migration 10: each outlet's newest minute, hour and day stay open in its
-- rollup_tails row until its data moves past them, so that a batch rewrites one row per outlet.
--
-- Until now a batch upserted, for every outlet in it, its minute, its hour and its day, and moved
-- its tail: four row writes per outlet and batch, about 40 µs together at 10,000 outlets. With a
-- reading every few seconds, each of those rows is rewritten by every batch for a minute, an hour
-- and a day (docs/PERFORMANCE.md, "What limits outletd now").
--
-- Now the minute, hour and day that hold an outlet's newest sample are "open": their measures live
-- in the outlet's rollup_tails row (open_minute_*, open_hour_*, open_day_*), which the batch rewrites
-- anyway. A bucket is written to its table only once the outlet's data has moved past it: when a
-- batch brings a sample of a later minute, the open minute is added to power_rollups_minute_stored
-- and the new minute opens. An open bucket never has a stored row beside it: the write path takes
-- a stored row into the open bucket (and deletes it) when a bucket opens over one.
--
-- The three tables are now power_rollups_*_stored; power_rollups_minute, power_rollups_hourly and
-- power_rollups_daily are views of the stored rows and the open buckets, with the same columns as
-- the tables had, so that every reader sees the exact rollups as of the batch's transaction.
--
-- A late reading, `outletd rollup rebuild`, retention and an outlet losing its tail first close the
-- outlet's open buckets (outletd_rollups_close), then work on the stored tables as before.

-- The open minute, hour and day of each outlet: where each starts and its measures, as in the
-- rollup tables (docs/ROLLUPS.md). A NULL start means no bucket of that size is open; the other
-- columns of that size then mean nothing.
ALTER TABLE rollup_tails
    ADD COLUMN open_minute_start timestamptz,
    ADD COLUMN open_minute_sample_count bigint,
    ADD COLUMN open_minute_power_sum_watts double precision,
    ADD COLUMN open_minute_power_integral_watt_seconds double precision,
    ADD COLUMN open_minute_covered_seconds double precision,
    ADD COLUMN open_minute_min_power_watts double precision,
    ADD COLUMN open_minute_peak_power_watts double precision,
    ADD COLUMN open_minute_peak_at timestamptz,
    ADD COLUMN open_minute_energy_wh double precision,
    ADD COLUMN open_minute_min_voltage_volts double precision,
    ADD COLUMN open_minute_max_voltage_volts double precision,
    ADD COLUMN open_minute_last_power_watts double precision,
    ADD COLUMN open_minute_last_at timestamptz,
    ADD COLUMN open_hour_start timestamptz,
    ADD COLUMN open_hour_sample_count bigint,
    ADD COLUMN open_hour_power_sum_watts double precision,
    ADD COLUMN open_hour_power_integral_watt_seconds double precision,
    ADD COLUMN open_hour_covered_seconds double precision,
    ADD COLUMN open_hour_min_power_watts double precision,
    ADD COLUMN open_hour_peak_power_watts double precision,
    ADD COLUMN open_hour_peak_at timestamptz,
    ADD COLUMN open_hour_energy_wh double precision,
    ADD COLUMN open_hour_min_voltage_volts double precision,
    ADD COLUMN open_hour_max_voltage_volts double precision,
    ADD COLUMN open_hour_last_power_watts double precision,
    ADD COLUMN open_hour_last_at timestamptz,
    ADD COLUMN open_day_start timestamptz,
    ADD COLUMN open_day_date date,
    ADD COLUMN open_day_sample_count bigint,
    ADD COLUMN open_day_power_sum_watts double precision,
    ADD COLUMN open_day_power_integral_watt_seconds double precision,
    ADD COLUMN open_day_covered_seconds double precision,
    ADD COLUMN open_day_min_power_watts double precision,
    ADD COLUMN open_day_peak_power_watts double precision,
    ADD COLUMN open_day_peak_at timestamptz,
    ADD COLUMN open_day_energy_wh double precision,
    ADD COLUMN open_day_min_voltage_volts double precision,
    ADD COLUMN open_day_max_voltage_volts double precision,
    ADD COLUMN open_day_last_power_watts double precision,
    ADD COLUMN open_day_last_at timestamptz;

COMMENT ON TABLE rollup_tails IS
    'Per outlet, its newest sample as the rollups last saw it and its open minute, hour and day; by outletd.';

ALTER TABLE power_rollups_minute RENAME TO power_rollups_minute_stored;
ALTER TABLE power_rollups_hourly RENAME TO power_rollups_hourly_stored;
ALTER TABLE power_rollups_daily RENAME TO power_rollups_daily_stored;
ALTER INDEX power_rollups_minute_pkey RENAME TO power_rollups_minute_stored_pkey;
ALTER INDEX power_rollups_hourly_pkey RENAME TO power_rollups_hourly_stored_pkey;
ALTER INDEX power_rollups_daily_pkey RENAME TO power_rollups_daily_stored_pkey;

COMMENT ON TABLE power_rollups_minute_stored IS
    'Minute rollups except each outlet''s open minute (kept in rollup_tails); read power_rollups_minute.';
COMMENT ON TABLE power_rollups_hourly_stored IS
    'Hourly rollups except each outlet''s open hour (kept in rollup_tails); read power_rollups_hourly.';
COMMENT ON TABLE power_rollups_daily_stored IS
    'Daily rollups except each outlet''s open day (kept in rollup_tails); read power_rollups_daily.';

-- The rollups as readers know them: stored rows and open buckets. Each side of the UNION ALL reads
-- one table and has no WHERE of its own (an outlet with no open bucket is filtered out above), so
-- PostgreSQL merges both into the reading query: a condition on device_id, also a join condition,
-- reaches the primary key of either table.
CREATE VIEW power_rollups_minute AS
SELECT * FROM (
    SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds,
           average_power_watts, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts,
           max_voltage_volts, last_power_watts, last_at
    FROM power_rollups_minute_stored
    UNION ALL
    SELECT device_id, open_minute_start, open_minute_sample_count, open_minute_power_sum_watts,
           open_minute_power_integral_watt_seconds, open_minute_covered_seconds,
           CASE WHEN open_minute_covered_seconds > 0
                THEN open_minute_power_integral_watt_seconds / open_minute_covered_seconds
                ELSE open_minute_power_sum_watts / nullif(open_minute_sample_count, 0) END,
           open_minute_min_power_watts, open_minute_peak_power_watts, open_minute_peak_at,
           open_minute_energy_wh, open_minute_min_voltage_volts, open_minute_max_voltage_volts,
           open_minute_last_power_watts, open_minute_last_at
    FROM rollup_tails
) r
WHERE bucket_start IS NOT NULL;

CREATE VIEW power_rollups_hourly AS
SELECT * FROM (
    SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds,
           average_power_watts, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts,
           max_voltage_volts, last_power_watts, last_at
    FROM power_rollups_hourly_stored
    UNION ALL
    SELECT device_id, open_hour_start, open_hour_sample_count, open_hour_power_sum_watts,
           open_hour_power_integral_watt_seconds, open_hour_covered_seconds,
           CASE WHEN open_hour_covered_seconds > 0
                THEN open_hour_power_integral_watt_seconds / open_hour_covered_seconds
                ELSE open_hour_power_sum_watts / nullif(open_hour_sample_count, 0) END,
           open_hour_min_power_watts, open_hour_peak_power_watts, open_hour_peak_at,
           open_hour_energy_wh, open_hour_min_voltage_volts, open_hour_max_voltage_volts,
           open_hour_last_power_watts, open_hour_last_at
    FROM rollup_tails
) r
WHERE bucket_start IS NOT NULL;

CREATE VIEW power_rollups_daily AS
SELECT * FROM (
    SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds,
           average_power_watts, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts,
           max_voltage_volts, last_power_watts, last_at, day
    FROM power_rollups_daily_stored
    UNION ALL
    SELECT device_id, open_day_start, open_day_sample_count, open_day_power_sum_watts,
           open_day_power_integral_watt_seconds, open_day_covered_seconds,
           CASE WHEN open_day_covered_seconds > 0
                THEN open_day_power_integral_watt_seconds / open_day_covered_seconds
                ELSE open_day_power_sum_watts / nullif(open_day_sample_count, 0) END,
           open_day_min_power_watts, open_day_peak_power_watts, open_day_peak_at,
           open_day_energy_wh, open_day_min_voltage_volts, open_day_max_voltage_volts,
           open_day_last_power_watts, open_day_last_at, open_day_date
    FROM rollup_tails
) r
WHERE bucket_start IS NOT NULL;

COMMENT ON VIEW power_rollups_minute IS 'Per outlet and UTC minute: count, time-weighted average, min, peak and when, energy (Wh), voltage range.';
COMMENT ON VIEW power_rollups_hourly IS 'Per outlet and hour of rollup_settings.time_zone, from the minutes.';
COMMENT ON VIEW power_rollups_daily IS 'Per outlet and local day of rollup_settings.time_zone, from the minutes.';

-- Writes the open buckets of the given outlets to the stored tables (added to a stored row of the
-- same bucket, should there be one) and clears them. Takes the outlets' rollup locks.
CREATE FUNCTION outletd_rollups_close(p_device_ids integer[]) RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_measures  text[] := ARRAY['sample_count', 'power_sum_watts', 'power_integral_watt_seconds', 'covered_seconds',
                                'min_power_watts', 'peak_power_watts', 'peak_at', 'energy_wh', 'min_voltage_volts',
                                'max_voltage_volts', 'last_power_watts', 'last_at'];
    v_level     record;
BEGIN
    PERFORM outletd_lock_devices(p_device_ids);
    FOR v_level IN
        SELECT * FROM (VALUES ('power_rollups_minute_stored', 'open_minute', 'bucket_start', '', ''),
                              ('power_rollups_hourly_stored', 'open_hour', 'bucket_start', '', ''),
                              ('power_rollups_daily_stored', 'open_day', 'day', ', day', ', open_day_date'))
            AS l(table_name, prefix, key_column, extra_column, extra_value)
    LOOP
        EXECUTE format($sql$
            INSERT INTO %1$I AS r (device_id, bucket_start, %2$s %4$s)
            SELECT device_id, %5$I, %6$s %7$s FROM rollup_tails
            WHERE device_id = ANY ($1) AND %5$I IS NOT NULL
            ORDER BY device_id
            ON CONFLICT (device_id, %3$I) DO UPDATE SET
                sample_count = r.sample_count + excluded.sample_count,
                power_sum_watts = r.power_sum_watts + excluded.power_sum_watts,
                power_integral_watt_seconds = r.power_integral_watt_seconds + excluded.power_integral_watt_seconds,
                covered_seconds = r.covered_seconds + excluded.covered_seconds,
                energy_wh = r.energy_wh + excluded.energy_wh,
                min_power_watts = least(r.min_power_watts, excluded.min_power_watts),
                peak_power_watts = greatest(r.peak_power_watts, excluded.peak_power_watts),
                peak_at = CASE WHEN excluded.peak_power_watts > r.peak_power_watts
                                 OR (excluded.peak_power_watts = r.peak_power_watts AND excluded.peak_at < r.peak_at)
                               THEN excluded.peak_at ELSE r.peak_at END,
                min_voltage_volts = least(r.min_voltage_volts, excluded.min_voltage_volts),
                max_voltage_volts = greatest(r.max_voltage_volts, excluded.max_voltage_volts),
                last_power_watts = CASE WHEN excluded.last_at >= r.last_at THEN excluded.last_power_watts
                                        ELSE r.last_power_watts END,
                last_at = greatest(r.last_at, excluded.last_at)
            $sql$, v_level.table_name, array_to_string(v_measures, ', '), v_level.key_column, v_level.extra_column,
            v_level.prefix || '_start',
            (SELECT string_agg(quote_ident(v_level.prefix || '_' || m), ', ') FROM unnest(v_measures) m),
            v_level.extra_value)
        USING p_device_ids;
    END LOOP;
    UPDATE rollup_tails
    SET (open_minute_start, open_hour_start, open_day_start, open_day_date) = (NULL, NULL, NULL, NULL)
    WHERE device_id = ANY (p_device_ids)
      AND (open_minute_start IS NOT NULL OR open_hour_start IS NOT NULL OR open_day_start IS NOT NULL);
END
$$;

---------------------------------------------------------------------------------------------------
-- The functions that write the rollup tables write the stored tables; the late-reading path and
-- the rebuild first close the outlets' open buckets.

-- As in migration 2, on the stored tables. The caller holds the device locks and has closed the
-- outlets' open buckets.
CREATE OR REPLACE FUNCTION outletd_rollups_recompute(p_device_ids integer[], p_minutes timestamptz[]) RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_zone  text;
    v_gap   double precision;
    v_count integer;
BEGIN
    SELECT time_zone, max_gap_seconds INTO v_zone, v_gap FROM rollup_settings;

    INSERT INTO power_rollups_minute_stored AS r (device_id, bucket_start, sample_count, power_sum_watts,
        power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
        min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT * FROM outletd_minute_rollups(p_device_ids, p_minutes, v_gap)
    ORDER BY device_id, bucket_start
    ON CONFLICT (device_id, bucket_start) DO UPDATE SET
        sample_count = excluded.sample_count, power_sum_watts = excluded.power_sum_watts,
        power_integral_watt_seconds = excluded.power_integral_watt_seconds,
        covered_seconds = excluded.covered_seconds, min_power_watts = excluded.min_power_watts,
        peak_power_watts = excluded.peak_power_watts, peak_at = excluded.peak_at, energy_wh = excluded.energy_wh,
        min_voltage_volts = excluded.min_voltage_volts, max_voltage_volts = excluded.max_voltage_volts,
        last_power_watts = excluded.last_power_watts, last_at = excluded.last_at;
    GET DIAGNOSTICS v_count = ROW_COUNT;

    -- Hours, from their minutes (none left: no row).
    DELETE FROM power_rollups_hourly_stored h
    USING (SELECT DISTINCT device_id, outletd_hour_start(bucket_start, v_zone) AS hour_start
           FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    WHERE h.device_id = t.device_id AND h.bucket_start = t.hour_start;
    INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
        power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
        min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT t.device_id, t.hour_start, sum(m.sample_count), sum(m.power_sum_watts),
           sum(m.power_integral_watt_seconds), sum(m.covered_seconds), min(m.min_power_watts),
           max(m.peak_power_watts), (array_agg(m.peak_at ORDER BY m.peak_power_watts DESC, m.peak_at))[1],
           sum(m.energy_wh), min(m.min_voltage_volts), max(m.max_voltage_volts),
           (array_agg(m.last_power_watts ORDER BY m.last_at DESC))[1], max(m.last_at)
    FROM (SELECT DISTINCT device_id, outletd_hour_start(bucket_start, v_zone) AS hour_start
          FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    -- A minute m is in hour bucket h when h = m − (its local minute-of-hour), so h <= m < h + 1 hour.
    JOIN power_rollups_minute_stored m ON m.device_id = t.device_id AND m.bucket_start >= t.hour_start
                               AND m.bucket_start < t.hour_start + interval '1 hour'
                               AND outletd_hour_start(m.bucket_start, v_zone) = t.hour_start
    GROUP BY t.device_id, t.hour_start
    ORDER BY t.device_id, t.hour_start;

    -- Days, from their hours (none left: no row). A local day is a union of local hours in every
    -- zone whose offset changes at a local hour boundary (docs/ROLLUPS.md).
    DELETE FROM power_rollups_daily_stored r
    USING (SELECT DISTINCT device_id, (outletd_hour_start(bucket_start, v_zone) AT TIME ZONE v_zone)::date AS day
           FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    WHERE r.device_id = t.device_id AND r.day = t.day;
    INSERT INTO power_rollups_daily_stored (device_id, day, bucket_start, sample_count, power_sum_watts,
        power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
        min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT t.device_id, t.day, t.day::timestamp AT TIME ZONE v_zone, sum(h.sample_count), sum(h.power_sum_watts),
           sum(h.power_integral_watt_seconds), sum(h.covered_seconds), min(h.min_power_watts),
           max(h.peak_power_watts), (array_agg(h.peak_at ORDER BY h.peak_power_watts DESC, h.peak_at))[1],
           sum(h.energy_wh), min(h.min_voltage_volts), max(h.max_voltage_volts),
           (array_agg(h.last_power_watts ORDER BY h.last_at DESC))[1], max(h.last_at)
    FROM (SELECT DISTINCT device_id, (outletd_hour_start(bucket_start, v_zone) AT TIME ZONE v_zone)::date AS day
          FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    JOIN power_rollups_hourly_stored h ON h.device_id = t.device_id
                               AND h.bucket_start >= (t.day::timestamp AT TIME ZONE v_zone) - interval '3 hours'
                               AND h.bucket_start < ((t.day + 1)::timestamp AT TIME ZONE v_zone) + interval '3 hours'
                               AND (h.bucket_start AT TIME ZONE v_zone)::date = t.day
    GROUP BY t.device_id, t.day
    ORDER BY t.device_id, t.day;

    RETURN v_count;
END
$$;


-- As in migration 2, on the stored tables, after closing the outlets' open buckets: the minutes
-- it recomputes and the hours and days it adds their change to are then all stored rows.
CREATE OR REPLACE FUNCTION outletd_rollups_after_insert(p_device_ids integer[], p_measured_at timestamptz[]) RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_devices  integer[];
    v_minutes  timestamptz[];
    v_zone     text;
    v_gap      double precision;
BEGIN
    PERFORM outletd_lock_devices(p_device_ids);
    PERFORM outletd_rollups_close(p_device_ids);
    -- The sample before a new one is found with one index probe per outlet when the batch's new
    -- samples of that outlet are all the samples in their time range (the usual case: new data in
    -- order), and with one probe per new sample otherwise (late readings among stored ones).
    WITH inserted AS (
        SELECT * FROM unnest(p_device_ids, p_measured_at) AS i(device_id, measured_at)
    ), per_device AS (
        SELECT device_id, min(measured_at) AS first_at, max(measured_at) AS last_at, count(*) AS inserted_count
        FROM inserted GROUP BY device_id
    ), interleaved AS (
        SELECT p.device_id FROM per_device p
        WHERE (SELECT count(*) FROM samples s
               WHERE s.device_id = p.device_id AND s.measured_at >= p.first_at AND s.measured_at <= p.last_at)
              > p.inserted_count
    ), probes AS (
        SELECT device_id, first_at AS measured_at FROM per_device
        UNION
        SELECT i.device_id, i.measured_at FROM inserted i JOIN interleaved USING (device_id)
    ), touched AS (
        SELECT device_id, measured_at FROM inserted
        UNION ALL
        SELECT p.device_id, b.measured_at
        FROM probes p
        CROSS JOIN LATERAL (
            SELECT s.measured_at FROM samples s
            WHERE s.device_id = p.device_id AND s.measured_at < p.measured_at
            ORDER BY s.measured_at DESC LIMIT 1
        ) b
    )
    SELECT array_agg(device_id), array_agg(minute) INTO v_devices, v_minutes
    FROM (SELECT DISTINCT device_id, date_trunc('minute', measured_at, 'UTC') AS minute FROM touched) m;
    SELECT time_zone, max_gap_seconds INTO v_zone, v_gap FROM rollup_settings;

    -- Minutes are written as recomputed. Hours and days get the change of their touched minutes:
    -- sums by difference (new minute − old minute), extremes and "last" by comparison. That is
    -- exact here because the write path only adds samples: a minute's minimum can only fall, its
    -- peak only rise (the earliest time at the peak only move earlier), its last sample only move
    -- later. (The rebuild, which may also remove, recomputes hours and days whole instead.)
    WITH fresh AS MATERIALIZED (
        SELECT f.*, outletd_hour_start(f.bucket_start, v_zone) AS hour_start
        FROM outletd_minute_rollups(v_devices, v_minutes, v_gap) f
    ), old AS (
        SELECT m.* FROM power_rollups_minute_stored m JOIN fresh f USING (device_id, bucket_start)
    ), minutes AS (
        INSERT INTO power_rollups_minute_stored AS r (device_id, bucket_start, sample_count, power_sum_watts,
            power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
            min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
        SELECT device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds,
               min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts,
               last_power_watts, last_at
        FROM fresh
        ORDER BY device_id, bucket_start
        ON CONFLICT (device_id, bucket_start) DO UPDATE SET
            sample_count = excluded.sample_count, power_sum_watts = excluded.power_sum_watts,
            power_integral_watt_seconds = excluded.power_integral_watt_seconds,
            covered_seconds = excluded.covered_seconds, min_power_watts = excluded.min_power_watts,
            peak_power_watts = excluded.peak_power_watts, peak_at = excluded.peak_at, energy_wh = excluded.energy_wh,
            min_voltage_volts = excluded.min_voltage_volts, max_voltage_volts = excluded.max_voltage_volts,
            last_power_watts = excluded.last_power_watts, last_at = excluded.last_at
    ), change AS MATERIALIZED (
        SELECT f.device_id, f.hour_start, (f.hour_start AT TIME ZONE v_zone)::date AS day,
               f.sample_count - coalesce(o.sample_count, 0) AS sample_count,
               f.power_sum_watts - coalesce(o.power_sum_watts, 0) AS power_sum_watts,
               f.power_integral_watt_seconds - coalesce(o.power_integral_watt_seconds, 0) AS power_integral_watt_seconds,
               f.covered_seconds - coalesce(o.covered_seconds, 0) AS covered_seconds,
               f.energy_wh - coalesce(o.energy_wh, 0) AS energy_wh,
               f.min_power_watts, f.peak_power_watts, f.peak_at, f.min_voltage_volts, f.max_voltage_volts,
               f.last_power_watts, f.last_at
        FROM fresh f LEFT JOIN old o USING (device_id, bucket_start)
    ), hours AS (
        INSERT INTO power_rollups_hourly_stored AS h (device_id, bucket_start, sample_count, power_sum_watts,
            power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
            min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
        SELECT device_id, hour_start, sum(sample_count), sum(power_sum_watts), sum(power_integral_watt_seconds),
               sum(covered_seconds), min(min_power_watts), max(peak_power_watts),
               (array_agg(peak_at ORDER BY peak_power_watts DESC, peak_at))[1], sum(energy_wh),
               min(min_voltage_volts), max(max_voltage_volts),
               (array_agg(last_power_watts ORDER BY last_at DESC))[1], max(last_at)
        FROM change
        GROUP BY device_id, hour_start
        ORDER BY device_id, hour_start
        ON CONFLICT (device_id, bucket_start) DO UPDATE SET
            sample_count = h.sample_count + excluded.sample_count,
            power_sum_watts = h.power_sum_watts + excluded.power_sum_watts,
            power_integral_watt_seconds = h.power_integral_watt_seconds + excluded.power_integral_watt_seconds,
            covered_seconds = h.covered_seconds + excluded.covered_seconds,
            energy_wh = h.energy_wh + excluded.energy_wh,
            min_power_watts = least(h.min_power_watts, excluded.min_power_watts),
            peak_power_watts = greatest(h.peak_power_watts, excluded.peak_power_watts),
            peak_at = CASE WHEN excluded.peak_power_watts > h.peak_power_watts
                             OR (excluded.peak_power_watts = h.peak_power_watts AND excluded.peak_at < h.peak_at)
                           THEN excluded.peak_at ELSE h.peak_at END,
            min_voltage_volts = least(h.min_voltage_volts, excluded.min_voltage_volts),
            max_voltage_volts = greatest(h.max_voltage_volts, excluded.max_voltage_volts),
            last_power_watts = CASE WHEN excluded.last_at >= h.last_at THEN excluded.last_power_watts
                                    ELSE h.last_power_watts END,
            last_at = greatest(h.last_at, excluded.last_at)
    )
    INSERT INTO power_rollups_daily_stored AS d (device_id, day, bucket_start, sample_count, power_sum_watts,
        power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
        min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT device_id, day, day::timestamp AT TIME ZONE v_zone, sum(sample_count), sum(power_sum_watts),
           sum(power_integral_watt_seconds), sum(covered_seconds), min(min_power_watts), max(peak_power_watts),
           (array_agg(peak_at ORDER BY peak_power_watts DESC, peak_at))[1], sum(energy_wh),
           min(min_voltage_volts), max(max_voltage_volts),
           (array_agg(last_power_watts ORDER BY last_at DESC))[1], max(last_at)
    FROM change
    GROUP BY device_id, day
    ORDER BY device_id, day
    ON CONFLICT (device_id, day) DO UPDATE SET
        sample_count = d.sample_count + excluded.sample_count,
        power_sum_watts = d.power_sum_watts + excluded.power_sum_watts,
        power_integral_watt_seconds = d.power_integral_watt_seconds + excluded.power_integral_watt_seconds,
        covered_seconds = d.covered_seconds + excluded.covered_seconds,
        energy_wh = d.energy_wh + excluded.energy_wh,
        min_power_watts = least(d.min_power_watts, excluded.min_power_watts),
        peak_power_watts = greatest(d.peak_power_watts, excluded.peak_power_watts),
        peak_at = CASE WHEN excluded.peak_power_watts > d.peak_power_watts
                         OR (excluded.peak_power_watts = d.peak_power_watts AND excluded.peak_at < d.peak_at)
                       THEN excluded.peak_at ELSE d.peak_at END,
        min_voltage_volts = least(d.min_voltage_volts, excluded.min_voltage_volts),
        max_voltage_volts = greatest(d.max_voltage_volts, excluded.max_voltage_volts),
        last_power_watts = CASE WHEN excluded.last_at >= d.last_at THEN excluded.last_power_watts
                                ELSE d.last_power_watts END,
        last_at = greatest(d.last_at, excluded.last_at);
    RETURN cardinality(v_minutes);
END
$$;


-- As in migration 9, after closing the outlet's open buckets.
CREATE OR REPLACE FUNCTION outletd_rollups_rebuild(p_device_id integer, p_from timestamptz, p_to timestamptz)
RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_minutes  timestamptz[];
BEGIN
    PERFORM outletd_lock_devices(ARRAY[p_device_id]);
    PERFORM outletd_rollups_close(ARRAY[p_device_id]);
    DELETE FROM rollup_tails WHERE device_id = p_device_id;
    INSERT INTO rollup_tails (device_id, measured_at, power_watts, energy_wh)
    SELECT device_id, measured_at, power_watts, energy_wh FROM samples
    WHERE device_id = p_device_id ORDER BY measured_at DESC LIMIT 1;
    SELECT array_agg(minute) INTO v_minutes FROM (
        SELECT date_trunc('minute', measured_at, 'UTC') AS minute FROM samples
        WHERE device_id = p_device_id AND measured_at >= p_from AND measured_at < p_to
        UNION
        SELECT bucket_start FROM power_rollups_minute_stored
        WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to
    ) m;
    IF v_minutes IS NULL THEN
        RETURN 0;
    END IF;
    -- Minutes that no longer have samples disappear; the others are written again.
    DELETE FROM power_rollups_minute_stored
    WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to;
    RETURN outletd_rollups_recompute(array_fill(p_device_id, ARRAY[cardinality(v_minutes)]), v_minutes);
END
$$;

-- As in migration 9: a tail whose sample's partition is gone goes too, after its open buckets are
-- written to the stored tables.
CREATE OR REPLACE FUNCTION outletd_drop_sample_partitions(p_before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    v_partition  record;
    v_devices    integer[];
BEGIN
    FOR v_partition IN
        SELECT schema_name, partition_name FROM sample_partitions
        WHERE starts_at + interval '1 day' <= p_before ORDER BY day
    LOOP
        EXECUTE format('DROP TABLE %I.%I', v_partition.schema_name, v_partition.partition_name);
        RETURN NEXT v_partition.partition_name;
    END LOOP;
    SELECT array_agg(device_id) INTO v_devices FROM rollup_tails
    WHERE measured_at < coalesce((SELECT min(starts_at) FROM sample_partitions), 'infinity');
    IF v_devices IS NOT NULL THEN
        PERFORM outletd_rollups_close(v_devices);
        DELETE FROM rollup_tails WHERE device_id = ANY (v_devices);
    END IF;
END
$$;

-- An outlet removed from the registry takes its rollups, its tail and its open buckets with it.
CREATE OR REPLACE FUNCTION outletd_devices_drop_rollups() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM power_rollups_minute_stored WHERE device_id = OLD.id;
    DELETE FROM power_rollups_hourly_stored WHERE device_id = OLD.id;
    DELETE FROM power_rollups_daily_stored WHERE device_id = OLD.id;
    DELETE FROM rollup_tails WHERE device_id = OLD.id;
    RETURN NULL;
END
$$;

---------------------------------------------------------------------------------------------------
-- The dashboard views read the rollup views again (renaming the tables had moved them onto the
-- stored tables). Definitions as in migrations 2 and 5.

CREATE OR REPLACE VIEW outlet_power_hourly AS
SELECT d.code, d.name, h.bucket_start, h.sample_count, h.average_power_watts, h.min_power_watts,
       h.peak_power_watts, h.peak_at, h.energy_wh, h.min_voltage_volts, h.max_voltage_volts
FROM power_rollups_hourly h
JOIN devices d ON d.id = h.device_id;

-- Daily power and energy of every outlet, by local day.
CREATE OR REPLACE VIEW outlet_power_daily AS
SELECT d.code, d.name, r.day, r.bucket_start, r.sample_count, r.average_power_watts, r.min_power_watts,
       r.peak_power_watts, r.peak_at, r.energy_wh, r.min_voltage_volts, r.max_voltage_volts
FROM power_rollups_daily r
JOIN devices d ON d.id = r.device_id;

CREATE OR REPLACE VIEW outlet_overview AS
WITH local AS (
    SELECT (now() AT TIME ZONE time_zone)::date AS today,
           date_trunc('month', now() AT TIME ZONE time_zone)::date AS month_start
    FROM rollup_settings
)
SELECT d.code,
       d.name,
       d.enabled,
       d.online                    AS online,
       d.reported_state            AS state,
       last.last_power_watts,
       last.last_at                AS last_reading_at,
       today.average_power_watts   AS average_power_today_watts,
       today.peak_power_watts      AS peak_power_today_watts,
       today.peak_at               AS peak_today_at,
       coalesce(today.energy_wh, 0) AS energy_today_wh,
       coalesce(month.energy_wh, 0) AS energy_month_wh
FROM devices d
CROSS JOIN local
LEFT JOIN power_rollups_daily today ON today.device_id = d.id AND today.day = local.today
LEFT JOIN LATERAL (
    SELECT m.last_power_watts, m.last_at FROM power_rollups_minute m
    WHERE m.device_id = d.id ORDER BY m.bucket_start DESC LIMIT 1
) last ON true
LEFT JOIN LATERAL (
    SELECT sum(r.energy_wh) AS energy_wh FROM power_rollups_daily r
    WHERE r.device_id = d.id AND r.day >= local.month_start AND r.day <= local.today
) month ON true;

CREATE OR REPLACE VIEW outlet_top_consumers AS
WITH local AS (
    SELECT (now() AT TIME ZONE time_zone)::date AS today,
           date_trunc('month', now() AT TIME ZONE time_zone)::date AS month_start
    FROM rollup_settings
)
SELECT d.code,
       d.name,
       coalesce(sum(r.energy_wh) FILTER (WHERE r.day = local.today), 0)            AS energy_today_wh,
       coalesce(sum(r.energy_wh) FILTER (WHERE r.day > local.today - 7), 0)        AS energy_7d_wh,
       coalesce(sum(r.energy_wh) FILTER (WHERE r.day >= local.month_start), 0)     AS energy_month_wh
FROM devices d
CROSS JOIN local
LEFT JOIN power_rollups_daily r ON r.device_id = d.id
                               AND r.day >= least(local.month_start, local.today - 6) AND r.day <= local.today
GROUP BY d.code, d.name;
