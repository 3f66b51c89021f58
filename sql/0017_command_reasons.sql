-- outletd schema, migration 17: every command reason in one shape, "<code>: <detail>".
--
-- A request refused over MQTT already read "unknown_device: device x is not registered"; the reasons the
-- database and the relay gave were free text ("disabled_device", "superseded by command 43", "no
-- confirmation from the outlet"), so one cause had two shapes depending on the path. Now every reason is
-- a machine-readable code, a colon and a detail for people (docs/COMMANDS.md lists the codes; in Swift,
-- Telemetry.CommandReason). This function gives disabled_device, unknown_state and superseded; the relay
-- gives no_confirmation, offline, contrary_state and device_error. Reasons stored before keep their text.
CREATE OR REPLACE FUNCTION outletd_enqueue_command(p_code text, p_requested text, p_source text, p_requested_by text,
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
        v_reason := 'disabled_device: device ' || p_code || ' is disabled';
    ELSIF v_state IS NULL THEN
        v_status := 'rejected';
        v_reason := 'unknown_state: toggle needs the outlet''s state, and it is not known';
    END IF;
    INSERT INTO commands (device_id, requested, state, source, requested_by, request_id, status, reason, expires_at,
                          finished_at)
    VALUES (d.id, p_requested, CASE WHEN v_status = 'queued' THEN v_state END, p_source, p_requested_by,
            p_request_id, v_status, v_reason,
            clock_timestamp() + (SELECT offline_expiry FROM command_settings WHERE id = 1),
            CASE WHEN v_status = 'rejected' THEN clock_timestamp() END)
    RETURNING id INTO v_id;
    IF v_status = 'queued' THEN
        UPDATE commands SET status = 'superseded', reason = 'superseded: superseded by command ' || v_id,
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
