-- Creates the missing daily partitions of `samples` for the UTC days in $1 (days since 1970); returns, beside,
-- the rollups' maximum gap, which the writer's rollup deltas need (computed while the samples move), and how
-- many outlets have running totals, by which the writer chooses how add_totals.sql finds their rows: the larger of
-- what ANALYZE last counted and the live rows of the cumulative statistics, which count from the first insert on
-- (until autovacuum first analyzes the table, reltuples is -1: every batch then hashed all the outlets' totals).
SELECT outletd_ensure_sample_partitions($1::integer[]), (SELECT max_gap_seconds FROM rollup_settings LIMIT 1),
       (SELECT greatest(reltuples, pg_stat_get_live_tuples(oid)) FROM pg_class WHERE oid = 'device_power_totals'::regclass)
