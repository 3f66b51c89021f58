-- outletd schema, migration 25: a rename is announced like any other change of an outlet.
--
-- Home Assistant shows each outlet under its name (its discovery config, Sources/Commands/DiscoveryPublisher.swift),
-- and the owners' app and the demo rename an outlet by an UPDATE of devices.name: without a notification the new name
-- reached Home Assistant only at the next full load (registry.refresh_interval_seconds) or restart. A second trigger,
-- on a name that really changed, sends the same notification as devices_notify (an UPDATE of the name and, say,
-- enabled together notifies once: PostgreSQL folds identical notifications of one transaction).

CREATE TRIGGER devices_notify_name
    AFTER UPDATE OF name ON devices
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION outletd_devices_notify();
