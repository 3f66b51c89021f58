-- short_way.sql for the outlets left whose samples all fall in one minute of a later hour (at a steady rate,
-- every outlet once an hour): their open minute and hour (and day, when the minute is in a later day) close
-- with the segment from the tail, and the minute opens them. A statement of its own, run only when outlets
-- remain. $1: the maximum gap. Returns how many outlets remain.
WITH settings AS (
    SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
), staying AS MATERIALIZED (
    SELECT device_id, head_us, last_energy_wh,
           head_hour_start, head_day, head_day <> open_day_date AS new_day,
           CASE WHEN head_day <> open_day_date
                THEN head_day::timestamp AT TIME ZONE (SELECT zone FROM settings) END AS head_day_start,
           CASE WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds ELSE 0 END AS link_power_integral_watt_seconds, CASE WHEN seconds <= $1 THEN seconds ELSE 0 END AS link_covered_seconds,
           CASE WHEN tail_energy_wh IS NOT NULL AND first_energy_wh IS NOT NULL
         THEN outletd_counter_energy(tail_energy_wh, first_energy_wh)
     WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds / 3600
     ELSE 0 END AS link_energy_wh,
           total_sample_count AS sample_count, total_power_sum_watts AS power_sum_watts,
           total_power_integral_watt_seconds + CASE WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds ELSE 0 END AS power_integral_watt_seconds,
           total_covered_seconds + CASE WHEN seconds <= $1 THEN seconds ELSE 0 END AS covered_seconds,
           total_energy_wh + CASE WHEN tail_energy_wh IS NOT NULL AND first_energy_wh IS NOT NULL
         THEN outletd_counter_energy(tail_energy_wh, first_energy_wh)
     WHEN seconds <= $1 THEN (tail_power_watts + first_power_watts) / 2 * seconds / 3600
     ELSE 0 END AS energy_wh,
           total_min_power_watts AS min_power_watts, total_peak_power_watts AS peak_power_watts,
           timestamptz 'epoch' + total_peak_us * interval '1 microsecond' AS peak_at,
           total_min_voltage_volts AS min_voltage_volts, total_max_voltage_volts AS max_voltage_volts,
           total_last_power_watts AS last_power_watts,
           timestamptz 'epoch' + total_last_us * interval '1 microsecond' AS last_at,
           total_sample_count AS head_sample_count, total_power_sum_watts AS head_power_sum_watts, total_power_integral_watt_seconds AS head_power_integral_watt_seconds, total_covered_seconds AS head_covered_seconds, total_min_power_watts AS head_min_power_watts, total_peak_power_watts AS head_peak_power_watts, timestamptz 'epoch' + total_peak_us * interval '1 microsecond' AS head_peak_at, total_energy_wh AS head_energy_wh, total_min_voltage_volts AS head_min_voltage_volts, total_max_voltage_volts AS head_max_voltage_volts, total_last_power_watts AS head_last_power_watts, timestamptz 'epoch' + total_last_us * interval '1 microsecond' AS head_last_at
    FROM (SELECT c.*, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
                 (c.first_us - round(date_part('epoch', t.measured_at) * 1000000)) / 1000000 AS seconds,
                 t.open_hour_start, t.open_day_date,
                 outletd_hour_start(timestamptz 'epoch' + c.head_us * interval '1 microsecond', (SELECT zone FROM settings)) AS head_hour_start
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
), closed AS (
            INSERT INTO power_rollups_minute_stored AS r (device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
            SELECT s.device_id, t.open_minute_start, t.open_minute_sample_count,
            t.open_minute_power_sum_watts,
            t.open_minute_power_integral_watt_seconds + s.link_power_integral_watt_seconds,
            t.open_minute_covered_seconds + s.link_covered_seconds,
            t.open_minute_min_power_watts,
            t.open_minute_peak_power_watts,
            t.open_minute_peak_at,
            t.open_minute_energy_wh + s.link_energy_wh,
            t.open_minute_min_voltage_volts,
            t.open_minute_max_voltage_volts,
            t.open_minute_last_power_watts,
            t.open_minute_last_at
            FROM staying s
            JOIN rollup_tails t ON t.device_id = s.device_id

            ORDER BY s.device_id
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
        ),
            closed_hour AS (
            INSERT INTO power_rollups_hourly_stored AS r (device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
            SELECT s.device_id, t.open_hour_start, t.open_hour_sample_count,
            t.open_hour_power_sum_watts,
            t.open_hour_power_integral_watt_seconds + s.link_power_integral_watt_seconds,
            t.open_hour_covered_seconds + s.link_covered_seconds,
            t.open_hour_min_power_watts,
            t.open_hour_peak_power_watts,
            t.open_hour_peak_at,
            t.open_hour_energy_wh + s.link_energy_wh,
            t.open_hour_min_voltage_volts,
            t.open_hour_max_voltage_volts,
            t.open_hour_last_power_watts,
            t.open_hour_last_at
            FROM staying s
            JOIN rollup_tails t ON t.device_id = s.device_id

            ORDER BY s.device_id
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
        ),
            closed_day AS (
            INSERT INTO power_rollups_daily_stored AS r (device_id, day, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
            SELECT s.device_id, t.open_day_date, t.open_day_start, t.open_day_sample_count,
            t.open_day_power_sum_watts,
            t.open_day_power_integral_watt_seconds + s.link_power_integral_watt_seconds,
            t.open_day_covered_seconds + s.link_covered_seconds,
            t.open_day_min_power_watts,
            t.open_day_peak_power_watts,
            t.open_day_peak_at,
            t.open_day_energy_wh + s.link_energy_wh,
            t.open_day_min_voltage_volts,
            t.open_day_max_voltage_volts,
            t.open_day_last_power_watts,
            t.open_day_last_at
            FROM staying s
            JOIN rollup_tails t ON t.device_id = s.device_id
            WHERE s.new_day
            ORDER BY s.device_id
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
        ),
            moved AS (
    UPDATE rollup_tails t
    SET measured_at = s.last_at, power_watts = s.last_power_watts, energy_wh = s.last_energy_wh,
        open_minute_start = timestamptz 'epoch' + s.head_us * interval '1 microsecond',
        open_hour_start = s.head_hour_start,
        -- (A day's start stays as it opened, should the time zone change: as in the merge.)
        open_day_start = coalesce(s.head_day_start, t.open_day_start),
        open_day_date = s.head_day,
        open_minute_sample_count = s.head_sample_count,
        open_minute_power_sum_watts = s.head_power_sum_watts,
        open_minute_power_integral_watt_seconds = s.head_power_integral_watt_seconds,
        open_minute_covered_seconds = s.head_covered_seconds,
        open_minute_min_power_watts = s.head_min_power_watts,
        open_minute_peak_power_watts = s.head_peak_power_watts,
        open_minute_peak_at = s.head_peak_at,
        open_minute_energy_wh = s.head_energy_wh,
        open_minute_min_voltage_volts = s.head_min_voltage_volts,
        open_minute_max_voltage_volts = s.head_max_voltage_volts,
        open_minute_last_power_watts = s.head_last_power_watts,
        open_minute_last_at = s.head_last_at,
        open_hour_sample_count = s.head_sample_count,
        open_hour_power_sum_watts = s.head_power_sum_watts,
        open_hour_power_integral_watt_seconds = s.head_power_integral_watt_seconds,
        open_hour_covered_seconds = s.head_covered_seconds,
        open_hour_min_power_watts = s.head_min_power_watts,
        open_hour_peak_power_watts = s.head_peak_power_watts,
        open_hour_peak_at = s.head_peak_at,
        open_hour_energy_wh = s.head_energy_wh,
        open_hour_min_voltage_volts = s.head_min_voltage_volts,
        open_hour_max_voltage_volts = s.head_max_voltage_volts,
        open_hour_last_power_watts = s.head_last_power_watts,
        open_hour_last_at = s.head_last_at,
        open_day_sample_count = CASE WHEN s.new_day THEN s.head_sample_count ELSE t.open_day_sample_count + coalesce(s.sample_count, 0) END,
        open_day_power_sum_watts = CASE WHEN s.new_day THEN s.head_power_sum_watts ELSE t.open_day_power_sum_watts + coalesce(s.power_sum_watts, 0) END,
        open_day_power_integral_watt_seconds = CASE WHEN s.new_day THEN s.head_power_integral_watt_seconds ELSE t.open_day_power_integral_watt_seconds + coalesce(s.power_integral_watt_seconds, 0) END,
        open_day_covered_seconds = CASE WHEN s.new_day THEN s.head_covered_seconds ELSE t.open_day_covered_seconds + coalesce(s.covered_seconds, 0) END,
        open_day_min_power_watts = CASE WHEN s.new_day THEN s.head_min_power_watts ELSE least(t.open_day_min_power_watts, s.min_power_watts) END,
        open_day_peak_power_watts = CASE WHEN s.new_day THEN s.head_peak_power_watts ELSE greatest(t.open_day_peak_power_watts, s.peak_power_watts) END,
        open_day_peak_at = CASE WHEN s.new_day THEN s.head_peak_at ELSE CASE WHEN s.peak_power_watts > t.open_day_peak_power_watts
                         OR (s.peak_power_watts = t.open_day_peak_power_watts AND s.peak_at < t.open_day_peak_at) THEN s.peak_at ELSE t.open_day_peak_at END END,
        open_day_energy_wh = CASE WHEN s.new_day THEN s.head_energy_wh ELSE t.open_day_energy_wh + coalesce(s.energy_wh, 0) END,
        open_day_min_voltage_volts = CASE WHEN s.new_day THEN s.head_min_voltage_volts ELSE least(t.open_day_min_voltage_volts, s.min_voltage_volts) END,
        open_day_max_voltage_volts = CASE WHEN s.new_day THEN s.head_max_voltage_volts ELSE greatest(t.open_day_max_voltage_volts, s.max_voltage_volts) END,
        open_day_last_power_watts = CASE WHEN s.new_day THEN s.head_last_power_watts ELSE CASE WHEN s.last_at >= t.open_day_last_at THEN s.last_power_watts ELSE t.open_day_last_power_watts END END,
        open_day_last_at = CASE WHEN s.new_day THEN s.head_last_at ELSE greatest(t.open_day_last_at, s.last_at) END
    FROM staying s
    WHERE t.device_id = s.device_id
    RETURNING t.device_id
), remaining AS MATERIALIZED (
            -- (Counted once: the delete's condition and the result both read it.)
            SELECT (SELECT count(*) FROM outletd_inserted_devices) - (SELECT count(*) FROM moved) AS count
        ), handled AS (
            DELETE FROM outletd_inserted_devices i USING moved m
            WHERE i.device_id = m.device_id AND (SELECT count > 0 FROM remaining)
        )
        SELECT count FROM remaining
