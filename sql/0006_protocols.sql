-- outletd schema, migration 6: Tasmota and Shelly outlets (see docs/PROTOCOLS.md).
--
-- devices.protocol is one of native, tasmota, shelly-gen1, shelly-gen2. A foreign outlet is
-- addressed by its own topic (Tasmota %topic%, Shelly Gen1 id, Shelly Gen2 prefix) and a relay
-- channel; a multi-relay device is one outlet per channel.

ALTER TABLE devices
    ADD COLUMN protocol_topic text,
    ADD COLUMN full_topic     text,
    ADD COLUMN channel        integer NOT NULL DEFAULT 0 CHECK (channel BETWEEN 0 AND 32),
    ADD COLUMN state_on_word  text,
    ADD COLUMN state_off_word text,
    ADD CONSTRAINT devices_protocol_known
        CHECK (protocol IN ('native', 'tasmota', 'shelly-gen1', 'shelly-gen2')),
    ADD CONSTRAINT devices_protocol_topic_needed
        CHECK (protocol = 'native' OR protocol_topic IS NOT NULL);

COMMENT ON COLUMN devices.protocol_topic IS 'Tasmota %topic%, Shelly Gen1 id or Shelly Gen2 prefix; NULL for native.';
COMMENT ON COLUMN devices.full_topic IS 'Tasmota FullTopic pattern; NULL means %prefix%/%topic%/.';
COMMENT ON COLUMN devices.channel IS 'Relay number: Tasmota 1-based (POWER1), Shelly 0-based (relay/0, switch:0).';

-- One outlet per (protocol, topic, channel).
CREATE UNIQUE INDEX devices_protocol_address ON devices (protocol, protocol_topic, channel)
    WHERE protocol_topic IS NOT NULL;

-- Running daemons reload an outlet when its address changes too.
DROP TRIGGER devices_notify ON devices;
CREATE TRIGGER devices_notify
    AFTER INSERT OR DELETE OR UPDATE OF code, enabled, protocol, protocol_topic, full_topic, channel,
        state_on_word, state_off_word ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_notify();

-- Discovery fills these so that `outletd device approve` registers the outlet in one step.
ALTER TABLE pending_devices
    ADD COLUMN suggested_protocol   text,
    ADD COLUMN suggested_topic      text,
    ADD COLUMN suggested_full_topic text,
    ADD COLUMN suggested_channels   integer[],
    ADD COLUMN suggested_on_word    text,
    ADD COLUMN suggested_off_word   text;
