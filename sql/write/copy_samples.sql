-- The batch's readings (BatchStore.encode writes the columns in this order).
COPY outletd_staging_samples (device_id, measured_us, received_us, device_us, voltage_volts, current_amperes,
                              power_watts, power_factor, energy_wh, seq) FROM STDIN (FORMAT binary)
