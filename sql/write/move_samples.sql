-- The careful way (BatchStore.write, after a batch met a stored sample): moves the staged samples into `samples`,
-- skipping ones already there (of two staged readings of one outlet at one time, the one received first), and
-- notes, per outlet, what it really inserted (`outletd_inserted_devices`): what the running totals
-- (add_totals.sql) and the rollup statements read. Returns how many it inserted.
WITH inserted AS (
    INSERT INTO samples (device_id, measured_at, received_at, device_time, voltage_volts, current_amperes,
                         power_watts, power_factor, energy_wh, seq)
    SELECT device_id, measured_at, received_at, device_time, voltage_volts, current_amperes, power_watts,
           power_factor, energy_wh, seq
    FROM outletd_staging_samples
    ORDER BY device_id, measured_at, received_at
    ON CONFLICT (device_id, measured_at) DO NOTHING
    RETURNING device_id, measured_at, power_watts
), noted AS (
    INSERT INTO outletd_inserted_devices (device_id, sample_count, first_measured_at, last_measured_at,
                                          power_sum_watts, peak_power_watts, peak_at)
    SELECT device_id, count(*), min(measured_at), max(measured_at), sum(power_watts), max(power_watts),
           (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1]
    FROM inserted
    GROUP BY device_id
)
SELECT count(*) FROM inserted
