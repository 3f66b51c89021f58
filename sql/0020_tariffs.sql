-- outletd schema, migration 20: energy tariffs as data, versioned (docs/ROLLUPS.md, "Cost").
--
-- An operator loads a tariff from a YAML file (`outletd tariff set NAME --file FILE`): each load is a version
-- that prices from its valid_from (a date of the tariff's clock) until the next version's, so earlier versions
-- keep pricing their own period. Money is numeric, exactly as written in the file, never floating point.

CREATE TABLE tariffs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    currency    text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE tariffs IS 'Energy tariffs (outletd tariff set); one currency each, prices in tariff_versions.';

CREATE TABLE tariff_versions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tariff_id      bigint NOT NULL REFERENCES tariffs (id) ON DELETE CASCADE,
    valid_from     date NOT NULL,
    time_zone      text,
    price_per_kwh  numeric NOT NULL CHECK (price_per_kwh >= 0),
    taxes_percent  numeric NOT NULL DEFAULT 0 CHECK (taxes_percent >= 0),
    holidays       date[] NOT NULL DEFAULT '{}',
    source         text NOT NULL,
    loaded_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tariff_id, valid_from)
);

COMMENT ON TABLE tariff_versions IS
    'One load of a tariff file: prices from valid_from (tariff clock) until the next version of the same tariff.';
COMMENT ON COLUMN tariff_versions.time_zone IS 'The bands'' clock (IANA); NULL: each outlet''s own time zone.';
COMMENT ON COLUMN tariff_versions.price_per_kwh IS 'Price per kWh outside every band.';
COMMENT ON COLUMN tariff_versions.holidays IS 'Days on which no band applies.';
COMMENT ON COLUMN tariff_versions.source IS 'The file as it was loaded.';

-- An unknown zone name is refused when it is written, by the check of devices.time_zone (migration 18), which
-- reads only NEW.time_zone.
CREATE TRIGGER tariff_versions_check_time_zone
    BEFORE INSERT OR UPDATE OF time_zone ON tariff_versions
    FOR EACH ROW EXECUTE FUNCTION outletd_devices_check_time_zone();

-- A version's time-of-day bands, in the file's order: the first that matches a minute wins, and bands sharing
-- a day never overlap (the loader refuses such a file). Minutes after local midnight; to_minute 1440 is 24:00.
CREATE TABLE tariff_bands (
    version_id     bigint NOT NULL REFERENCES tariff_versions (id) ON DELETE CASCADE,
    position       integer NOT NULL,
    name           text NOT NULL,
    isodows        integer[] NOT NULL CHECK (isodows <@ ARRAY[1, 2, 3, 4, 5, 6, 7] AND cardinality(isodows) > 0),
    from_minute    integer NOT NULL CHECK (from_minute BETWEEN 0 AND 1439),
    to_minute      integer NOT NULL CHECK (to_minute BETWEEN 1 AND 1440),
    price_per_kwh  numeric NOT NULL CHECK (price_per_kwh >= 0),
    PRIMARY KEY (version_id, position),
    CHECK (from_minute < to_minute)
);

COMMENT ON TABLE tariff_bands IS 'Time-of-day prices of a tariff version (isodows: 1 = Monday … 7 = Sunday).';

-- Per-kWh adders by month of the tariff's clock (Brazil's bandeira tarifária).
CREATE TABLE tariff_monthly_adders (
    version_id  bigint NOT NULL REFERENCES tariff_versions (id) ON DELETE CASCADE,
    month       date NOT NULL CHECK (extract(day FROM month) = 1),
    per_kwh     numeric NOT NULL CHECK (per_kwh >= 0),
    PRIMARY KEY (version_id, month)
);

COMMENT ON TABLE tariff_monthly_adders IS 'A per-kWh adder for every kWh of a month (month: its first day).';

-- Which tariff prices an outlet: its own assignment, else its owner's, else the default. Assignments carry no
-- time: they price all of an outlet's readings (versions carry time).
CREATE TABLE tariff_assignments (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tariff_id  bigint NOT NULL REFERENCES tariffs (id) ON DELETE CASCADE,
    scope      text NOT NULL CHECK (scope IN ('default', 'owner', 'outlet')),
    user_id    bigint REFERENCES app_users (id) ON DELETE CASCADE,
    device_id  integer REFERENCES devices (id) ON DELETE CASCADE,
    CHECK ((scope = 'default' AND user_id IS NULL AND device_id IS NULL)
        OR (scope = 'owner' AND user_id IS NOT NULL AND device_id IS NULL)
        OR (scope = 'outlet' AND device_id IS NOT NULL AND user_id IS NULL))
);

CREATE UNIQUE INDEX tariff_assignments_default ON tariff_assignments ((true)) WHERE scope = 'default';
CREATE UNIQUE INDEX tariff_assignments_owner ON tariff_assignments (user_id) WHERE scope = 'owner';
CREATE UNIQUE INDEX tariff_assignments_outlet ON tariff_assignments (device_id) WHERE scope = 'outlet';

COMMENT ON TABLE tariff_assignments IS 'Tariff of an outlet, of an owner''s outlets, or the default.';

-- Each outlet's tariff by the rule outlet > owner > default (NULL: none, so its cost is NULL, never 0).
CREATE VIEW outlet_tariffs AS
SELECT d.id AS device_id, d.code,
       coalesce(by_outlet.tariff_id, by_owner.tariff_id, by_default.tariff_id) AS tariff_id,
       CASE WHEN by_outlet.tariff_id IS NOT NULL THEN 'outlet'
            WHEN by_owner.tariff_id IS NOT NULL THEN 'owner'
            WHEN by_default.tariff_id IS NOT NULL THEN 'default' END AS assigned_by
FROM devices d
LEFT JOIN tariff_assignments by_outlet ON by_outlet.scope = 'outlet' AND by_outlet.device_id = d.id
LEFT JOIN tariff_assignments by_owner ON by_owner.scope = 'owner' AND by_owner.user_id = d.owner_id
LEFT JOIN tariff_assignments by_default ON by_default.scope = 'default';

COMMENT ON VIEW outlet_tariffs IS 'The tariff pricing each outlet: outlet beats owner beats default.';
