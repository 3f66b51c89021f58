-- outletd schema, migration 24: samples stored in fewer bytes, read as before.
--
-- A reading cost 108 bytes of heap before its index (a 24-byte tuple header, 80 bytes of columns, a 4-byte line
-- pointer; docs/CAPACITY.md): three timestamps of which one always repeated another, and five doubles for values
-- a device sends with a few decimals. The rows now live in `samples_stored`, in columns that carry only what the
-- reading adds; `samples` is a view with the old columns, names and types, so every query reads what it read.
--
-- Times. measured_at is the device time (when trusted) or the receive time, so one of the three is always a
-- copy of measured_at. received_at is stored as received_delay_us (received − measured_at, microseconds) only
-- when it differs from measured_at or the device time is measured_at; received_at_wide takes a delay beyond an
-- integer's ±35 minutes. device_time is stored only when it differs from measured_at: NULL means "none", or
-- "measured_at" when a receive time is stored; '-infinity' means "none" where a receive time is stored (a
-- device time outletd keeps lies in years 1–9999).
--
-- Values. Each is a whole number of small units (centivolts, milliamperes, centiwatts, thousandths, mWh, an
-- integer seq) when that number, divided back as the view does it (float8 division, correctly rounded),
-- gives the very double the decoder produced (its bits: -0 and NaN never pass); otherwise the double goes to
-- its *_exact column (seq: seq_wide) and the small one is NULL. The view reads coalesce(exact, small / scale):
-- every reading reads back bit for bit (Tests/IngestTests/CompactSampleTests.swift). A NULL costs a bit of
-- the null bitmap, which rows with any NULL already carry.
--
-- Columns are ordered widest first, so no padding sits between them. The writer (BatchStore.encodeStored)
-- COPYs in this order; outletd_compact_sample() below is the same encoding in SQL (the careful way, this
-- migration, and inserts into the view).

