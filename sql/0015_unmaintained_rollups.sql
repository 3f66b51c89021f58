-- outletd schema, migration 15: samples stored while outletd did not maintain the rollups
-- (configuration rollups.maintain: false).
--
-- Without rollups a batch costs the move statement alone: bulk backfills go faster, and the ingest
-- benchmark measures what the rollups cost end to end (docs/ROLLUPS.md, "Ingest without rollups").
-- The rollup tables and the views over them then miss what was stored meanwhile, until
-- `outletd rollup rebuild` restates them. rollup_settings.unmaintained_since says from when:
-- the earliest measured_at of a batch stored without rollups (readings buffered by an outlet may be
-- older than the moment rollups were turned off), NULL while nothing is missing.
ALTER TABLE rollup_settings ADD COLUMN unmaintained_since timestamptz;

COMMENT ON COLUMN rollup_settings.unmaintained_since IS
    'Earliest measured_at of a sample stored without rollup maintenance (rollups.maintain: false); '
    'NULL when none is missing. A rebuild of every outlet from before it clears it.';

-- Called when outletd starts with rollups.maintain: false. Every open bucket is written to its
-- stored table and every tail is dropped, as retention does with the tail of a dropped partition:
-- when rollups are maintained again, each outlet starts afresh from its next sample, instead of
-- linking its last maintained sample to it across the samples the rollups never saw.
CREATE FUNCTION outletd_rollups_unmaintained() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_devices  integer[];
BEGIN
    SELECT array_agg(device_id ORDER BY device_id) INTO v_devices FROM rollup_tails;
    IF v_devices IS NOT NULL THEN
        PERFORM outletd_rollups_close(v_devices);
        DELETE FROM rollup_tails WHERE device_id = ANY (v_devices);
    END IF;
END
$$;
