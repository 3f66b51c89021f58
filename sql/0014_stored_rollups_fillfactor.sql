-- outletd schema, migration 14: the stored rollup tables fill their pages (fillfactor 100).
--
-- Migration 2 left a fifth of each page free (fillfactor 80) because every batch rewrote the
-- minute, hour and day it touched. Since migration 10 the bucket a batch adds to is open (in
-- rollup_tails), and a bucket goes to its stored table once, when the outlet's data has moved
-- past it. A stored row is rewritten only by a late reading, a rebuild or retention, so the free
-- fifth was kept for updates that hardly come. The minute table is the largest rollup table (90
-- days of a row per outlet and minute by default); full pages hold a quarter more rows in the same
-- disk and cache. Measured with the ingest benchmark (10,000 outlets, 50 readings each): 80,000
-- closed minutes took 1,455 pages instead of 1,819 (docs/ROLLUPS.md, "How the write path
-- maintains them").
--
-- The setting applies to pages written from now on. Existing pages are left as they are: rewriting
-- a large minute table would lock it for as long as the rewrite takes.
ALTER TABLE power_rollups_minute_stored SET (fillfactor = 100);
ALTER TABLE power_rollups_hourly_stored SET (fillfactor = 100);
ALTER TABLE power_rollups_daily_stored SET (fillfactor = 100);
