-- Takes the rollup lock of every outlet with an inserted sample (`outletd_lock_devices`, 1024 stripes).
SELECT outletd_lock_devices(array_agg(device_id)) FROM outletd_inserted_devices
