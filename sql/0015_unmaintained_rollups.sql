-- outletd schema, migration 15: samples stored while outletd did not maintain the rollups
-- (configuration rollups.maintain: false).
--
-- Without rollups a batch takes about 30 % less database time: a bulk backfill that PostgreSQL
-- holds back goes faster, and the rollup-cost benchmark measures what the rollups cost end to end
-- (docs/ROLLUPS.md, "Ingest without rollups"). The rollup tables and the views over them then miss
-- what is stored meanwhile, until `outletd rollup rebuild` restates them.
-- rollup_settings.unmaintained_since says from when. Such a batch sets it to the earliest of its
-- readings (an outlet's buffered readings may be older than the moment rollups were turned off)
-- and of the tails it drops: the segment from an outlet's last maintained sample to its next one
-- belongs to the minute of the former, so a rebuild must start there to restate it. NULL while
-- nothing is missing.
ALTER TABLE rollup_settings ADD COLUMN unmaintained_since timestamptz;

COMMENT ON COLUMN rollup_settings.unmaintained_since IS
    'Rollups miss samples from here on: earliest reading, or dropped tail, of a batch stored without '
    'rollup maintenance (rollups.maintain: false). NULL when none is missing. Cleared by a rebuild of '
    'every outlet from at most this time.';
