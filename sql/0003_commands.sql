-- outletd schema, migration 3: switching outlets on and off, with confirmation and audit.
--
-- A command is a row of `commands`; every status it enters is a row of `command_transitions` (the
-- audit trail, written by a trigger whatever changed the status). outletd publishes each transition
-- on <prefix>/<code>/set/result, claiming it by `published_at` so that several instances publish it
-- once. See README.md ("Switching outlets") for the lifecycle.

ALTER TABLE devices
    ADD COLUMN desired_state   text CHECK (desired_state IN ('on', 'off')),
    ADD COLUMN desired_at      timestamptz,          -- when desired_state last changed
    ADD COLUMN reported_state  text CHECK (reported_state IN ('on', 'off')),
    ADD COLUMN reported_at     timestamptz,          -- when the outlet last reported its state
    ADD COLUMN online          boolean,              -- from <prefix>/<code>/availability; NULL: never said
    ADD COLUMN last_seen_at    timestamptz;          -- last state or availability message

COMMENT ON COLUMN devices.desired_state IS
    'The state of the latest accepted command. Updating it from SQL requests a switch (same as request_switch).';

-- The confirmation window and the offline expiry outletd runs with (it writes them at start).
CREATE TABLE command_settings (
    id                smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    confirm_timeout   interval NOT NULL DEFAULT interval '10 seconds',
    offline_expiry    interval NOT NULL DEFAULT interval '5 minutes'
);
INSERT INTO command_settings DEFAULT VALUES;

CREATE TABLE commands (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    device_id        integer NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    requested        text NOT NULL CHECK (requested IN ('on', 'off', 'toggle')),  -- what was asked
    state            text CHECK (state IN ('on', 'off')),  -- what the outlet is told (toggle resolved); NULL if rejected
    source           text NOT NULL CHECK (source IN ('mqtt', 'sql', 'cli')),
    requested_by     text,
    request_id       text,
    status           text NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'sent', 'confirmed', 'timed_out', 'rejected', 'expired', 'superseded')),
    reason           text,                         -- why it was rejected, superseded, …
    requested_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at       timestamptz NOT NULL,         -- held for an offline outlet until then
    sent_at          timestamptz,
    sent_by          text,                         -- instance_id of the outletd that published it
    confirm_deadline timestamptz,                  -- sent_at + the confirmation timeout
    finished_at      timestamptz                   -- when it reached a final status
);

CREATE INDEX commands_pending ON commands (device_id, id) WHERE status IN ('queued', 'sent');
CREATE INDEX commands_by_device ON commands (device_id, requested_at DESC);

COMMENT ON TABLE commands IS 'Switch commands from MQTT, SQL and the CLI: who asked, from where, what happened.';

-- The audit trail: one row per status a command entered. Also outletd's outbox for set/result.
CREATE TABLE command_transitions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    command_id    bigint NOT NULL REFERENCES commands (id) ON DELETE CASCADE,
    status        text NOT NULL,
    reason        text,
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at  timestamptz                    -- when outletd published it on set/result
);

CREATE INDEX command_transitions_unpublished ON command_transitions (id) WHERE published_at IS NULL;
CREATE INDEX command_transitions_command ON command_transitions (command_id, id);

