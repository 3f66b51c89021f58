-- outletd schema, migration 2: raw samples partitioned by day, power rollups at 1 minute, 1 hour
-- and 1 day, the functions that maintain them, retention, and the dashboard views.
--
-- How the rollups are defined and maintained: docs/ROLLUPS.md. In short: the samples of an outlet,
-- in time order, form segments (one sample to the next). A segment belongs to the bucket of the
-- sample it starts at. Energy of a segment: the counter difference when both ends carry the
-- outlet's cumulative counter (a decrease is a reset: the new reading is what was counted since),
-- else the trapezoid of the two powers over the segment's duration when that is at most
-- rollup_settings.max_gap_seconds, else nothing. The time-weighted average power of a bucket is
-- the trapezoid integral over its covered segments divided by their duration (the plain mean of
-- its samples when no segment is covered). A minute bucket is recomputed from the raw samples
-- whenever a row is inserted into it, or into the segment that starts in it; the change of those
-- minutes is carried into their hours and days (a rebuild recomputes hours from minutes, days from
-- hours). Everything in the batch transaction, from rows really inserted.

-- Settings the SQL needs, written by `outletd run` from rollups.time_zone and
-- rollups.max_gap_seconds. Changing either calls for `outletd rollup rebuild`.
CREATE TABLE rollup_settings (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    time_zone        text NOT NULL DEFAULT 'UTC',
    max_gap_seconds  double precision NOT NULL DEFAULT 600 CHECK (max_gap_seconds > 0)
);

INSERT INTO rollup_settings DEFAULT VALUES;

COMMENT ON TABLE rollup_settings IS 'Day boundary time zone and maximum integration gap (seconds) of the rollups.';

---------------------------------------------------------------------------------------------------
-- Raw samples, partitioned by range on measured_at: one partition per UTC day, named
-- samples_pYYYYMMDD. The existing rows move into the partitioned table.

ALTER TABLE samples RENAME TO samples_unpartitioned;
ALTER INDEX samples_pkey RENAME TO samples_unpartitioned_pkey;

CREATE TABLE samples (
    device_id        integer NOT NULL,
    measured_at      timestamptz NOT NULL,        -- device time when within the accepted window, else received_at
    received_at      timestamptz NOT NULL,        -- when outletd received the message
    device_time      timestamptz,                 -- what the device said, even when not trusted
    voltage_volts    double precision,
    current_amperes  double precision,
    power_watts      double precision NOT NULL,   -- active power; voltage × current when not reported
    power_factor     double precision,
    energy_wh        double precision,            -- the outlet's cumulative counter, as reported
    seq              bigint,                      -- the outlet's message sequence number
    PRIMARY KEY (device_id, measured_at)
) PARTITION BY RANGE (measured_at);

COMMENT ON TABLE samples IS 'Raw readings, one partition per UTC day; dashboards read the rollups and views instead.';

