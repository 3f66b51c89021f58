-- outletd schema, migration 32: a day is compacted without deleting its rows one by one.
--
-- Until now each chunk of outlets deleted the readings it had packed from the day's partition. In a day written as
-- ingest writes it (every outlet's readings interleaved by time), 64 outlets of 10,000 have a reading on about 40 %
-- of the day's pages, so every chunk dirtied 40 % of the day, and the full-page images of those pages went into the
-- WAL that ingest's commits wait on: at 10,000 outlets ingest's publish → commit p99 rose from 0.1 to 5.8 s
-- (docs/COMPACTION.md). Now a pass never writes to the day's partition until its end:
--
-- * Each chunk writes its outlets' compact rows *pending* (`pending`): `samples` and every reader skip them, and
--   read those outlets' readings from the partition, which still has them all.
-- * A reading that reaches the partition of a pending outlet-day after its chunk (a late one, or a deletion) marks
--   the pending row `touched` (the partition's trigger, below); the end of the pass packs a touched outlet again.
-- * The end of the pass, one transaction: it repacks the touched outlets, keeps aside the readings of outlets with
--   no pending row (ones that cannot be packed, or that came after their chunk), makes the pending rows visible,
--   TRUNCATEs the partition and puts the kept readings back. Nothing is deleted row by row and nothing is vacuumed:
--   the file goes at once.
-- * A pass cut short (kill -9 of outletd or PostgreSQL) leaves pending rows that nobody reads; the next pass skips
--   the outlets they hold (repacking the touched ones) and finishes. `outletd storage expand` drops them.
--
-- An outlet-day compacted before (late readings in the partition beside a visible row) is still folded in the way
-- it was, in its chunk's transaction: its readings in the partition are few.

ALTER TABLE samples_compact
    ADD COLUMN pending boolean NOT NULL DEFAULT false,
    ADD COLUMN touched boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN samples_compact.pending IS
    'Written by a compaction pass not yet finished: nobody reads it; the partition still holds its readings.';
COMMENT ON COLUMN samples_compact.touched IS
    'A pending row whose outlet-day changed in the partition after it was packed: the pass packs it again.';

CREATE OR REPLACE VIEW samples AS
SELECT * FROM samples_rows
UNION ALL
SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes, r.power_watts,
       r.power_factor, r.energy_wh, r.seq
FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
WHERE NOT c.pending;

CREATE OR REPLACE FUNCTION samples_between(p_device_ids integer[], p_from timestamptz, p_to timestamptz)
RETURNS SETOF samples
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT * FROM samples_rows
    WHERE (p_device_ids IS NULL OR device_id = ANY (p_device_ids)) AND measured_at >= p_from AND measured_at < p_to
    UNION ALL
    SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes,
           r.power_watts, r.power_factor, r.energy_wh, r.seq
    FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
    WHERE (p_device_ids IS NULL OR c.device_id = ANY (p_device_ids)) AND NOT c.pending
      AND c.day >= (p_from AT TIME ZONE 'UTC')::date AND c.day <= (p_to AT TIME ZONE 'UTC')::date
      AND c.last_at >= p_from AND c.first_at < p_to
      AND r.measured_at >= p_from AND r.measured_at < p_to
$$;

CREATE OR REPLACE FUNCTION outletd_compacted_reading(p_device_id integer, p_measured_at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT EXISTS (
        SELECT 1 FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
        WHERE c.device_id = p_device_id AND c.day = (p_measured_at AT TIME ZONE 'UTC')::date AND NOT c.pending
          AND p_measured_at BETWEEN c.first_at AND c.last_at AND r.measured_at = p_measured_at)
$$;

CREATE OR REPLACE FUNCTION outletd_sample_before(p_device_id integer, p_at timestamptz) RETURNS SETOF samples
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
    SELECT * FROM (
        (SELECT * FROM samples_rows WHERE device_id = p_device_id AND measured_at < p_at
         ORDER BY measured_at DESC LIMIT 1)
        UNION ALL
        (SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes,
                r.power_watts, r.power_factor, r.energy_wh, r.seq
         FROM (SELECT * FROM samples_compact WHERE device_id = p_device_id AND first_at < p_at AND NOT pending
               ORDER BY day DESC LIMIT 1) c
         CROSS JOIN LATERAL outletd_compact_readings(c::samples_compact) r
         WHERE r.measured_at < p_at ORDER BY r.measured_at DESC LIMIT 1)
    ) x
    ORDER BY measured_at DESC LIMIT 1
$$;

CREATE OR REPLACE FUNCTION outletd_sample_from(p_device_id integer, p_at timestamptz) RETURNS SETOF samples
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
    SELECT * FROM (
        (SELECT * FROM samples_rows WHERE device_id = p_device_id AND measured_at >= p_at
         ORDER BY measured_at LIMIT 1)
        UNION ALL
        (SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes,
                r.power_watts, r.power_factor, r.energy_wh, r.seq
         FROM (SELECT * FROM samples_compact WHERE device_id = p_device_id AND last_at >= p_at AND NOT pending
               ORDER BY day LIMIT 1) c
         CROSS JOIN LATERAL outletd_compact_readings(c::samples_compact) r
         WHERE r.measured_at >= p_at ORDER BY r.measured_at LIMIT 1)
    ) x
    ORDER BY measured_at LIMIT 1
$$;

-- On the partition of a day being compacted or compacted: a reading of an outlet-day already compacted (a visible
-- row) is refused as the primary key refuses one in row form (unique_violation), unless the transaction says it has
-- checked its readings against the compact form (outletd_compaction_checked; the writer's careful way,
-- sql/write/move_samples.sql). A reading added, changed or deleted in an outlet-day with a pending row marks it
-- touched. Row-form days have no such trigger: the hot path pays nothing.
CREATE OR REPLACE FUNCTION outletd_compacted_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND current_setting('outletd.compaction_checked', true) IS DISTINCT FROM 'on'
       AND EXISTS (SELECT 1 FROM samples_compact
                   WHERE device_id = NEW.device_id AND day = (NEW.measured_at AT TIME ZONE 'UTC')::date
                     AND NOT pending) THEN
        RAISE unique_violation USING
            MESSAGE = format('outlet %s has a compacted day at %s: its readings go the careful way',
                             NEW.device_id, NEW.measured_at),
            CONSTRAINT = 'samples_compact_pkey';
    END IF;
    IF TG_OP <> 'INSERT' THEN
        UPDATE samples_compact SET touched = true
        WHERE device_id = OLD.device_id AND day = (OLD.measured_at AT TIME ZONE 'UTC')::date AND pending
          AND NOT touched;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE samples_compact SET touched = true
        WHERE device_id = NEW.device_id AND day = (NEW.measured_at AT TIME ZONE 'UTC')::date AND pending
          AND NOT touched;
        RETURN NEW;
    END IF;
    RETURN OLD;
END
$$;

-- The partitions that carry the guard: every change, not only inserts, now reaches it.
DO $$
DECLARE
    v_table regclass;
BEGIN
    FOR v_table IN SELECT tgrelid::regclass FROM pg_trigger WHERE tgname = 'samples_compacted_guard' LOOP
        EXECUTE format('DROP TRIGGER samples_compacted_guard ON %s', v_table);
        EXECUTE format('CREATE TRIGGER samples_compacted_guard BEFORE INSERT OR UPDATE OR DELETE ON %s
                        FOR EACH ROW EXECUTE FUNCTION outletd_compacted_guard()', v_table);
    END LOOP;
END
$$;

-- One outlet-day (all outlets of the day: p_device_id NULL) back to row form. Returns how many readings. A pending
-- row only goes: its readings are in the partition.
CREATE OR REPLACE FUNCTION outletd_expand_outlet_day(p_device_id integer, p_day date) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count  bigint;
BEGIN
    PERFORM outletd_compaction_checked();
    DELETE FROM samples_compact WHERE day = p_day AND (p_device_id IS NULL OR device_id = p_device_id) AND pending;
    WITH expanded AS (
        DELETE FROM samples_compact
        WHERE day = p_day AND (p_device_id IS NULL OR device_id = p_device_id)
        RETURNING *
    )
    INSERT INTO samples_stored
    SELECT x.*
    FROM expanded c
    CROSS JOIN LATERAL outletd_compact_readings(c::samples_compact) r
    CROSS JOIN LATERAL outletd_compact_sample(c.device_id, r.measured_at, r.received_at, r.device_time,
                                              r.voltage_volts, r.current_amperes, r.power_watts, r.power_factor,
                                              r.energy_wh, r.seq) x;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