-- Records every status a command enters, and tells outletd (channel outletd_commands, payload the
-- command id) about new commands and every transition.
CREATE FUNCTION outletd_command_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO command_transitions (command_id, status, reason) VALUES (NEW.id, NEW.status, NEW.reason);
        PERFORM pg_notify('outletd_commands', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER commands_transition AFTER INSERT OR UPDATE OF status ON commands
    FOR EACH ROW EXECUTE FUNCTION outletd_command_transition();

-- The one way a command comes into being (MQTT requests through outletd, request_switch, an
-- UPDATE of devices.desired_state, the CLI). Under a lock on the outlet's row: resolves toggle,
-- supersedes the outlet's pending command, records the new one (rejected when the outlet is
-- disabled or toggle has nothing to toggle) and sets desired_state. Returns the command id.
CREATE FUNCTION outletd_enqueue_command(p_code text, p_requested text, p_source text, p_requested_by text,
                                        p_request_id text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    d        devices%ROWTYPE;
    v_state  text;
    v_reason text;
    v_status text := 'queued';
    v_id     bigint;
BEGIN
    SELECT * INTO d FROM devices WHERE code = p_code FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no device % is registered', p_code USING ERRCODE = 'no_data_found';
    END IF;
    IF p_requested NOT IN ('on', 'off', 'toggle') THEN
        RAISE EXCEPTION 'requested state must be on, off or toggle, not %', p_requested
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_requested = 'toggle' THEN
        v_state := CASE COALESCE(d.desired_state, d.reported_state) WHEN 'on' THEN 'off' WHEN 'off' THEN 'on' END;
    ELSE
        v_state := p_requested;
    END IF;
    IF NOT d.enabled THEN
        v_status := 'rejected';
        v_reason := 'disabled_device';
    ELSIF v_state IS NULL THEN
        v_status := 'rejected';
        v_reason := 'toggle: the outlet''s state is not known';
    END IF;
    INSERT INTO commands (device_id, requested, state, source, requested_by, request_id, status, reason, expires_at,
                          finished_at)
    VALUES (d.id, p_requested, CASE WHEN v_status = 'queued' THEN v_state END, p_source, p_requested_by,
            p_request_id, v_status, v_reason,
            clock_timestamp() + (SELECT offline_expiry FROM command_settings WHERE id = 1),
            CASE WHEN v_status = 'rejected' THEN clock_timestamp() END)
    RETURNING id INTO v_id;
    IF v_status = 'queued' THEN
        UPDATE commands SET status = 'superseded', reason = 'superseded by command ' || v_id,
                            finished_at = clock_timestamp()
        WHERE device_id = d.id AND status IN ('queued', 'sent') AND id <> v_id;
        -- Not a new request: the trigger on desired_state must not fire for this update.
        PERFORM set_config('outletd.enqueueing', 'on', true);
        UPDATE devices SET desired_state = v_state, desired_at = clock_timestamp()
        WHERE id = d.id AND desired_state IS DISTINCT FROM v_state;
        PERFORM set_config('outletd.enqueueing', '', true);
    END IF;
    RETURN v_id;
END
$$;

-- For dashboards and apps: switch outlet `code` on (true) or off (false). Returns the command id;
-- follow it in commands / command_transitions. Raises no_data_found for an unknown code.
CREATE FUNCTION request_switch(code text, turn_on boolean, requested_by text DEFAULT NULL) RETURNS bigint
LANGUAGE sql AS $$
    SELECT outletd_enqueue_command(code, CASE WHEN turn_on THEN 'on' ELSE 'off' END, 'sql',
                                   COALESCE(requested_by, current_user), NULL)
$$;

COMMENT ON FUNCTION request_switch(text, boolean, text) IS
    'Switch an outlet on (true) or off (false); returns the command id. outletd sends it, confirms it or times it out.';

-- An UPDATE of devices.desired_state from SQL is a request like request_switch.
CREATE FUNCTION outletd_desired_state_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(current_setting('outletd.enqueueing', true), '') <> 'on' THEN
        PERFORM outletd_enqueue_command(NEW.code, NEW.desired_state, 'sql', current_user, NULL);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_desired_state AFTER UPDATE OF desired_state ON devices
    FOR EACH ROW WHEN (NEW.desired_state IS NOT NULL AND NEW.desired_state IS DISTINCT FROM OLD.desired_state)
    EXECUTE FUNCTION outletd_desired_state_changed();

-- Outlets whose reported state differs from the desired one for longer than the confirmation window.
CREATE VIEW outlets_out_of_sync AS
SELECT d.code, d.name, d.desired_state, d.desired_at, d.reported_state, d.reported_at, d.online, d.last_seen_at,
       clock_timestamp() - d.desired_at AS out_of_sync_for
FROM devices d
WHERE d.desired_state IS NOT NULL
  AND d.reported_state IS DISTINCT FROM d.desired_state
  AND d.desired_at < clock_timestamp() - (SELECT confirm_timeout FROM command_settings WHERE id = 1);

COMMENT ON VIEW outlets_out_of_sync IS
    'Outlets whose reported state has differed from the desired one for longer than the confirmation timeout.';
