-- Moves the staged samples into `samples`, skipping ones already there (of two staged readings of one outlet
-- at one time, the one received first), and adds the rows it really inserted to `device_power_totals`. With
-- $1 (rollups maintained), notes besides, per outlet, how many it really inserted and the earliest of them
-- (`outletd_inserted_devices`): what the rollup statements read. Returns how many it inserted.
-- scripts/embed-sql also derives from it the same statement without ON CONFLICT, a plain insert that PostgreSQL
-- runs in two thirds of the time (docs/PERFORMANCE.md): BatchStore.moveSamples tries that one first, under a
-- savepoint, and comes here when it meets a stored sample (unique_violation).
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
    ON CONFLICT (device_id, measured_at) DO NOTHING
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
