-- outletd schema, migration 4: where each instance's spool has been written up to.
--
-- The writer updates its row in the same transaction as the samples, rejections and pending
-- codes of a batch, so after a crash it resumes exactly after the last committed record: nothing
-- is lost, nothing counted twice.

CREATE TABLE ingest_checkpoints (
    instance_id  text PRIMARY KEY,
    spool_id     text NOT NULL,
    segment_id   bigint NOT NULL CHECK (segment_id >= 0),
    byte_offset  bigint NOT NULL CHECK (byte_offset >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE ingest_checkpoints IS
    'Per outletd instance: the spool (spool_id) and the position in it (segment_id, byte_offset) '
    'up to which every record is stored. Written in the transaction of the batch it covers.';
