-- Each outlet's chain with its first and last minute (RollupDeltas.encode(_:withEnds: true); NULL for a chain
-- of one minute, whose total is that minute).
COPY outletd_staging_chains (device_id, sample_count, first_us, first_power_watts, first_energy_wh,
                             last_us, last_power_watts, last_energy_wh, head_us,
                             total_sample_count, total_power_sum_watts, total_power_integral_watt_seconds,
                             total_covered_seconds, total_min_power_watts, total_peak_power_watts, total_peak_us,
                             total_energy_wh, total_min_voltage_volts, total_max_voltage_volts,
                             total_last_power_watts, total_last_us,
                             minute_count, first_minute_us,
                             first_minute_sample_count, first_minute_power_sum_watts,
                             first_minute_power_integral_watt_seconds, first_minute_covered_seconds,
                             first_minute_min_power_watts, first_minute_peak_power_watts, first_minute_peak_us,
                             first_minute_energy_wh, first_minute_min_voltage_volts, first_minute_max_voltage_volts,
                             first_minute_last_power_watts, first_minute_last_us,
                             head_sample_count, head_power_sum_watts, head_power_integral_watt_seconds,
                             head_covered_seconds, head_min_power_watts, head_peak_power_watts, head_peak_us,
                             head_energy_wh, head_min_voltage_volts, head_max_voltage_volts, head_last_power_watts,
                             head_last_us) FROM STDIN (FORMAT binary)
