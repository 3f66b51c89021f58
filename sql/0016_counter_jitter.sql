-- outletd schema, migration 16: an energy counter that goes back by a rounding step is jitter, not a reset.
--
-- Until now every decrease of an outlet's counter was taken as a reset: the segment's energy was the new
-- value, what the counter had counted since. A counter that goes back by a rounding step (1000.00 ->
-- 999.99 Wh), or that a firmware restores from flash a little behind its last report after a power cut
-- (Tasmota), then added about the whole counter, 1000 Wh, to one minute. Now:
--   - an increase is the energy of the segment;
--   - a decrease of at most max(1 Wh, 1 % of the previous value) is jitter: the segment adds nothing,
--     and the lower value is where the next segment counts from;
--   - a larger decrease (a counter back near zero after a reboot, or a large drop) is a reset, as before:
--     the segment adds the new value.
-- outletd_counter_energy is that rule, used by the minute rollups below and by the writer's merge of a
-- batch with each outlet's stored tail (BatchStore+Rollups.swift); RollupDeltas.counterEnergy is the same
-- rule in Swift, and a test checks the two agree. Rollups stored before keep what they were computed with:
-- `outletd rollup rebuild` restates them.
CREATE FUNCTION outletd_counter_energy(p_from double precision, p_to double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_to >= p_from THEN p_to - p_from
                WHEN p_from - p_to <= greatest(1.0, p_from * 0.01) THEN 0
                ELSE p_to END
$$;

COMMENT ON FUNCTION outletd_counter_energy(double precision, double precision) IS
    'Energy (Wh) between two readings of an outlet''s cumulative counter: the increase; 0 for a decrease of at '
    'most max(1 Wh, 1 % of the first) (jitter); the second value after a larger decrease (a reset).';

-- As in migration 2, with the counter rule above.
CREATE OR REPLACE FUNCTION outletd_minute_rollups(p_device_ids integer[], p_minutes timestamptz[],
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
               WHEN energy_wh IS NOT NULL AND next_energy IS NOT NULL THEN outletd_counter_energy(energy_wh, next_energy)
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
