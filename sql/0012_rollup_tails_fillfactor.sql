-- outletd schema, migration 12: rollup_tails keeps half of each page free, so that the rewrite of an
-- outlet's row by every batch stays on its page (a HOT update), as device_power_totals does
-- (migration 11).
--
-- Migration 9 gave the table fillfactor 70 for a row of four columns. Since migration 10 the row
-- also holds the outlet's open minute, hour and day (~380 bytes), and a batch rewrites every row of
-- a page in one transaction, so a page needs room for a new version of each of its rows: at 70 % it
-- has room for only part of them. Measured with the ingest benchmark (10,000 outlets, 50,000-row
-- batches, 30 batches): 85–86 % of the updates were HOT and the table grew to 13 MB; at 50 %, 100 %
-- were HOT and the table stayed at 8 MB (docs/PERFORMANCE.md).
ALTER TABLE rollup_tails SET (fillfactor = 50);

-- The setting applies to pages written from now on: write the existing rows again (CLUSTER
-- rewrites the table and its index; the ordering is a side effect, not kept).
CLUSTER rollup_tails USING rollup_tails_pkey;
ALTER TABLE rollup_tails SET WITHOUT CLUSTER;
