-- add_totals.sql for a batch of a few of the outlets that have totals (BatchStore.addTotals chooses): their rows
-- are found by key, one index probe each, where the join hashes every outlet's row, whatever the batch holds
-- (18,000 outlets: 10 ms for a batch of 36, against under 2 by key; by key is slower once a batch holds about
-- half the outlets, as a backlog's batches do). Same effect as add_totals.sql.
WITH updated AS (
    UPDATE device_power_totals AS t SET
        sample_count = t.sample_count + i.sample_count,
        power_sum_watts = t.power_sum_watts + i.power_sum_watts,
        peak_power_watts = GREATEST(t.peak_power_watts, i.peak_power_watts),
        peak_at = CASE
            WHEN i.peak_power_watts > t.peak_power_watts
              OR (i.peak_power_watts = t.peak_power_watts AND i.peak_at < t.peak_at)
            THEN i.peak_at ELSE t.peak_at END,
        first_measured_at = LEAST(t.first_measured_at, i.first_measured_at),
        last_measured_at = GREATEST(t.last_measured_at, i.last_measured_at)
    FROM outletd_inserted_devices i
    WHERE t.device_id = i.device_id
      AND t.device_id = ANY (ARRAY(SELECT device_id FROM outletd_inserted_devices))
    RETURNING t.device_id
)
INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                 first_measured_at, last_measured_at)
SELECT device_id, sample_count, power_sum_watts, peak_power_watts, peak_at, first_measured_at, last_measured_at
FROM outletd_inserted_devices i
WHERE NOT EXISTS (SELECT FROM updated u WHERE u.device_id = i.device_id)
ORDER BY device_id
