-- outletd schema, migration 22: automations, outlets that act on their own (docs/AUTOMATIONS.md).
--
-- An automation is a rule of one kind on one outlet (or, for group-limit, on a named group of outlets). outletd's
-- automation runner (every instance) evaluates the rules; each firing is one row of automation_firings and, when
-- it fired, one command through outletd_enqueue_command (source 'automation', requested_by 'automation:<id>',
-- cause: the rule met), confirmed or not like any other. The firing, its command and the rule's new state are one
-- transaction on the rule's row (FOR UPDATE SKIP LOCKED), so with several instances and across kill -9 a firing
-- happens once; the unique index on (automation, due instant, outlet) says so a second time.

ALTER TABLE commands DROP CONSTRAINT commands_source_check;
ALTER TABLE commands ADD CONSTRAINT commands_source_check
    CHECK (source IN ('mqtt', 'sql', 'cli', 'app', 'automation'));
ALTER TABLE commands ADD COLUMN cause text;
COMMENT ON COLUMN commands.cause IS 'Why an automation requested the command: the rule it met (NULL for others).';

CREATE TABLE automations (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                   text NOT NULL CHECK (kind IN ('schedule', 'timer', 'over-power', 'idle', 'group-limit')),
    device_id              integer REFERENCES devices (id) ON DELETE CASCADE,   -- NULL for group-limit
    group_name             text CHECK (group_name ~ '^[A-Za-z0-9_-]{1,64}$'),    -- group-limit only
    state                  text CHECK (state IN ('on', 'off')),                  -- schedule, timer
    at_minute              smallint CHECK (at_minute BETWEEN 0 AND 1439),        -- schedule: local minute of day
    days                   smallint[] CHECK (days <@ ARRAY[1, 2, 3, 4, 5, 6, 7]::smallint[]), -- schedule: isodow
    fire_at                timestamptz,                                          -- timer
    watts                  double precision,                                     -- power rules
    hold_seconds           integer CHECK (hold_seconds > 0),                     -- power rules: --for
    restore_margin_watts   double precision,                                     -- group-limit --restore
    restore_after_seconds  integer CHECK (restore_after_seconds > 0),
    enabled                boolean NOT NULL DEFAULT true,
    created_by             text NOT NULL,                 -- 'operator:<user>' (CLI) or 'owner:<name>' (app)
    app_user_id            bigint REFERENCES app_users (id) ON DELETE CASCADE,   -- the owner who made it
    created_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    removed_at             timestamptz,                   -- removed rules keep their history
    next_due_at            timestamptz,                   -- schedule, timer: the next firing; NULL when none
    -- What the power rules follow (PowerWatch / GroupWatch): see docs/AUTOMATIONS.md.
    watch_run_start        timestamptz,                   -- first reading of the run meeting the rule (group: above)
    watch_seen_until       timestamptz,                   -- newest reading followed
    watch_fired_run        timestamptz,                   -- the run that fired (group: said nothing to shed)
    watch_below_since      timestamptz,                   -- group-limit --restore: since when the restore holds
    CHECK ((kind = 'group-limit') = (device_id IS NULL)),
    CHECK ((kind = 'group-limit') = (group_name IS NOT NULL)),
    CHECK (kind NOT IN ('schedule', 'timer') OR state IS NOT NULL),
    CHECK (kind <> 'schedule' OR (at_minute IS NOT NULL AND cardinality(days) > 0)),
    CHECK (kind <> 'timer' OR fire_at IS NOT NULL),
    CHECK (kind NOT IN ('over-power', 'idle', 'group-limit') OR (watts IS NOT NULL AND hold_seconds IS NOT NULL))
) WITH (fillfactor = 50);  -- a power rule's row is updated as its outlet reports: room on the page for HOT updates

CREATE INDEX automations_due ON automations (next_due_at)
    WHERE enabled AND removed_at IS NULL AND next_due_at IS NOT NULL;
CREATE INDEX automations_device ON automations (device_id) WHERE removed_at IS NULL;
CREATE INDEX automations_watching ON automations (kind)
    WHERE enabled AND removed_at IS NULL AND kind IN ('over-power', 'idle', 'group-limit');
CREATE UNIQUE INDEX automations_group_name ON automations (group_name) WHERE removed_at IS NULL;

COMMENT ON TABLE automations IS
    'Rules that switch outlets by themselves: schedule, timer, over-power, idle, group-limit (docs/AUTOMATIONS.md).';

-- A group limit's outlets, least important first (position 0). An outlet is in one group limit at most.
CREATE TABLE automation_group_members (
    automation_id  bigint NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    device_id      integer NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    position       integer NOT NULL,
    shed_at        timestamptz,                   -- when the rule switched it off (NULL: not shed)
    shed_watts     double precision,              -- what it drew then
    PRIMARY KEY (automation_id, device_id)
);

CREATE UNIQUE INDEX automation_group_members_device ON automation_group_members (device_id);

-- Everything automations did: fired (with the command), skipped (the rule met, no command: the reason says why),
-- missed (due while no outletd ran, later than automations.catch_up_seconds).
CREATE TABLE automation_firings (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    automation_id  bigint NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    due_at         timestamptz NOT NULL,          -- schedule, timer: when due; power rules: the reading that met it
    recorded_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    result         text NOT NULL CHECK (result IN ('fired', 'skipped', 'missed')),
    device_id      integer REFERENCES devices (id) ON DELETE CASCADE,
    state          text CHECK (state IN ('on', 'off')),
    command_id     bigint REFERENCES commands (id) ON DELETE SET NULL,
    reason         text NOT NULL,
    instance_id    text                           -- the outletd that recorded it
);

CREATE UNIQUE INDEX automation_firings_once ON automation_firings (automation_id, due_at, (coalesce(device_id, 0)));
CREATE INDEX automation_firings_by_automation ON automation_firings (automation_id, id DESC);
CREATE INDEX automation_firings_recent ON automation_firings (recorded_at);

-- For dashboards: every firing, skip and miss with its outlet, rule and command outcome.
CREATE VIEW automation_history AS
SELECT f.id, f.automation_id, a.kind, d.code, a.group_name, f.due_at, f.recorded_at, f.result, f.state,
       f.command_id, c.status AS command_status, f.reason, a.created_by
FROM automation_firings f
JOIN automations a ON a.id = f.automation_id
LEFT JOIN devices d ON d.id = f.device_id
LEFT JOIN commands c ON c.id = f.command_id;

COMMENT ON VIEW automation_history IS
    'What automations did: fired (with the command and its status), skipped (and why), missed.';
