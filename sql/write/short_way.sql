-- The usual batch's rollups (docs/ROLLUPS.md, "How the write path maintains them"): every outlet whose samples
-- were all inserted, all after its tail, and all in its open hour is brought up to date in one update of its
-- `rollup_tails` row. The segment from the tail and the chain's total (summed by the writer) add to the open
-- hour and day. If the samples stay in the open minute, they add to it too; else the open minute, with the
-- segment and the batch's share of it (the chain's first minute), goes to `power_rollups_minute_stored` with
-- the batch's other minutes before its last, and the last one opens. When other outlets remain, the ones taken
-- leave `outletd_inserted_devices`. Returns how many outlets remain (for short_way_across_hours.sql, then
-- merge_rollups.sql). $1: the maximum gap the deltas were computed with (another stored setting: no outlet
-- qualifies). The minutes it closes never have a stored row (an open bucket never has one beside it), so
-- they are stored with a plain INSERT; should one ever conflict, the writer writes the batch again without
-- the short ways, and merge_rollups.sql merges into the stored row.
WITH settings AS (
    SELECT time_zone AS zone, max_gap_seconds = $1::double precision AS same_gap FROM rollup_settings LIMIT 1
), moved AS (
    -- (Each outlet's old open minute, with what closing it adds, comes back from the update:
    -- the rows it closes are stored from there, without materialising every joined column.)
    UPDATE rollup_tails t
    SET measured_at = s.last_at, power_watts = s.last_power_watts, energy_wh = s.last_energy_wh,
        open_minute_start = timestamptz 'epoch' + s.head_us * interval '1 microsecond',
        open_minute_sample_count = CASE WHEN s.head_us = s.open_minute_us THEN t.open_minute_sample_count + coalesce(s.sample_count, 0) ELSE s.head_sample_count END,
        open_minute_power_sum_watts = CASE WHEN s.head_us = s.open_minute_us THEN t.open_minute_power_sum_watts + coalesce(s.power_sum_watts, 0) ELSE s.head_power_sum_watts END,
        open_minute_power_integral_watt_seconds = CASE WHEN s.head_us = s.open_minute_us THEN t.open_minute_power_integral_watt_seconds + coalesce(s.power_integral_watt_seconds, 0) ELSE s.head_power_integral_watt_seconds END,
        open_minute_covered_seconds = CASE WHEN s.head_us = s.open_minute_us THEN t.open_minute_covered_seconds + coalesce(s.covered_seconds, 0) ELSE s.head_covered_seconds END,
        open_minute_min_power_watts = CASE WHEN s.head_us = s.open_minute_us THEN least(t.open_minute_min_power_watts, s.min_power_watts) ELSE s.head_min_power_watts END,
        open_minute_peak_power_watts = CASE WHEN s.head_us = s.open_minute_us THEN greatest(t.open_minute_peak_power_watts, s.peak_power_watts) ELSE s.head_peak_power_watts END,
        open_minute_peak_at = CASE WHEN s.head_us = s.open_minute_us THEN CASE WHEN s.peak_power_watts > t.open_minute_peak_power_watts
                         OR (s.peak_power_watts = t.open_minute_peak_power_watts AND s.peak_at < t.open_minute_peak_at) THEN s.peak_at ELSE t.open_minute_peak_at END ELSE s.head_peak_at END,
        open_minute_energy_wh = CASE WHEN s.head_us = s.open_minute_us THEN t.open_minute_energy_wh + coalesce(s.energy_wh, 0) ELSE s.head_energy_wh END,
        open_minute_min_voltage_volts = CASE WHEN s.head_us = s.open_minute_us THEN least(t.open_minute_min_voltage_volts, s.min_voltage_volts) ELSE s.head_min_voltage_volts END,
        open_minute_max_voltage_volts = CASE WHEN s.head_us = s.open_minute_us THEN greatest(t.open_minute_max_voltage_volts, s.max_voltage_volts) ELSE s.head_max_voltage_volts END,
        open_minute_last_power_watts = CASE WHEN s.head_us = s.open_minute_us THEN CASE WHEN s.last_at >= t.open_minute_last_at THEN s.last_power_watts ELSE t.open_minute_last_power_watts END ELSE s.head_last_power_watts END,
        open_minute_last_at = CASE WHEN s.head_us = s.open_minute_us THEN greatest(t.open_minute_last_at, s.last_at) ELSE s.head_last_at END,
        open_hour_sample_count = t.open_hour_sample_count + coalesce(s.sample_count, 0),
        open_hour_power_sum_watts = t.open_hour_power_sum_watts + coalesce(s.power_sum_watts, 0),
        open_hour_power_integral_watt_seconds = t.open_hour_power_integral_watt_seconds + coalesce(s.power_integral_watt_seconds, 0),
        open_hour_covered_seconds = t.open_hour_covered_seconds + coalesce(s.covered_seconds, 0),
        open_hour_min_power_watts = least(t.open_hour_min_power_watts, s.min_power_watts),
        open_hour_peak_power_watts = greatest(t.open_hour_peak_power_watts, s.peak_power_watts),
        open_hour_peak_at = CASE WHEN s.peak_power_watts > t.open_hour_peak_power_watts
                         OR (s.peak_power_watts = t.open_hour_peak_power_watts AND s.peak_at < t.open_hour_peak_at) THEN s.peak_at ELSE t.open_hour_peak_at END,
        open_hour_energy_wh = t.open_hour_energy_wh + coalesce(s.energy_wh, 0),
        open_hour_min_voltage_volts = least(t.open_hour_min_voltage_volts, s.min_voltage_volts),
        open_hour_max_voltage_volts = greatest(t.open_hour_max_voltage_volts, s.max_voltage_volts),
        open_hour_last_power_watts = CASE WHEN s.last_at >= t.open_hour_last_at THEN s.last_power_watts ELSE t.open_hour_last_power_watts END,
        open_hour_last_at = greatest(t.open_hour_last_at, s.last_at),
        open_day_sample_count = t.open_day_sample_count + coalesce(s.sample_count, 0),
        open_day_power_sum_watts = t.open_day_power_sum_watts + coalesce(s.power_sum_watts, 0),
        open_day_power_integral_watt_seconds = t.open_day_power_integral_watt_seconds + coalesce(s.power_integral_watt_seconds, 0),
        open_day_covered_seconds = t.open_day_covered_seconds + coalesce(s.covered_seconds, 0),
        open_day_min_power_watts = least(t.open_day_min_power_watts, s.min_power_watts),
        open_day_peak_power_watts = greatest(t.open_day_peak_power_watts, s.peak_power_watts),
        open_day_peak_at = CASE WHEN s.peak_power_watts > t.open_day_peak_power_watts
                         OR (s.peak_power_watts = t.open_day_peak_power_watts AND s.peak_at < t.open_day_peak_at) THEN s.peak_at ELSE t.open_day_peak_at END,
        open_day_energy_wh = t.open_day_energy_wh + coalesce(s.energy_wh, 0),
        open_day_min_voltage_volts = least(t.open_day_min_voltage_volts, s.min_voltage_volts),
        open_day_max_voltage_volts = greatest(t.open_day_max_voltage_volts, s.max_voltage_volts),
        open_day_last_power_watts = CASE WHEN s.last_at >= t.open_day_last_at THEN s.last_power_watts ELSE t.open_day_last_power_watts END,
        open_day_last_at = greatest(t.open_day_last_at, s.last_at)
    FROM (SELECT device_id, tail_ctid, head_us, open_minute_us, open_minute_start, first_minute_us, minute_count,
                 last_energy_wh,
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
                 CASE WHEN minute_count = 1 THEN total_sample_count ELSE head_sample_count END AS head_sample_count,
                 CASE WHEN minute_count = 1 THEN total_power_sum_watts ELSE head_power_sum_watts END AS head_power_sum_watts,
                 CASE WHEN minute_count = 1 THEN total_power_integral_watt_seconds ELSE head_power_integral_watt_seconds END AS head_power_integral_watt_seconds,
                 CASE WHEN minute_count = 1 THEN total_covered_seconds ELSE head_covered_seconds END AS head_covered_seconds,
                 CASE WHEN minute_count = 1 THEN total_min_power_watts ELSE head_min_power_watts END AS head_min_power_watts,
                 CASE WHEN minute_count = 1 THEN total_peak_power_watts ELSE head_peak_power_watts END AS head_peak_power_watts,
                 CASE WHEN minute_count = 1 THEN timestamptz 'epoch' + total_peak_us * interval '1 microsecond' ELSE timestamptz 'epoch' + head_peak_us * interval '1 microsecond' END AS head_peak_at,
                 CASE WHEN minute_count = 1 THEN total_energy_wh ELSE head_energy_wh END AS head_energy_wh,
                 CASE WHEN minute_count = 1 THEN total_min_voltage_volts ELSE head_min_voltage_volts END AS head_min_voltage_volts,
                 CASE WHEN minute_count = 1 THEN total_max_voltage_volts ELSE head_max_voltage_volts END AS head_max_voltage_volts,
                 CASE WHEN minute_count = 1 THEN total_last_power_watts ELSE head_last_power_watts END AS head_last_power_watts,
                 CASE WHEN minute_count = 1 THEN timestamptz 'epoch' + total_last_us * interval '1 microsecond' ELSE timestamptz 'epoch' + head_last_us * interval '1 microsecond' END AS head_last_at,
                 open_minute_sample_count, open_minute_power_sum_watts, open_minute_power_integral_watt_seconds, open_minute_covered_seconds, open_minute_min_power_watts, open_minute_peak_power_watts, open_minute_peak_at, open_minute_energy_wh, open_minute_min_voltage_volts, open_minute_max_voltage_volts, open_minute_last_power_watts, open_minute_last_at,
                 first_minute_sample_count, first_minute_power_sum_watts, first_minute_power_integral_watt_seconds, first_minute_covered_seconds, first_minute_min_power_watts, first_minute_peak_power_watts, first_minute_peak_us, first_minute_energy_wh, first_minute_min_voltage_volts, first_minute_max_voltage_volts, first_minute_last_power_watts, first_minute_last_us
          FROM (SELECT c.*, t.power_watts AS tail_power_watts, t.energy_wh AS tail_energy_wh,
                       (c.first_us - round(date_part('epoch', t.measured_at) * 1000000)) / 1000000 AS seconds, t.ctid AS tail_ctid,
                       t.open_minute_us, t.open_minute_start, t.open_minute_sample_count, t.open_minute_power_sum_watts, t.open_minute_power_integral_watt_seconds, t.open_minute_covered_seconds, t.open_minute_min_power_watts, t.open_minute_peak_power_watts, t.open_minute_peak_at, t.open_minute_energy_wh, t.open_minute_min_voltage_volts, t.open_minute_max_voltage_volts, t.open_minute_last_power_watts, t.open_minute_last_at
                FROM outletd_staging_chains c
                JOIN outletd_inserted_devices i ON i.device_id = c.device_id AND i.sample_count = c.sample_count
                JOIN (SELECT *, ctid, (round(date_part('epoch', open_minute_start) * 1000000))::bigint AS open_minute_us FROM rollup_tails) t
                    ON t.device_id = c.device_id
                WHERE t.measured_at < i.first_measured_at
                  AND t.open_minute_start IS NOT NULL AND t.open_day_start IS NOT NULL
                  AND outletd_hour_start(timestamptz 'epoch' + c.head_us * interval '1 microsecond', (SELECT zone FROM settings)) = t.open_hour_start
                  AND (SELECT same_gap FROM settings)
                OFFSET 0) joined  -- (kept a subquery: its `seconds` is computed once, not at every use)
         ) s
    -- (By the row version the join read: no second look-up of each outlet's row by key.)
    WHERE t.ctid = s.tail_ctid
    RETURNING t.device_id, s.head_us, s.open_minute_us, s.open_minute_start, s.first_minute_us, s.minute_count,
              s.open_minute_sample_count + coalesce(CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_sample_count END, 0) AS closed_sample_count,
              s.open_minute_power_sum_watts + coalesce(CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_power_sum_watts END, 0) AS closed_power_sum_watts,
              s.open_minute_power_integral_watt_seconds + s.link_power_integral_watt_seconds + coalesce(CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_power_integral_watt_seconds END, 0) AS closed_power_integral_watt_seconds,
              s.open_minute_covered_seconds + s.link_covered_seconds + coalesce(CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_covered_seconds END, 0) AS closed_covered_seconds,
              least(s.open_minute_min_power_watts, CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_min_power_watts END) AS closed_min_power_watts,
              greatest(s.open_minute_peak_power_watts, CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_peak_power_watts END) AS closed_peak_power_watts,
              CASE WHEN CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_peak_power_watts END > s.open_minute_peak_power_watts
                         OR (CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_peak_power_watts END = s.open_minute_peak_power_watts AND CASE WHEN s.first_minute_us = s.open_minute_us THEN timestamptz 'epoch' + s.first_minute_peak_us * interval '1 microsecond' END < s.open_minute_peak_at) THEN CASE WHEN s.first_minute_us = s.open_minute_us THEN timestamptz 'epoch' + s.first_minute_peak_us * interval '1 microsecond' END ELSE s.open_minute_peak_at END AS closed_peak_at,
              s.open_minute_energy_wh + s.link_energy_wh + coalesce(CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_energy_wh END, 0) AS closed_energy_wh,
              least(s.open_minute_min_voltage_volts, CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_min_voltage_volts END) AS closed_min_voltage_volts,
              greatest(s.open_minute_max_voltage_volts, CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_max_voltage_volts END) AS closed_max_voltage_volts,
              CASE WHEN CASE WHEN s.first_minute_us = s.open_minute_us THEN timestamptz 'epoch' + s.first_minute_last_us * interval '1 microsecond' END >= s.open_minute_last_at THEN CASE WHEN s.first_minute_us = s.open_minute_us THEN s.first_minute_last_power_watts END ELSE s.open_minute_last_power_watts END AS closed_last_power_watts,
              greatest(s.open_minute_last_at, CASE WHEN s.first_minute_us = s.open_minute_us THEN timestamptz 'epoch' + s.first_minute_last_us * interval '1 microsecond' END) AS closed_last_at,
              s.first_minute_sample_count, s.first_minute_power_sum_watts, s.first_minute_power_integral_watt_seconds, s.first_minute_covered_seconds, s.first_minute_min_power_watts, s.first_minute_peak_power_watts, s.first_minute_peak_us, s.first_minute_energy_wh, s.first_minute_min_voltage_volts, s.first_minute_max_voltage_volts, s.first_minute_last_power_watts, s.first_minute_last_us
), closed AS (
    INSERT INTO power_rollups_minute_stored AS r (device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh, min_voltage_volts, max_voltage_volts, last_power_watts, last_at)
    SELECT * FROM (
        SELECT m.device_id, m.open_minute_start AS bucket_start, m.closed_sample_count, m.closed_power_sum_watts, m.closed_power_integral_watt_seconds, m.closed_covered_seconds, m.closed_min_power_watts, m.closed_peak_power_watts, m.closed_peak_at, m.closed_energy_wh, m.closed_min_voltage_volts, m.closed_max_voltage_volts, m.closed_last_power_watts, m.closed_last_at
        FROM moved m
        WHERE m.head_us <> m.open_minute_us
        UNION ALL
        -- The chain's first minute, when it is neither the open minute nor the last.
        SELECT m.device_id, timestamptz 'epoch' + m.first_minute_us * interval '1 microsecond',
               m.first_minute_sample_count, m.first_minute_power_sum_watts, m.first_minute_power_integral_watt_seconds, m.first_minute_covered_seconds, m.first_minute_min_power_watts, m.first_minute_peak_power_watts, timestamptz 'epoch' + m.first_minute_peak_us * interval '1 microsecond', m.first_minute_energy_wh, m.first_minute_min_voltage_volts, m.first_minute_max_voltage_volts, m.first_minute_last_power_watts, timestamptz 'epoch' + m.first_minute_last_us * interval '1 microsecond'
        FROM moved m
        WHERE m.minute_count > 1 AND m.first_minute_us <> m.open_minute_us
        UNION ALL
        -- The minutes between its first and last: the only ones staged so far.
        SELECT m.device_id, timestamptz 'epoch' + m.bucket_us * interval '1 microsecond',
               m.sample_count, m.power_sum_watts, m.power_integral_watt_seconds, m.covered_seconds, m.min_power_watts, m.peak_power_watts, timestamptz 'epoch' + m.peak_us * interval '1 microsecond', m.energy_wh, m.min_voltage_volts, m.max_voltage_volts, m.last_power_watts, timestamptz 'epoch' + m.last_us * interval '1 microsecond'
        FROM outletd_staging_minutes m
        JOIN moved s ON s.device_id = m.device_id
    ) minutes
    ORDER BY device_id, bucket_start

), remaining AS MATERIALIZED (
            -- (Counted once: the delete's condition and the result both read it.)
            SELECT (SELECT count(*) FROM outletd_inserted_devices) - (SELECT count(*) FROM moved) AS count
        ), handled AS (
            DELETE FROM outletd_inserted_devices i USING moved m
            WHERE i.device_id = m.device_id AND (SELECT count > 0 FROM remaining)
        )
        SELECT count FROM remaining
