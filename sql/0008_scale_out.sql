-- Several instances on one database (docs/SCALING.md).
--
-- outletd_ensure_sample_partitions checked for an existing partition after taking its advisory lock
-- with to_regclass, which reads the system caches. Taking an advisory lock does not make a session
-- process pending catalog invalidations, so a writer that waited for another instance creating the
-- same day's partition could still miss it and fail with "relation … already exists" (SQLSTATE
-- 42P07; the batch was retried). The check after the lock now reads pg_class with the statement's
-- own snapshot, which sees every table committed before the lock was granted.
--
-- Its lock also took the key (1869903988, 1), which is the per-outlet rollup lock of device 1
-- (outletd_lock_devices). A writer creating (or, with a stale cache, checking) a partition then held
-- "device 1" from its first statement on, and could wait for another writer's uncommitted samples
-- while that writer waited for device 1's rollup lock: a deadlock (SQLSTATE 40P01), found by two
-- writers on the same outlets. Partition creators now lock (1869903989, 0), a key of their own.
CREATE OR REPLACE FUNCTION outletd_ensure_sample_partitions(p_days integer[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day      date;
    v_name     text;
    v_schema   text := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE c.oid = 'samples'::regclass);
    v_created  integer := 0;
BEGIN
    FOR v_day IN SELECT DISTINCT date '1970-01-01' + d FROM unnest(p_days) AS d WHERE d IS NOT NULL ORDER BY 1 LOOP
        v_name := 'samples_p' || to_char(v_day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('%I.%I', v_schema, v_name)) IS NOT NULL;
        -- Serialises creators (writers and maintenance tasks of every instance).
        PERFORM pg_advisory_xact_lock(1869903989, 0);
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                              WHERE n.nspname = v_schema AND c.relname = v_name);
        EXECUTE format(
            'CREATE TABLE %I.%I PARTITION OF %I.samples FOR VALUES FROM (%L) TO (%L)',
            v_schema, v_name, v_schema,
            to_char(v_day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(v_day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END
$$;
