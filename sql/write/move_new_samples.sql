-- move_samples.sql for a batch none of whose samples is stored yet, the usual case: the same statement with a
-- plain INSERT, which PostgreSQL runs in two thirds of the time ON CONFLICT's speculative insertion takes
-- (docs/PERFORMANCE.md). A sample already stored, or two of one outlet at one time in the batch, fail it on
-- samples' key (unique_violation); the writer then rolls back to the savepoint it took before and runs
-- move_samples.sql, and moves the next batches that way too for a while (BatchStore.moveSamples).
WITH inserted AS (
    INSERT INTO samples (device_id, measured_at, received_at, device_time, voltage_volts, current_amperes,
                         power_watts, power_factor, energy_wh, seq)
    SELECT device_id,
           timestamptz 'epoch' + measured_us * interval '1 microsecond',
           timestamptz 'epoch' + received_us * interval '1 microsecond',
           timestamptz 'epoch' + device_us * interval '1 microsecond',
           voltage_volts, current_amperes, power_watts, power_factor, energy_wh, seq
    FROM outletd_staging_samples
    ORDER BY device_id, measured_us, received_us
    RETURNING device_id, measured_at, power_watts
), per_device AS (
    SELECT device_id,
           count(*) AS sample_count,
           sum(power_watts) AS power_sum_watts,
           max(power_watts) AS peak_power_watts,
           (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1] AS peak_at,
           min(measured_at) AS first_measured_at,
           max(measured_at) AS last_measured_at
    FROM inserted
    GROUP BY device_id
), totals AS (
    INSERT INTO device_power_totals AS t (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                          first_measured_at, last_measured_at)
    SELECT device_id, sample_count, power_sum_watts, peak_power_watts, peak_at, first_measured_at,
           last_measured_at
    FROM per_device
    ORDER BY device_id
    ON CONFLICT (device_id) DO UPDATE SET
        sample_count = t.sample_count + excluded.sample_count,
        power_sum_watts = t.power_sum_watts + excluded.power_sum_watts,
        peak_power_watts = GREATEST(t.peak_power_watts, excluded.peak_power_watts),
        peak_at = CASE
            WHEN excluded.peak_power_watts > t.peak_power_watts
              OR (excluded.peak_power_watts = t.peak_power_watts AND excluded.peak_at < t.peak_at)
            THEN excluded.peak_at ELSE t.peak_at END,
        first_measured_at = LEAST(t.first_measured_at, excluded.first_measured_at),
        last_measured_at = GREATEST(t.last_measured_at, excluded.last_measured_at)
), noted AS (
    INSERT INTO outletd_inserted_devices (device_id, sample_count, first_measured_at)
    SELECT device_id, sample_count, first_measured_at FROM per_device WHERE $1::boolean
)
SELECT count(*) FROM inserted
