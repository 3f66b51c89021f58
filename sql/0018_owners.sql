-- outletd schema, migration 18: the outlet owner's app (issue 31). Owners, their sessions, who owns which
-- outlet, and failed logins for the rate limit. Every query of the app is keyed by the owner's id
-- (Storage.OwnerStore), so another owner's outlet is simply not found.

-- People who log in to the app. Created by `outletd user add`; the password only as a bcrypt hash.
CREATE TABLE app_users (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.@-]{1,64}$'),
    password_hash  text NOT NULL CHECK (password_hash LIKE '$2%'),
    disabled       boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE app_users IS 'Owners who log in to the app (outletd user add); passwords as bcrypt hashes only.';

-- A login's opaque token, stored as its SHA-256 (a stolen table gives no working token). Ends at
-- expires_at, on logout (revoked_at) and when its user is disabled or given a new password.
CREATE TABLE app_sessions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES app_users (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

CREATE INDEX app_sessions_user ON app_sessions (user_id) WHERE revoked_at IS NULL;

COMMENT ON TABLE app_sessions IS 'App logins: sha256 of the bearer token, expiry, revocation.';

-- Failed logins of the last minutes, per name tried and per client address (the rate limit; rows older than
-- the window are deleted by the login path). The name is kept whether or not such a user exists.
CREATE TABLE app_login_failures (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_name  text NOT NULL,
    address    text NOT NULL,
    failed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX app_login_failures_user ON app_login_failures (user_name, failed_at);
CREATE INDEX app_login_failures_address ON app_login_failures (address, failed_at);
CREATE INDEX app_login_failures_time ON app_login_failures (failed_at);

-- Who owns an outlet: one owner at most, set by a claim with the code printed on it, cleared by a release.
-- name and description are the outlet's own columns (the owner sets them with the claim). time_zone is the
-- outlet's zone for "today" and the day by hour; NULL means rollup_settings.time_zone.
ALTER TABLE devices
    ADD COLUMN owner_id   bigint REFERENCES app_users (id) ON DELETE SET NULL,
    ADD COLUMN claimed_at timestamptz,
    ADD COLUMN time_zone  text;

CREATE INDEX devices_owner ON devices (owner_id) WHERE owner_id IS NOT NULL;

COMMENT ON COLUMN devices.owner_id IS 'The app user who claimed the outlet (NULL: unclaimed).';
COMMENT ON COLUMN devices.time_zone IS 'IANA zone of the outlet''s days in the app; NULL: rollup_settings.time_zone.';

-- An unknown zone name is refused when it is written, not when a page is drawn.
CREATE FUNCTION outletd_devices_check_time_zone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.time_zone IS NOT NULL THEN
        PERFORM now() AT TIME ZONE NEW.time_zone;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER devices_check_time_zone
    BEFORE INSERT OR UPDATE OF time_zone ON devices
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_check_time_zone();

-- The app is a fourth source of commands, through the same outletd_enqueue_command as the others.
ALTER TABLE commands DROP CONSTRAINT commands_source_check;
ALTER TABLE commands ADD CONSTRAINT commands_source_check CHECK (source IN ('mqtt', 'sql', 'cli', 'app'));
