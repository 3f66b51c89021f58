-- Creates the missing daily partitions of `samples` for the UTC days in $1 (days since 1970); returns, beside,
-- the rollups' maximum gap, which the writer's rollup deltas need (computed while the samples move), and how
-- many outlets have running totals as the statistics last counted them (-1: not counted yet), by which the
-- writer chooses how add_totals.sql finds their rows.
SELECT outletd_ensure_sample_partitions($1::integer[]), (SELECT max_gap_seconds FROM rollup_settings LIMIT 1),
       (SELECT reltuples FROM pg_class WHERE oid = 'device_power_totals'::regclass)
