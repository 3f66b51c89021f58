-- outletd schema, migration 9: each outlet's last sample, so that the write path merges the change
-- of a batch into the rollups instead of recomputing minutes from the raw samples.
--
-- Until now the write path recomputed every touched minute from the raw samples, and found the
-- sample before each outlet's first new one with a probe into samples that had no lower time bound
-- (so it visited every daily partition). With one new reading for each of thousands of outlets in
-- a batch that cost about 1.8 s per 5,000 rows (docs/PERFORMANCE.md).
--
-- Now each outlet's newest sample (its "tail": time, power, counter) is kept in rollup_tails, under
-- the same per-outlet lock as the rollups. When an outlet's new samples all come after its tail (new
-- data in time order: the usual case), the new segments are tail → first new → … → last new, and
-- the change of every bucket is additive: counts, sums, integrals, covered seconds and energy add
-- up; the minimum can only fall, the peak only rise, the last sample only move later. outletd
-- computes the batch's share per outlet-minute itself and PostgreSQL merges it, with the segment
-- from the tail, into minutes, hours and days with one upsert each, without reading raw samples.
-- An outlet with a new sample older than its tail (a late reading between stored ones), or with a
-- replayed reading in the batch, goes through outletd_rollups_after_insert as before, which
-- recomputes its touched minutes from the samples. Both give the same buckets (docs/ROLLUPS.md;
-- the property test in RollupTests checks it).

CREATE TABLE rollup_tails (
    device_id    integer PRIMARY KEY,
    measured_at  timestamptz NOT NULL,
    power_watts  double precision NOT NULL,
    energy_wh    double precision
) WITH (fillfactor = 70);  -- rewritten by every batch that carries a reading of the outlet: keep updates HOT

COMMENT ON TABLE rollup_tails IS
    'Per outlet, its newest sample as the rollups last saw it (time, power, energy counter); maintained by outletd.';

INSERT INTO rollup_tails (device_id, measured_at, power_watts, energy_wh)
SELECT DISTINCT ON (device_id) device_id, measured_at, power_watts, energy_wh
FROM samples
ORDER BY device_id, measured_at DESC;

-- `outletd rollup rebuild` also sets the outlet's tail again from its newest raw sample.
CREATE OR REPLACE FUNCTION outletd_rollups_rebuild(p_device_id integer, p_from timestamptz, p_to timestamptz)
RETURNS integer
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_minutes  timestamptz[];
BEGIN
    PERFORM outletd_lock_devices(ARRAY[p_device_id]);
    DELETE FROM rollup_tails WHERE device_id = p_device_id;
    INSERT INTO rollup_tails (device_id, measured_at, power_watts, energy_wh)
    SELECT device_id, measured_at, power_watts, energy_wh FROM samples
    WHERE device_id = p_device_id ORDER BY measured_at DESC LIMIT 1;
    SELECT array_agg(minute) INTO v_minutes FROM (
        SELECT date_trunc('minute', measured_at, 'UTC') AS minute FROM samples
        WHERE device_id = p_device_id AND measured_at >= p_from AND measured_at < p_to
        UNION
        SELECT bucket_start FROM power_rollups_minute
        WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to
    ) m;
    IF v_minutes IS NULL THEN
        RETURN 0;
    END IF;
    -- Minutes that no longer have samples disappear; the others are written again.
    DELETE FROM power_rollups_minute
    WHERE device_id = p_device_id AND bucket_start >= p_from AND bucket_start < p_to;
    RETURN outletd_rollups_recompute(array_fill(p_device_id, ARRAY[cardinality(v_minutes)]), v_minutes);
END
$$;

-- Retention: a tail whose sample's partition is gone goes too, so the outlet's next sample starts
-- afresh, as it would when recomputed from the raw samples that remain.
CREATE OR REPLACE FUNCTION outletd_drop_sample_partitions(p_before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    v_partition record;
BEGIN
    FOR v_partition IN
        SELECT schema_name, partition_name FROM sample_partitions
        WHERE starts_at + interval '1 day' <= p_before ORDER BY day
    LOOP
        EXECUTE format('DROP TABLE %I.%I', v_partition.schema_name, v_partition.partition_name);
        RETURN NEXT v_partition.partition_name;
    END LOOP;
    DELETE FROM rollup_tails
    WHERE measured_at < coalesce((SELECT min(starts_at) FROM sample_partitions), 'infinity');
END
$$;

-- An outlet removed from the registry takes its rollups and its tail with it.
CREATE OR REPLACE FUNCTION outletd_devices_drop_rollups() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM power_rollups_minute WHERE device_id = OLD.id;
    DELETE FROM power_rollups_hourly WHERE device_id = OLD.id;
    DELETE FROM power_rollups_daily WHERE device_id = OLD.id;
    DELETE FROM rollup_tails WHERE device_id = OLD.id;
    RETURN NULL;
END
$$;

-- Retention deletes old minute and hour rows by bucket_start. A B-tree on it cost one more index
-- insertion for every new bucket on the write path. Buckets are written roughly in time order, so
-- a BRIN index finds the old ones for retention (and serves time ranges across all outlets) for a
-- fraction of that upkeep. Reads of one outlet use the primary keys.
DROP INDEX power_rollups_minute_bucket_start;
CREATE INDEX power_rollups_minute_bucket_start ON power_rollups_minute USING brin (bucket_start);
DROP INDEX power_rollups_hourly_bucket_start;
CREATE INDEX power_rollups_hourly_bucket_start ON power_rollups_hourly USING brin (bucket_start);
