-- The careful way (BatchStore.write, after a batch met a stored sample): moves the staged samples into
-- `samples_stored` (encoded by outletd_compact_sample, migration 24),
-- skipping ones already there (of two staged readings of one outlet at one time, the one received first), and
-- notes, per outlet, what it really inserted (`outletd_inserted_devices`): what the running totals
-- (add_totals.sql) and the rollup statements read. Returns how many it inserted.
-- A reading of a compacted day (migration 26) is skipped when the compact form has it: each outlet-day the batch
-- touches is decoded once; readings after the newest compacted day never look. A pending row (a pass not finished,
-- migration 32) is not read: its readings are still in row form, where the primary key finds them.
WITH compacted AS MATERIALIZED (
    SELECT c.device_id, r.measured_at
    FROM (SELECT DISTINCT device_id, (measured_at AT TIME ZONE 'UTC')::date AS day
          FROM outletd_staging_samples
          WHERE measured_at < (SELECT (max(day) + 1)::timestamp AT TIME ZONE 'UTC' FROM samples_compact)) k
    JOIN samples_compact c ON c.device_id = k.device_id AND c.day = k.day AND NOT c.pending
    CROSS JOIN LATERAL outletd_compact_readings(c) r
), inserted AS (
    INSERT INTO samples_stored
    SELECT c.*
    FROM outletd_staging_samples s,
         LATERAL outletd_compact_sample(s.device_id, s.measured_at, s.received_at, s.device_time, s.voltage_volts,
                                        s.current_amperes, s.power_watts, s.power_factor, s.energy_wh, s.seq) c
    WHERE (SELECT outletd_compaction_checked())
      AND NOT EXISTS (SELECT 1 FROM compacted x WHERE x.device_id = s.device_id AND x.measured_at = s.measured_at)
    ORDER BY s.device_id, s.measured_at, s.received_at
    ON CONFLICT (device_id, measured_at) DO NOTHING
    RETURNING device_id, measured_at, coalesce(power_exact, power_centiwatts / 100::double precision) AS power_watts
), noted AS (
    INSERT INTO outletd_inserted_devices (device_id, sample_count, first_measured_at, last_measured_at,
                                          power_sum_watts, peak_power_watts, peak_at)
    SELECT device_id, count(*), min(measured_at), max(measured_at), sum(power_watts), max(power_watts),
           (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1]
    FROM inserted
    GROUP BY device_id
)
SELECT count(*) FROM inserted