CREATE FUNCTION outletd_scaled(p_value double precision, p_scale double precision, p_limit integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Nested CASEs: the cast only meets numbers within the limit (AND fixes no order); -0 keeps its double.
    SELECT CASE WHEN p_value = 0 THEN CASE WHEN p_value::text = '-0' THEN NULL ELSE 0 END
                WHEN abs(p_value * p_scale) <= p_limit THEN
                     CASE WHEN round(p_value * p_scale)::integer / p_scale = p_value
                          THEN round(p_value * p_scale)::integer END
           END
$$;

ALTER TABLE samples RENAME TO samples_before_24;
DROP VIEW sample_partitions;

CREATE TABLE samples_stored (
    measured_at               timestamptz NOT NULL,
    received_at_wide          timestamptz,
    device_time               timestamptz,
    seq_wide                  bigint,
    voltage_exact             double precision,
    current_exact             double precision,
    power_exact               double precision,
    power_factor_exact        double precision,
    energy_exact              double precision,
    device_id                 integer NOT NULL,
    received_delay_us         integer,
    seq                       integer,
    voltage_centivolts        integer,
    current_milliamperes      integer,
    power_centiwatts          integer,
    energy_milliwatt_hours    integer,
    power_factor_thousandths  smallint,
    PRIMARY KEY (device_id, measured_at)
) PARTITION BY RANGE (measured_at);

COMMENT ON TABLE samples_stored IS
    'Raw readings, one partition per UTC day, in compact columns (migration 24); read them through samples.';

-- A reading in the columns of samples_stored: one row. A set-returning SQL function, so that PostgreSQL inlines it
-- into the query that calls it (the careful way, this migration, the view's insert trigger) instead of running a
-- query per reading.
CREATE FUNCTION outletd_compact_sample(
    p_device_id integer, p_measured_at timestamptz, p_received_at timestamptz, p_device_time timestamptz,
    p_voltage double precision, p_current double precision, p_power double precision, p_power_factor double precision,
    p_energy double precision, p_seq bigint
) RETURNS SETOF samples_stored
LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1 AS $$
    SELECT
        p_measured_at,
        CASE WHEN keep_received AND delay IS NULL THEN p_received_at END,
        CASE WHEN p_device_time = p_measured_at THEN NULL
             WHEN p_device_time IS NULL OR NOT isfinite(p_device_time) THEN
                  CASE WHEN keep_received THEN timestamptz '-infinity' END
             ELSE p_device_time END,
        CASE WHEN p_seq NOT BETWEEN -2147483648 AND 2147483647 THEN p_seq END,
        CASE WHEN outletd_scaled(p_voltage, 100, 2147483647) IS NULL THEN p_voltage END,
        CASE WHEN outletd_scaled(p_current, 1000, 2147483647) IS NULL THEN p_current END,
        CASE WHEN outletd_scaled(p_power, 100, 2147483647) IS NULL THEN p_power END,
        CASE WHEN outletd_scaled(p_power_factor, 1000, 32767) IS NULL THEN p_power_factor END,
        CASE WHEN outletd_scaled(p_energy, 1000, 2147483647) IS NULL THEN p_energy END,
        p_device_id,
        CASE WHEN keep_received THEN delay END,
        CASE WHEN p_seq BETWEEN -2147483648 AND 2147483647 THEN p_seq::integer END,
        outletd_scaled(p_voltage, 100, 2147483647),
        outletd_scaled(p_current, 1000, 2147483647),
        outletd_scaled(p_power, 100, 2147483647),
        outletd_scaled(p_energy, 1000, 2147483647),
        outletd_scaled(p_power_factor, 1000, 32767)::smallint
    FROM (SELECT p_device_time IS NOT DISTINCT FROM p_measured_at OR p_received_at <> p_measured_at AS keep_received,
                 CASE WHEN extract(epoch FROM p_received_at - p_measured_at) * 1000000 BETWEEN -2147483648 AND 2147483647
                      THEN (extract(epoch FROM p_received_at - p_measured_at) * 1000000)::integer END AS delay) x
$$;

-- The daily partitions, now of samples_stored (names unchanged: samples_pYYYYMMDD).
CREATE OR REPLACE FUNCTION outletd_ensure_sample_partitions(p_days integer[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day      date;
    v_name     text;
    v_schema   text := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE c.oid = 'samples_stored'::regclass);
    v_created  integer := 0;
BEGIN
    FOR v_day IN SELECT DISTINCT date '1970-01-01' + d FROM unnest(p_days) AS d WHERE d IS NOT NULL ORDER BY 1 LOOP
        v_name := 'samples_p' || to_char(v_day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('%I.%I', v_schema, v_name)) IS NOT NULL;
        -- Serialises creators (writers and maintenance tasks of every instance) on a key of their own
        -- (migration 8); after the lock, pg_class with the statement's snapshot, not the system caches,
        -- which an advisory lock does not refresh.
        PERFORM pg_advisory_xact_lock(1869903989, 0);
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                              WHERE n.nspname = v_schema AND c.relname = v_name);
        EXECUTE format(
            'CREATE TABLE %I.%I PARTITION OF %I.samples_stored FOR VALUES FROM (%L) TO (%L)',
            v_schema, v_name, v_schema,
            to_char(v_day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(v_day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END
$$;

CREATE VIEW sample_partitions AS
SELECT n.nspname::text                                                            AS schema_name,
       c.relname::text                                                            AS partition_name,
       to_date(substr(c.relname, 10), 'YYYYMMDD')                                 AS day,
       to_date(substr(c.relname, 10), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC'   AS starts_at
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.inhparent = 'samples_stored'::regclass AND c.relname ~ '^samples_p[0-9]{8}$';

-- The old partitions step aside; the new ones take their names and the rows, re-encoded.
DO $$
DECLARE
    v_partition record;
BEGIN
    FOR v_partition IN
        SELECT n.nspname AS schema_name, c.relname AS partition_name
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE i.inhparent = 'samples_before_24'::regclass
    LOOP
        EXECUTE format('ALTER TABLE %I.%I RENAME TO %I', v_partition.schema_name, v_partition.partition_name,
                       'before_24_' || v_partition.partition_name);
    END LOOP;
END
$$;

SELECT outletd_ensure_sample_partitions(
    ARRAY(SELECT DISTINCT (measured_at AT TIME ZONE 'UTC')::date - date '1970-01-01' FROM samples_before_24)
    || ARRAY(SELECT (now() AT TIME ZONE 'UTC')::date - date '1970-01-01' + d FROM generate_series(-1, 3) AS d));

INSERT INTO samples_stored
SELECT c.*
FROM samples_before_24 s,
     LATERAL outletd_compact_sample(s.device_id, s.measured_at, s.received_at, s.device_time, s.voltage_volts,
                                    s.current_amperes, s.power_watts, s.power_factor, s.energy_wh, s.seq) c
ORDER BY c.device_id, c.measured_at;

DROP TABLE samples_before_24;

-- The readings as they were written: the columns, names and types `samples` always had.
CREATE VIEW samples AS
SELECT device_id,
       measured_at,
       CASE WHEN received_delay_us IS NOT NULL THEN measured_at + received_delay_us * interval '1 microsecond'
            ELSE coalesce(received_at_wide, measured_at) END                                  AS received_at,
       CASE WHEN device_time = '-infinity' THEN NULL
            WHEN device_time IS NOT NULL THEN device_time
            WHEN received_delay_us IS NOT NULL OR received_at_wide IS NOT NULL THEN measured_at END AS device_time,
       coalesce(voltage_exact, voltage_centivolts / 100::double precision)                    AS voltage_volts,
       coalesce(current_exact, current_milliamperes / 1000::double precision)                 AS current_amperes,
       coalesce(power_exact, power_centiwatts / 100::double precision)                        AS power_watts,
       coalesce(power_factor_exact, power_factor_thousandths / 1000::double precision)        AS power_factor,
       coalesce(energy_exact, energy_milliwatt_hours / 1000::double precision)                AS energy_wh,
       coalesce(seq_wide, seq)                                                                AS seq
FROM samples_stored;

COMMENT ON VIEW samples IS
    'Raw readings, one partition per UTC day (samples_stored); dashboards read the rollups and views instead.';

-- Inserts into the view (scripts, tests, other ingesters) are stored as the writer stores them.
CREATE FUNCTION outletd_insert_sample() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO samples_stored
    SELECT c.* FROM outletd_compact_sample(NEW.device_id, NEW.measured_at, coalesce(NEW.received_at, now()),
                                           NEW.device_time, NEW.voltage_volts, NEW.current_amperes, NEW.power_watts,
                                           NEW.power_factor, NEW.energy_wh, NEW.seq) c;
    RETURN NEW;
END
$$;

CREATE TRIGGER samples_insert INSTEAD OF INSERT ON samples FOR EACH ROW EXECUTE FUNCTION outletd_insert_sample();
