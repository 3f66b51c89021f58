-- Adds what the batch really inserted (`outletd_inserted_devices`) to each outlet's running totals. The writer
-- holds the outlets' rollup locks (lock_inserted.sql) already: two writers never update the same rows in another
-- order, and no other writer inserts an outlet's totals meanwhile (every writer of totals takes those locks
-- first, and this statement sees what committed before it got them). An outlet with totals gets them updated (a
-- join, cheaper than an upsert's speculative insert for each row); the others are inserted. Should one be there
-- after all, the insert fails on the key and the writer writes the batch again: the update then finds it.
-- The join hashes every outlet's totals, whatever the batch holds (18,000 outlets: 10 ms for a batch of 36). For a
-- batch of a third of the outlets with totals or fewer, the writer prepares this statement also with the line
-- marked `by key:` in it (BatchStore.addTotalsByKey): the outlets' rows are then found by key, an index probe each
-- (under 2 ms for 36). By key is slower once a batch holds about 40 % of the outlets, as a backlog's batches do.
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
    -- by key: AND t.device_id = ANY (ARRAY(SELECT device_id FROM outletd_inserted_devices))
    RETURNING t.device_id
)
INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                 first_measured_at, last_measured_at)
SELECT device_id, sample_count, power_sum_watts, peak_power_watts, peak_at, first_measured_at, last_measured_at
FROM outletd_inserted_devices i
WHERE NOT EXISTS (SELECT FROM updated u WHERE u.device_id = i.device_id)
ORDER BY device_id
