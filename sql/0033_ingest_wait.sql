-- outletd schema, migration 33: how long ingest's batches wait, where every process that shares the database sees it.
--
-- Each instance's writer stores, with its checkpoint, how long the batch's oldest message had waited from its
-- receipt until the batch's transaction wrote the checkpoint (its last statement before the commit), measured on
-- the instance's own clock. Compaction reads it between chunks and waits while a batch committed in the last
-- seconds waited longer than `retention.compact_yield_ms`: it takes the machine's slack, not ingest's share
-- (docs/COMPACTION.md, "Sharing the machine with ingest"). NULL until the instance's first batch after this
-- migration.

ALTER TABLE ingest_checkpoints ADD COLUMN batch_wait_seconds double precision;

COMMENT ON COLUMN ingest_checkpoints.batch_wait_seconds IS
    'How long the last batch''s oldest message waited, from its receipt until the batch''s transaction stored '
    'this row (seconds, on the instance''s clock).';
