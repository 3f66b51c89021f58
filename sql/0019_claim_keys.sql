-- outletd schema, migration 19: the owners' app against a hostile internet (docs/SECURITY.md).
--
-- Claiming an outlet took only its code, and codes are chosen by operators (kitchen-1, demo-0004): a stranger
-- could guess them. Each outlet now has a claim key, printed on its label beside the code, that a claim must
-- give. And a command made in the app belongs to the owner who made it, not to whoever owns the outlet later.

-- Twelve symbols of Crockford's base 32 (60 bits) from the random bits of gen_random_uuid(), which PostgreSQL
-- draws from its strong random source (pg_strong_random). A version 4 UUID's byte 6 carries the version in its
-- high nibble, so it is skipped: the low five bits of bytes 0-5 and 7-12 are all random.
CREATE FUNCTION outletd_new_claim_key() RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', get_byte(u.bytes, i + (i >= 6)::int) % 32 + 1, 1),
                      '' ORDER BY i)
    FROM (SELECT uuid_send(gen_random_uuid()) AS bytes) u, generate_series(0, 11) AS i
$$;

COMMENT ON FUNCTION outletd_new_claim_key() IS
    'A new random claim key: 12 symbols of Crockford base 32 (60 bits), shown as XXXX-XXXX-XXXX.';

-- Every outlet, those registered before this migration included, gets its own key (the default is evaluated per
-- row). `outletd device claim-key CODE` prints it; --rotate makes a new one.
ALTER TABLE devices
    ADD COLUMN claim_key text NOT NULL DEFAULT outletd_new_claim_key()
        CHECK (claim_key ~ '^[0-9A-HJKMNP-TV-Z]{12}$');

COMMENT ON COLUMN devices.claim_key IS
    'The key printed on the outlet''s label; the owners'' app claims an outlet by code and this key.';

-- The app user who asked for a command (source app); only they read it in the app, also after they released the
-- outlet, and the outlet's next owner does not.
ALTER TABLE commands ADD COLUMN app_user_id bigint REFERENCES app_users (id) ON DELETE SET NULL;

CREATE INDEX commands_app_user ON commands (app_user_id) WHERE app_user_id IS NOT NULL;

COMMENT ON COLUMN commands.app_user_id IS 'The app user who requested the command (source app), else NULL.';

-- Failed logins are counted per name and address as well (the per-name limit alone let a stranger lock an
-- owner out).
CREATE INDEX app_login_failures_user_address ON app_login_failures (user_name, address, failed_at);
