-- The batch's readings into the staging table (BatchStore.encode writes the columns in this order): when they go
-- the careful way (move_samples.sql), or, for recompute_rollups.sql, when they went straight into `samples`.
COPY outletd_staging_samples (device_id, measured_at, received_at, device_time, voltage_volts, current_amperes,
                              power_watts, power_factor, energy_wh, seq) FROM STDIN (FORMAT binary)
