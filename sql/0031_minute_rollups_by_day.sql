-- outletd_minute_rollups (migration 16) recomputes an outlet's minutes from its readings and, for each run of minutes,
-- the reading after the run. Two changes, the result otherwise the same row for row and bit for bit (RollupTests and
-- CompactedDayTests compare it with a recomputation from scratch):
--
-- * It reads through samples_between and outletd_sample_from (migration 26), which decode only the outlet-days the
--   minutes and the next reading are in. From `samples`, a predicate on measured_at does not reach the compact form's
--   day: a late reading of a compacted day decoded every compacted day of its outlet from that day on (an outlet with
--   13 compacted days: 301 ms before, 24-38 ms now, on this machine).
-- * The reading after one run can be the first reading of the next run (a gap in an outlet's readings longer than the
--   ten minutes that split runs): the same reading then appears twice, once as "next". The window now orders the
--   "next" copy first, so the reading's own segment reaches its real successor; before, which copy came first was up
--   to the sort, and where the regular copy came first its segment was a zero-second one to itself (its minute lost
--   the segment's energy and covered time). The old plan happened to order them well; any other plan did not.
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
                 FROM samples_between(ARRAY[r.device_id], r.run_start, r.run_end))
                UNION ALL
                (SELECT measured_at, power_watts, voltage_volts, energy_wh, true
                 FROM outletd_sample_from(r.device_id, r.run_end))
            ) s
        ) p
        WINDOW w AS (PARTITION BY p.device_id ORDER BY p.measured_at, p.is_next DESC)
    ) segments
    WHERE NOT is_next
    GROUP BY device_id, bucket_start
$$;
