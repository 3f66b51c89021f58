-- Each outlet's chain (RollupDeltas.encode(_:withEnds: false)), when no chain spans minutes.
COPY outletd_staging_chains (device_id, sample_count, first_us, first_power_watts, first_energy_wh,
                             last_us, last_power_watts, last_energy_wh, head_us,
                             total_sample_count, total_power_sum_watts, total_power_integral_watt_seconds,
                             total_covered_seconds, total_min_power_watts, total_peak_power_watts, total_peak_us,
                             total_energy_wh, total_min_voltage_volts, total_max_voltage_volts,
                             total_last_power_watts, total_last_us,
                             minute_count, first_minute_us) FROM STDIN (FORMAT binary)