-- Creates the missing daily partitions for the given days (days since 1970-01-01, UTC). Called by
-- the writer for the days of every batch, and by the maintenance task for the days ahead.
-- Returns how many it created.
CREATE FUNCTION outletd_ensure_sample_partitions(p_days integer[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day      date;
    v_name     text;
    v_schema   text := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE c.oid = 'samples'::regclass);
    v_created  integer := 0;
BEGIN
    FOR v_day IN SELECT DISTINCT date '1970-01-01' + d FROM unnest(p_days) AS d WHERE d IS NOT NULL ORDER BY 1 LOOP
        v_name := 'samples_p' || to_char(v_day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('%I.%I', v_schema, v_name)) IS NOT NULL;
        -- Serialises creators (writer, maintenance task, other instances).
        PERFORM pg_advisory_xact_lock(1869903988, 1);
        CONTINUE WHEN to_regclass(format('%I.%I', v_schema, v_name)) IS NOT NULL;
        EXECUTE format(
            'CREATE TABLE %I.%I PARTITION OF %I.samples FOR VALUES FROM (%L) TO (%L)',
            v_schema, v_name, v_schema,
            to_char(v_day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(v_day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END
$$;

-- The daily partitions of samples, oldest first.
CREATE VIEW sample_partitions AS
SELECT n.nspname::text                                                            AS schema_name,
       c.relname::text                                                            AS partition_name,
       to_date(substr(c.relname, 10), 'YYYYMMDD')                                 AS day,
       to_date(substr(c.relname, 10), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC'   AS starts_at
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.inhparent = 'samples'::regclass AND c.relname ~ '^samples_p[0-9]{8}$';

-- Drops the partitions whose whole day ended at or before p_before. Returns their names.
CREATE FUNCTION outletd_drop_sample_partitions(p_before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    v_partition record;
BEGIN
    FOR v_partition IN
        SELECT schema_name, partition_name FROM sample_partitions
        WHERE starts_at + interval '1 day' <= p_before ORDER BY day
    LOOP
        EXECUTE format('DROP TABLE %I.%I', v_partition.schema_name, v_partition.partition_name);
        RETURN NEXT v_partition.partition_name;
    END LOOP;
END
$$;

SELECT outletd_ensure_sample_partitions(
    ARRAY(SELECT DISTINCT (measured_at AT TIME ZONE 'UTC')::date - date '1970-01-01' FROM samples_unpartitioned)
    || ARRAY(SELECT (now() AT TIME ZONE 'UTC')::date - date '1970-01-01' + d FROM generate_series(-1, 3) AS d));

INSERT INTO samples SELECT * FROM samples_unpartitioned;
DROP TABLE samples_unpartitioned;

---------------------------------------------------------------------------------------------------
-- Rollups. The three tables have the same measures; see the header for their definitions.
--   power_integral_watt_seconds  ∫ power dt over the covered segments (trapezoid), W·s
--   covered_seconds              duration of the segments no longer than the maximum gap, s
--   average_power_watts          time-weighted: integral / covered (mean of the samples when 0 s)

CREATE TABLE power_rollups_minute (
    device_id                    integer NOT NULL,
    bucket_start                 timestamptz NOT NULL,
    sample_count                 bigint NOT NULL,
    power_sum_watts              double precision NOT NULL,
    power_integral_watt_seconds  double precision NOT NULL,
    covered_seconds              double precision NOT NULL,
    average_power_watts          double precision GENERATED ALWAYS AS (
        CASE WHEN covered_seconds > 0 THEN power_integral_watt_seconds / covered_seconds
             ELSE power_sum_watts / nullif(sample_count, 0) END) STORED,
    min_power_watts              double precision NOT NULL,
    peak_power_watts             double precision NOT NULL,
    peak_at                      timestamptz NOT NULL,
    energy_wh                    double precision NOT NULL,
    min_voltage_volts            double precision,
    max_voltage_volts            double precision,
    last_power_watts             double precision NOT NULL,
    last_at                      timestamptz NOT NULL,
    PRIMARY KEY (device_id, bucket_start)
) WITH (fillfactor = 80);  -- room for HOT updates: a bucket is rewritten by every batch touching it

CREATE INDEX power_rollups_minute_bucket_start ON power_rollups_minute (bucket_start);

-- Hours of the configured time zone: the minute minus its local minute-of-hour, so a half-hour
-- zone (Asia/Kolkata) gets :30 UTC hours, and the repeated hour of a DST change is two buckets.
CREATE TABLE power_rollups_hourly (LIKE power_rollups_minute INCLUDING GENERATED INCLUDING CONSTRAINTS,
                                   PRIMARY KEY (device_id, bucket_start)) WITH (fillfactor = 80);

-- Days of the configured time zone (23, 24 or 25 hours long across DST changes).
CREATE TABLE power_rollups_daily (LIKE power_rollups_minute INCLUDING GENERATED INCLUDING CONSTRAINTS,
                                  day date NOT NULL,
                                  PRIMARY KEY (device_id, day)) WITH (fillfactor = 80);

CREATE INDEX power_rollups_hourly_bucket_start ON power_rollups_hourly (bucket_start);
CREATE INDEX power_rollups_daily_day ON power_rollups_daily (day);

COMMENT ON TABLE power_rollups_minute IS 'Per outlet and UTC minute: count, time-weighted average, min, peak and when, energy (Wh), voltage range.';
COMMENT ON TABLE power_rollups_hourly IS 'Per outlet and hour of rollup_settings.time_zone, from the minutes.';
COMMENT ON TABLE power_rollups_daily IS 'Per outlet and local day of rollup_settings.time_zone, from the minutes.';

-- The hour bucket of a minute, in the given zone.
CREATE FUNCTION outletd_hour_start(p_minute timestamptz, p_zone text) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT p_minute - make_interval(mins => extract(minute FROM p_minute AT TIME ZONE p_zone)::integer)
$$;

-- The minute rollups of the given (outlet, minute) pairs, computed from the raw samples: their
-- samples plus the first sample after each run of touched minutes (touched minutes of an outlet
-- less than 10 minutes apart form a run: one index range scan per run instead of two probes per
-- minute; untouched minutes inside a run come out too, with the same values they have).
CREATE FUNCTION outletd_minute_rollups(p_device_ids integer[], p_minutes timestamptz[],
                                       p_max_gap_seconds double precision)
RETURNS TABLE (device_id integer, bucket_start timestamptz, sample_count bigint, power_sum_watts double precision,
               power_integral_watt_seconds double precision, covered_seconds double precision,
               min_power_watts double precision, peak_power_watts double precision, peak_at timestamptz,
               energy_wh double precision, min_voltage_volts double precision, max_voltage_volts double precision,
               last_power_watts double precision, last_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT device_id, bucket_start, count(*), sum(power_watts),
           coalesce(sum((power_watts + next_power) / 2 * seconds) FILTER (WHERE seconds <= p_max_gap_seconds), 0),
           coalesce(sum(seconds) FILTER (WHERE seconds <= p_max_gap_seconds), 0),
           min(power_watts), max(power_watts),
           (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1],
           coalesce(sum(CASE
               WHEN energy_wh IS NOT NULL AND next_energy IS NOT NULL
                   THEN CASE WHEN next_energy >= energy_wh THEN next_energy - energy_wh ELSE next_energy END
               WHEN seconds <= p_max_gap_seconds THEN (power_watts + next_power) / 2 * seconds / 3600
               ELSE 0 END), 0),
           min(voltage_volts), max(voltage_volts),
           (array_agg(power_watts ORDER BY measured_at DESC))[1], max(measured_at)
    FROM (
        SELECT p.*,
               extract(epoch FROM lead(p.measured_at) OVER w - p.measured_at)::double precision AS seconds,
               lead(p.power_watts) OVER w AS next_power,
               lead(p.energy_wh) OVER w AS next_energy
        FROM (
            SELECT r.device_id, date_trunc('minute', s.measured_at, 'UTC') AS bucket_start, s.*
            FROM (
                SELECT device_id, min(bucket_start) AS run_start, max(bucket_start) + interval '1 minute' AS run_end
                FROM (
                    SELECT device_id, bucket_start,
                           count(*) FILTER (WHERE gap) OVER (PARTITION BY device_id ORDER BY bucket_start) AS run
                    FROM (
                        SELECT device_id, bucket_start,
                               coalesce(bucket_start - lag(bucket_start) OVER (PARTITION BY device_id ORDER BY bucket_start)
                                        > interval '10 minutes', true) AS gap
                        FROM (SELECT DISTINCT * FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
                    ) g
                ) numbered
                GROUP BY device_id, run
            ) r
            CROSS JOIN LATERAL (
                (SELECT measured_at, power_watts, voltage_volts, energy_wh, false AS is_next
                 FROM samples
                 WHERE device_id = r.device_id AND measured_at >= r.run_start AND measured_at < r.run_end)
                UNION ALL
                (SELECT measured_at, power_watts, voltage_volts, energy_wh, true
                 FROM samples
                 WHERE device_id = r.device_id AND measured_at >= r.run_end
                 ORDER BY measured_at LIMIT 1)
            ) s
        ) p
        WINDOW w AS (PARTITION BY p.device_id ORDER BY p.measured_at)
    ) segments
    WHERE NOT is_next
    GROUP BY device_id, bucket_start
$$;

-- Recomputes the given minute buckets from the raw samples, then the hours and days that contain
-- them from their minutes. The caller holds the device locks (outletd_lock_devices).
-- (JIT off: these run in every batch, and compiling a plan costs more than running it.)
CREATE FUNCTION outletd_rollups_recompute(p_device_ids integer[], p_minutes timestamptz[]) RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_zone  text;
    v_gap   double precision;
    v_count integer;
BEGIN
    SELECT time_zone, max_gap_seconds INTO v_zone, v_gap FROM rollup_settings;

    INSERT INTO power_rollups_minute AS r (device_id, bucket_start, sample_count, power_sum_watts,
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
    DELETE FROM power_rollups_hourly h
    USING (SELECT DISTINCT device_id, outletd_hour_start(bucket_start, v_zone) AS hour_start
           FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    WHERE h.device_id = t.device_id AND h.bucket_start = t.hour_start;
    INSERT INTO power_rollups_hourly (device_id, bucket_start, sample_count, power_sum_watts,
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
    JOIN power_rollups_minute m ON m.device_id = t.device_id AND m.bucket_start >= t.hour_start
                               AND m.bucket_start < t.hour_start + interval '1 hour'
                               AND outletd_hour_start(m.bucket_start, v_zone) = t.hour_start
    GROUP BY t.device_id, t.hour_start
    ORDER BY t.device_id, t.hour_start;

    -- Days, from their hours (none left: no row). A local day is a union of local hours in every
    -- zone whose offset changes at a local hour boundary (docs/ROLLUPS.md).
    DELETE FROM power_rollups_daily r
    USING (SELECT DISTINCT device_id, (outletd_hour_start(bucket_start, v_zone) AT TIME ZONE v_zone)::date AS day
           FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    WHERE r.device_id = t.device_id AND r.day = t.day;
    INSERT INTO power_rollups_daily (device_id, day, bucket_start, sample_count, power_sum_watts,
        power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
        min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT t.device_id, t.day, t.day::timestamp AT TIME ZONE v_zone, sum(h.sample_count), sum(h.power_sum_watts),
           sum(h.power_integral_watt_seconds), sum(h.covered_seconds), min(h.min_power_watts),
           max(h.peak_power_watts), (array_agg(h.peak_at ORDER BY h.peak_power_watts DESC, h.peak_at))[1],
           sum(h.energy_wh), min(h.min_voltage_volts), max(h.max_voltage_volts),
           (array_agg(h.last_power_watts ORDER BY h.last_at DESC))[1], max(h.last_at)
    FROM (SELECT DISTINCT device_id, (outletd_hour_start(bucket_start, v_zone) AT TIME ZONE v_zone)::date AS day
          FROM unnest(p_device_ids, p_minutes) AS u(device_id, bucket_start)) t
    JOIN power_rollups_hourly h ON h.device_id = t.device_id
                               AND h.bucket_start >= (t.day::timestamp AT TIME ZONE v_zone) - interval '3 hours'
                               AND h.bucket_start < ((t.day + 1)::timestamp AT TIME ZONE v_zone) + interval '3 hours'
                               AND (h.bucket_start AT TIME ZONE v_zone)::date = t.day
    GROUP BY t.device_id, t.day
    ORDER BY t.device_id, t.day;

    RETURN v_count;
END
$$;

-- Serialises rollup maintenance per outlet (writers of several instances, `rollup rebuild`), in
-- device order so that two transactions never wait for each other in a circle. Each following
-- statement of the caller then sees every sample committed before the lock was granted.
CREATE FUNCTION outletd_lock_devices(p_device_ids integer[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1869903988, d)
    FROM (SELECT DISTINCT d FROM unnest(p_device_ids) AS d WHERE d IS NOT NULL ORDER BY d) ordered;
END
$$;

-- The write path, after inserting samples: recompute the minute of every inserted sample and the
-- minute of the sample before it (whose segment the new one split), and carry the change of those
-- minutes into their hours and days.
CREATE FUNCTION outletd_rollups_after_insert(p_device_ids integer[], p_measured_at timestamptz[]) RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_devices  integer[];
    v_minutes  timestamptz[];
    v_zone     text;
    v_gap      double precision;
BEGIN
    PERFORM outletd_lock_devices(p_device_ids);
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
        SELECT m.* FROM power_rollups_minute m JOIN fresh f USING (device_id, bucket_start)
    ), minutes AS (
        INSERT INTO power_rollups_minute AS r (device_id, bucket_start, sample_count, power_sum_watts,
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
        INSERT INTO power_rollups_hourly AS h (device_id, bucket_start, sample_count, power_sum_watts,
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
    INSERT INTO power_rollups_daily AS d (device_id, day, bucket_start, sample_count, power_sum_watts,
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

-- `outletd rollup rebuild`: recomputes one outlet's rollups for minutes in [p_from, p_to) from the
-- raw samples (minute rows there without samples are removed), and the hours and days around them.
CREATE FUNCTION outletd_rollups_rebuild(p_device_id integer, p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_minutes  timestamptz[];
BEGIN
    PERFORM outletd_lock_devices(ARRAY[p_device_id]);
    SELECT array_agg(minute) INTO v_minutes FROM (
        SELECT date_trunc('minute', measured_at, 'UTC') AS minute FROM samples
        WHERE device_id = p_device_id AND measured_at >= p_from AND measured_at < p_to
        UNION
        SELECT bucket_start FROM power_rollups_minute
        WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to
    ) m;
    IF v_minutes IS NULL THEN
        RETURN 0;
    END IF;
    -- Minutes that no longer have samples disappear; the others are written again.
    DELETE FROM power_rollups_minute
    WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to;
    RETURN outletd_rollups_recompute(array_fill(p_device_id, ARRAY[cardinality(v_minutes)]), v_minutes);
END
$$;

-- An outlet removed from the registry takes its rollups with it.
CREATE FUNCTION outletd_devices_drop_rollups() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM power_rollups_minute WHERE device_id = OLD.id;
    DELETE FROM power_rollups_hourly WHERE device_id = OLD.id;
    DELETE FROM power_rollups_daily WHERE device_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_drop_rollups AFTER DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_drop_rollups();

-- The samples that were already there get their rollups.
SELECT outletd_rollups_rebuild(id, '-infinity', 'infinity') FROM devices ORDER BY id;

---------------------------------------------------------------------------------------------------
-- Views for dashboards (README, "Dashboards"). They read rollups only, never the raw samples.

-- Hourly power of every outlet: the original app's chart is this, for one code, over 24 hours.
CREATE VIEW outlet_power_hourly AS
SELECT d.code, d.name, h.bucket_start, h.sample_count, h.average_power_watts, h.min_power_watts,
       h.peak_power_watts, h.peak_at, h.energy_wh, h.min_voltage_volts, h.max_voltage_volts
FROM power_rollups_hourly h
JOIN devices d ON d.id = h.device_id;

-- Daily power and energy of every outlet, by local day.
CREATE VIEW outlet_power_daily AS
SELECT d.code, d.name, r.day, r.bucket_start, r.sample_count, r.average_power_watts, r.min_power_watts,
       r.peak_power_watts, r.peak_at, r.energy_wh, r.min_voltage_volts, r.max_voltage_volts
FROM power_rollups_daily r
JOIN devices d ON d.id = r.device_id;

-- One row per outlet. `online` and `state` are NULL until device state is tracked (commands issue).
CREATE VIEW outlet_overview AS
WITH local AS (
    SELECT (now() AT TIME ZONE time_zone)::date AS today,
           date_trunc('month', now() AT TIME ZONE time_zone)::date AS month_start
    FROM rollup_settings
)
SELECT d.code,
       d.name,
       d.enabled,
       NULL::boolean               AS online,
       NULL::text                  AS state,
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

-- Energy per outlet today, over the last 7 local days (today included) and this month.
CREATE VIEW outlet_top_consumers AS
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
