-- outletd schema, migration 28: alerts, outletd telling owners and operators what they need to know (docs/ALERTS.md).
--
-- A rule (alert_rules) watches one outlet, or all of an owner's outlets, for one kind of trouble. The alert runner
-- (every instance; one at a time per round, under an advisory lock, in one transaction) evaluates every rule of a
-- kind in one statement, remembers what is met or pending per rule and outlet (alert_watches), opens and resolves
-- incidents (alert_incidents, at most one open per rule and outlet) and records each step (alert_events). Each
-- opening and resolution is queued once per channel of the owner (alert_deliveries, unique per incident, channel and
-- event); the delivery loop drains that outbox with retries and backoff. kill -9 or a failover mid-round loses the
-- transaction and the next round does it again: nothing is recorded, or queued, twice.

CREATE TABLE alert_rules (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_user_id            bigint REFERENCES app_users (id) ON DELETE CASCADE,  -- the owner; NULL: an operator's
    device_id              integer REFERENCES devices (id) ON DELETE CASCADE,   -- NULL: all the owner's outlets
    kind                   text NOT NULL
                           CHECK (kind IN ('offline', 'on-too-long', 'standby', 'budget', 'command-failed')),
    after_seconds          integer CHECK (after_seconds BETWEEN 30 AND 604800),     -- offline; NULL: automatic
    for_seconds            integer CHECK (for_seconds BETWEEN 60 AND 604800),       -- on-too-long
    watts                  double precision CHECK (watts >= 0.1 AND watts <= 100000), -- on-too-long, standby
    amount                 numeric CHECK (amount > 0 AND amount <= 1000000000),     -- budget
    resolve_after_seconds  integer NOT NULL CHECK (resolve_after_seconds BETWEEN 0 AND 86400),
    enabled                boolean NOT NULL DEFAULT true,
    created_by             text NOT NULL,                 -- 'operator:<user>' (CLI) or 'owner:<name>' (app)
    created_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    removed_at             timestamptz,                   -- removed rules keep their incidents
    CHECK (app_user_id IS NOT NULL OR device_id IS NOT NULL),
    CHECK (kind <> 'standby' OR watts IS NOT NULL),
    CHECK (kind <> 'budget' OR amount IS NOT NULL),
    CHECK (kind <> 'on-too-long' OR for_seconds IS NOT NULL)
);

-- One rule of a kind per owner and outlet (or per owner for all outlets): setting it again changes it.
CREATE UNIQUE INDEX alert_rules_one ON alert_rules (coalesce(app_user_id, 0), coalesce(device_id, 0), kind)
    WHERE removed_at IS NULL;
CREATE INDEX alert_rules_kind ON alert_rules (kind) WHERE enabled AND removed_at IS NULL;
CREATE INDEX alert_rules_owner ON alert_rules (app_user_id) WHERE removed_at IS NULL;

COMMENT ON TABLE alert_rules IS 'What outletd watches for: offline, on-too-long, standby, budget, command-failed.';

-- An incident: one episode of a rule's condition on one outlet (device_id NULL: an owner's whole budget).
CREATE TABLE alert_incidents (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_id          bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    app_user_id      bigint REFERENCES app_users (id) ON DELETE CASCADE,
    device_id        integer REFERENCES devices (id) ON DELETE CASCADE,
    kind             text NOT NULL,
    state            text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
    condition_since  timestamptz NOT NULL,          -- since when the condition held (before the hold, if any)
    opened_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    resolved_at      timestamptz,
    acknowledged_at  timestamptz,
    acknowledged_by  text,
    snoozed_until    timestamptz,                   -- no deliveries until then
    observed         text,                          -- the figure compared, at opening (W, s, money)
    limit_text       text,                          -- the rule's limit then
    currency         text,
    CHECK ((state = 'resolved') = (resolved_at IS NOT NULL))
);

CREATE UNIQUE INDEX alert_incidents_one_open ON alert_incidents (rule_id, coalesce(device_id, 0)) WHERE state = 'open';
CREATE INDEX alert_incidents_owner ON alert_incidents (app_user_id, id DESC);
CREATE INDEX alert_incidents_open ON alert_incidents (app_user_id) WHERE state = 'open';

