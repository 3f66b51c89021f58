-- Moves the tails of the outlets in $1 to their newest sample: one inserted now, or the tail.
INSERT INTO rollup_tails AS t (device_id, measured_at, power_watts, energy_wh)
SELECT DISTINCT ON (s.device_id) s.device_id, s.measured_at, s.power_watts, s.energy_wh
FROM outletd_inserted_devices i
-- samples_between: an outlet's compacted days before the range are not decoded (migration 26).
CROSS JOIN LATERAL samples_between(ARRAY[i.device_id], i.first_measured_at, 'infinity') s
WHERE i.device_id = ANY ($1::integer[])
ORDER BY s.device_id, s.measured_at DESC
ON CONFLICT (device_id) DO UPDATE SET
    measured_at = excluded.measured_at, power_watts = excluded.power_watts, energy_wh = excluded.energy_wh
WHERE excluded.measured_at > t.measured_at
