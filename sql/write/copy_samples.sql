-- The batch's readings straight into `samples` (BatchStore.encode writes the columns in this order), by
-- outlet, then time. BatchStore.write runs it under a savepoint: when a reading is stored already
-- (unique_violation), it is rolled back and the batch goes the careful way (stage_samples.sql, then
-- move_samples.sql).
COPY samples (device_id, measured_at, received_at, device_time, voltage_volts, current_amperes, power_watts,
              power_factor, energy_wh, seq) FROM STDIN (FORMAT binary)
