-- The batch's readings straight into `samples_stored` (BatchStore.encodeStored writes the columns in this order:
-- migration 24 says what each holds), by outlet, then time. BatchStore.write runs it under a savepoint: when a
-- reading is stored already (unique_violation), it is rolled back and the batch goes the careful way
-- (stage_samples.sql, then move_samples.sql).
COPY samples_stored (measured_at, received_at_wide, device_time, seq_wide, voltage_exact, current_exact, power_exact,
                     power_factor_exact, energy_exact, device_id, received_delay_us, seq, voltage_centivolts,
                     current_milliamperes, power_centiwatts, energy_milliwatt_hours, power_factor_thousandths)
FROM STDIN (FORMAT binary)
