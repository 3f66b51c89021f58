-- outletd schema, migration 11: device_power_totals keeps half of each page free, so that the
-- rewrite of an outlet's totals row by every batch stays on its page (a HOT update).
--
-- Packed full (the default fillfactor of 100), most rewrites found no room on their page: the new
-- version went to another page and needed a new index entry, and the table grew with dead rows
-- until autovacuum came by. At 16,000 readings/s from 10,000 outlets, 72 % of the rewrites were
-- of that kind and the table (10,000 rows) grew to 18–20 MB in 20 s. With room on the page, every
-- rewrite is HOT (the old version is pruned on the page, no index entry is written) and the table
-- stays at ~1.7 MB under the same load (docs/PERFORMANCE.md).
ALTER TABLE device_power_totals SET (fillfactor = 50);

-- The setting applies to pages written from now on: write the existing rows again (CLUSTER
-- rewrites the table and its index; the ordering is a side effect, not kept).
CLUSTER device_power_totals USING device_power_totals_pkey;
ALTER TABLE device_power_totals SET WITHOUT CLUSTER;
