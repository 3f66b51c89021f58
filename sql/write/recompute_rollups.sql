-- Recomputes, from the raw samples, the minutes touched by the staged samples of the outlets in $1 (a superset of
-- the rows inserted, which recomputes some minutes to what they are), and the hours and days that contain them.
SELECT outletd_rollups_after_insert(array_agg(device_id), array_agg(measured_at))
FROM (SELECT DISTINCT device_id, measured_at FROM outletd_staging_samples WHERE device_id = ANY ($1::integer[])) staged
