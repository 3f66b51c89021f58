-- outletd schema, migration 1: the registry, raw samples, running power totals, rejections.
--
-- Applied once by `outletd migrate` (recorded in outletd_schema_migrations). Never edit an
-- applied migration: add a new numbered file.

-- The registry. `code` is what is printed on the outlet and what it uses in its MQTT topics.
CREATE TABLE devices (
    id           integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code         text NOT NULL UNIQUE CHECK (code ~ '^[A-Za-z0-9_-]{1,64}$'),
    name         text NOT NULL DEFAULT '',
    description  text NOT NULL DEFAULT '',
    owner        text,
    protocol     text NOT NULL DEFAULT 'native',
    enabled      boolean NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE devices IS 'Registered outlets. Readings of unknown or disabled codes are rejected.';

-- Every change a running outletd must see is announced on channel outletd_devices with the
-- device code as payload; outletd refreshes its in-memory registry from it (no restart needed).
CREATE FUNCTION outletd_devices_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('outletd_devices', OLD.code);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND (TG_OP = 'INSERT' OR NEW.code IS DISTINCT FROM OLD.code) THEN
        PERFORM pg_notify('outletd_devices', NEW.code);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_notify
    AFTER INSERT OR DELETE OR UPDATE OF code, enabled, protocol ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_notify();

CREATE FUNCTION outletd_touch_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER devices_touch BEFORE UPDATE ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_touch_updated_at();

-- Raw readings. One row per (device, measured_at): a replayed or repeated reading is dropped.
-- No foreign key on device_id: it would cost a trigger per inserted row on the hottest table;
-- outletd only writes ids from the registry and `outletd device remove` deletes the rows.
CREATE TABLE samples (
    device_id        integer NOT NULL,
    measured_at      timestamptz NOT NULL,        -- device time when within the accepted window, else received_at
    received_at      timestamptz NOT NULL,        -- when outletd received the message
    device_time      timestamptz,                 -- what the device said, even when not trusted
    voltage_volts    double precision,
    current_amperes  double precision,
    power_watts      double precision NOT NULL,   -- active power; voltage × current when not reported
    power_factor     double precision,
    energy_wh        double precision,            -- the outlet's cumulative counter, as reported
    seq              bigint,                      -- the outlet's message sequence number
    PRIMARY KEY (device_id, measured_at)
);

COMMENT ON TABLE samples IS 'Raw readings; dashboards read device_power_summary and the rollups instead.';

-- Running totals per outlet, maintained in the same transaction as the insert of the samples
-- they count, from the rows really inserted (never from duplicates).
CREATE TABLE device_power_totals (
    device_id          integer PRIMARY KEY,
    sample_count       bigint NOT NULL,
    power_sum_watts    double precision NOT NULL,
    peak_power_watts   double precision NOT NULL,
    peak_at            timestamptz NOT NULL,
    first_measured_at  timestamptz NOT NULL,
    last_measured_at   timestamptz NOT NULL
);

-- The original app's detail screen: average and peak power per outlet.
CREATE VIEW device_power_summary AS
SELECT d.code,
       d.name,
       d.enabled,
       COALESCE(t.sample_count, 0)                       AS sample_count,
       t.power_sum_watts / NULLIF(t.sample_count, 0)     AS average_power_watts,
       t.peak_power_watts,
       t.peak_at,
       t.first_measured_at                               AS first_reading_at,
       t.last_measured_at                                AS last_reading_at
FROM devices d
LEFT JOIN device_power_totals t ON t.device_id = d.id;

COMMENT ON VIEW device_power_summary IS 'Per outlet: sample count, average power (W), peak power (W) and when, last reading.';

-- Messages outletd refused, newest kept (outletd trims the table to `rejections.keep_messages`).
CREATE TABLE rejected_messages (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at      timestamptz NOT NULL,
    topic            text NOT NULL,
    device_code      text,                        -- the topic's code segment, possibly invalid
    reason           text NOT NULL,               -- e.g. unknown_device, out_of_range, malformed_json
    detail           text NOT NULL,
    reading_index    integer,                     -- position in a JSON array, NULL for the whole message
    payload_excerpt  text NOT NULL                -- the first bytes of the payload
);

CREATE INDEX rejected_messages_reason ON rejected_messages (reason, id);

-- How many readings or messages were rejected, by reason, since the database was created.
CREATE TABLE rejection_counts (
    reason   text PRIMARY KEY,
    count    bigint NOT NULL,
    last_at  timestamptz NOT NULL
);

-- Codes that sent data without being registered (bounded by `rejections.pending_devices_max`).
-- `outletd device approve CODE` registers one.
CREATE TABLE pending_devices (
    code           text PRIMARY KEY CHECK (code ~ '^[A-Za-z0-9_-]{1,64}$'),
    first_seen_at  timestamptz NOT NULL,
    last_seen_at   timestamptz NOT NULL,
    message_count  bigint NOT NULL,
    last_topic     text NOT NULL
);