-- What the runner remembers between rounds for a rule and an outlet (device_key 0: the owner's whole budget):
-- the condition met since, the open incident and since when its condition is clear. No row: all quiet.
CREATE TABLE alert_watches (
    rule_id      bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    device_key   integer NOT NULL,
    met_since    timestamptz,
    incident_id  bigint REFERENCES alert_incidents (id) ON DELETE CASCADE,
    clear_since  timestamptz,
    PRIMARY KEY (rule_id, device_key)
) WITH (fillfactor = 70);

-- Where alerts go: the owner's opted-in channels (app_user_id NULL: the operator's). secret is a webhook's signing
-- secret, p256dh and auth a push subscription's keys: never answered, never logged.
CREATE TABLE alert_channels (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_user_id      bigint REFERENCES app_users (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('page', 'webpush', 'webhook', 'email')),
    target           text NOT NULL CHECK (length(target) <= 2048),  -- address, URL or push endpoint ('' for page)
    secret           text,
    p256dh           text,
    auth             text,
    language         text NOT NULL DEFAULT 'en' CHECK (language IN ('en', 'pt-BR')),
    enabled          boolean NOT NULL DEFAULT true,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    removed_at       timestamptz,
    failing_since    timestamptz,                   -- the first failure since the last success (NULL: fine)
    last_error       text,
    last_success_at  timestamptz
);

CREATE UNIQUE INDEX alert_channels_one ON alert_channels (coalesce(app_user_id, 0), kind, target)
    WHERE removed_at IS NULL;

COMMENT ON COLUMN alert_channels.secret IS 'A webhook''s signing secret: never returned by the API, never logged.';

-- The outbox: one row per incident event and channel, drained by the delivery loop (pending → sent | failed).
CREATE TABLE alert_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incident_id      bigint NOT NULL REFERENCES alert_incidents (id) ON DELETE CASCADE,
    channel_id       bigint NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
    event            text NOT NULL CHECK (event IN ('opened', 'resolved')),
    occurred_at      timestamptz NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at      timestamptz,
    UNIQUE (incident_id, channel_id, event)
);

CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_deliveries_channel ON alert_deliveries (channel_id, id DESC);

-- Every step of every incident: opened, resolved, acknowledged, snoozed, delivered, delivery_failed.
CREATE TABLE alert_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incident_id  bigint NOT NULL REFERENCES alert_incidents (id) ON DELETE CASCADE,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    event        text NOT NULL
                 CHECK (event IN ('opened', 'resolved', 'acknowledged', 'snoozed', 'delivered', 'delivery_failed')),
    channel_id   bigint REFERENCES alert_channels (id) ON DELETE SET NULL,
    detail       text,
    instance_id  text
);

CREATE INDEX alert_events_incident ON alert_events (incident_id, id);
CREATE INDEX alert_events_recent ON alert_events (at);

-- For dashboards and `outletd alert history`: every step with its outlet, owner and channel.
CREATE VIEW alert_history AS
SELECT e.id, e.at, e.event, i.id AS incident_id, i.kind, d.code, u.name AS owner, i.state, ch.kind AS channel,
       e.detail, e.instance_id
FROM alert_events e
JOIN alert_incidents i ON i.id = e.incident_id
LEFT JOIN devices d ON d.id = i.device_id
LEFT JOIN app_users u ON u.id = i.app_user_id
LEFT JOIN alert_channels ch ON ch.id = e.channel_id;

COMMENT ON VIEW alert_history IS 'What alerts did: each incident opened, resolved, acknowledged, snoozed, delivered.';

-- The owners' page hears of its owner's incidents changing (payload: the owner's id; '' for an operator's).
CREATE FUNCTION outletd_alert_incident_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outletd_alerts', coalesce(NEW.app_user_id::text, ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER alert_incidents_changed AFTER INSERT OR UPDATE ON alert_incidents
    FOR EACH ROW EXECUTE FUNCTION outletd_alert_incident_changed();
