-- Adds what the batch really inserted (`outletd_inserted_devices`) to each outlet's running totals.
INSERT INTO device_power_totals AS t (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                      first_measured_at, last_measured_at)
SELECT device_id, sample_count, power_sum_watts, peak_power_watts, peak_at, first_measured_at, last_measured_at
FROM outletd_inserted_devices
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
