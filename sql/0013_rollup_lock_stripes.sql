-- outletd schema, migration 13: the rollup lock of an outlet is one of 1024 stripes (its id modulo
-- 1024), no longer a lock of its own.
--
-- outletd_lock_devices took one transaction-scoped advisory lock per outlet. Every lock held lives
-- in PostgreSQL's shared lock table, which has room for max_locks_per_transaction × (max_connections
-- + background processes) locks: ~7,800 with the defaults (64 × 122). A batch whose samples came
-- from more outlets than that failed with "out of shared memory" (SQLSTATE 53200, hint: increase
-- max_locks_per_transaction) and was retried without end: with max_connections = 100, one batch of
-- 20,000 outlets did (docs/ROLLUPS.md, "Locks"). Now a transaction holds at most 1024 of these
-- locks, whatever the size of the fleet. The statement taking them for a batch of 10,000 outlets
-- took 3.1–3.9 ms of server time instead of 9.2 ms.
--
-- Two outlets in one stripe now wait for each other; they did anyway in practice: a full batch
-- carries samples of most outlets, and two writers on shared outlets already wait for each other's
-- rows of device_power_totals (docs/ROLLUPS.md). A transaction takes all its stripes in one call,
-- in ascending order (a later call in the same transaction names a subset of the outlets of its
-- first: the stripes it already holds), so two transactions never wait for each other in a circle.
-- The stripes use keys of their own (1869903990, 0–1023): an outlet's old key (1869903988, id) is
-- not taken any more.
CREATE OR REPLACE FUNCTION outletd_lock_devices(p_device_ids integer[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1869903990, stripe)
    FROM (SELECT DISTINCT d % 1024 AS stripe FROM unnest(p_device_ids) AS d WHERE d IS NOT NULL ORDER BY 1) ordered;
END
$$;
