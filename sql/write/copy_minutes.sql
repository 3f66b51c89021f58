-- Minutes of the batch (RollupDeltas.encode(_:_:)): those between a chain's first and last, then, for the merge,
-- the chains' end minutes.
COPY outletd_staging_minutes (device_id, bucket_us, sample_count, power_sum_watts, power_integral_watt_seconds,
                              covered_seconds, min_power_watts, peak_power_watts, peak_us, energy_wh,
                              min_voltage_volts, max_voltage_volts, last_power_watts, last_us) FROM STDIN (FORMAT binary)
