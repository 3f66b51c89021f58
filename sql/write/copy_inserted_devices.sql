-- Per outlet, what the batch inserted (OutletTotals.encode writes the columns in this order), when every reading
-- of it went straight into `samples` (copy_samples.sql).
COPY outletd_inserted_devices (device_id, sample_count, first_measured_at, last_measured_at, power_sum_watts,
                               peak_power_watts, peak_at) FROM STDIN (FORMAT binary)
