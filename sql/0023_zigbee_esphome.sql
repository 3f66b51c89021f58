-- outletd schema, migration 23: Zigbee2MQTT and ESPHome outlets (see docs/PROTOCOLS.md).
--
-- devices.protocol may also be zigbee2mqtt (protocol_topic: the device's friendly name under the bridge's base
-- topic, which may hold '/') or esphome (protocol_topic: the node's topic prefix). A socket of a multi-socket
-- Zigbee device, or one switch of an ESPHome node with several, is named by its endpoint: the Zigbee2MQTT
-- endpoint ('l2' of state_l2) or the ESPHome switch's object id; '' for a device's only outlet.

ALTER TABLE devices DROP CONSTRAINT devices_protocol_known;

ALTER TABLE devices
    ADD CONSTRAINT devices_protocol_known
        CHECK (protocol IN ('native', 'tasmota', 'shelly-gen1', 'shelly-gen2', 'zigbee2mqtt', 'esphome')),
    ADD COLUMN endpoint              text NOT NULL DEFAULT '' CHECK (length(endpoint) <= 128),
    ADD COLUMN sensor_map            text,
    ADD COLUMN discovered_sensor_map text;

COMMENT ON COLUMN devices.endpoint IS 'Zigbee2MQTT endpoint (l2) or ESPHome switch object id; empty for a device''s only outlet.';
COMMENT ON COLUMN devices.sensor_map IS 'ESPHome: which sensor is what, from --sensor and --switch (power=power,energy=total_energy:kWh,switch=relay).';
COMMENT ON COLUMN devices.discovered_sensor_map IS 'ESPHome: the same, as the node''s own discovery said (it wins over sensor_map, role by role).';

-- One outlet per (protocol, topic, channel, endpoint).
DROP INDEX devices_protocol_address;
CREATE UNIQUE INDEX devices_protocol_address ON devices (protocol, protocol_topic, channel, endpoint)
    WHERE protocol_topic IS NOT NULL;

-- Running daemons reload an outlet when its endpoint or sensors change too.
DROP TRIGGER devices_notify ON devices;
CREATE TRIGGER devices_notify
    AFTER INSERT OR DELETE OR UPDATE OF code, enabled, protocol, protocol_topic, full_topic, channel,
        state_on_word, state_off_word, endpoint, sensor_map, discovered_sensor_map ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_notify();

-- Discovery of multi-socket devices and ESPHome nodes: `outletd device approve` registers one outlet per endpoint,
-- with the sensors discovery named.
ALTER TABLE pending_devices
    ADD COLUMN suggested_endpoints  text[],
    ADD COLUMN suggested_sensor_map text;
