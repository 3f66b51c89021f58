-- outletd schema, migration 21: pricing energy by tariff (docs/ROLLUPS.md, "Cost").
--
-- Cost is computed when it is read, from the 1-minute rollups: the energy of each minute is priced at the band,
-- monthly adder and taxes in force at that minute in the tariff's clock. Nothing priced is stored, so a late
-- reading, a rollup rebuild or a new tariff version changes cost exactly as it changes energy, at once, and
-- re-pricing costs nothing. Money is numeric throughout; rounding to the currency's minor unit happens once, at
-- display.

-- The instant a local time of `p_zone` stands for. A time that happens twice (when clocks go back) is its first
-- occurrence, so a band 02:00–03:00 on that night covers both of its hours (the clock reads 02:xx for two);
-- a time that does not happen (clocks go forward) is the instant PostgreSQL gives it, after the gap, so a band
-- inside the gap is empty that day.
CREATE FUNCTION outletd_local_instant(p_local timestamp, p_zone text) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN ((p_local AT TIME ZONE p_zone) - interval '1 hour') AT TIME ZONE p_zone = p_local
                THEN (p_local AT TIME ZONE p_zone) - interval '1 hour'
                ELSE p_local AT TIME ZONE p_zone END
$$;

-- The prices of tariff p_tariff_id on the local days of its clock (the version's time_zone, else p_zone) that
-- [p_from, p_to) touches: each day is cut at midnight and at the edges of the bands that apply that day (its
-- weekday, unless it is a holiday), and each piece [from_minute, to_minute) of the day carries the first band that
-- covers it (NULL outside every band) and its price per kWh with the month's adder and the taxes:
-- (price + adder) × (1 + taxes_percent / 100). A version prices from its valid_from until the next one's; before
-- the first version there is no price and no row.
CREATE FUNCTION outletd_tariff_pieces(p_tariff_id bigint, p_zone text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (zone text, day date, from_minute integer, to_minute integer, band text, price_per_kwh numeric)
LANGUAGE sql STABLE AS $$
    WITH versions AS (
        SELECT v.*, coalesce(v.time_zone, p_zone) AS zone,
               lead(v.valid_from) OVER (ORDER BY v.valid_from) AS valid_until
        FROM tariff_versions v WHERE v.tariff_id = p_tariff_id
    ), days AS (
        SELECT v.id AS version_id, v.zone, v.price_per_kwh, v.taxes_percent, v.holidays, d::date AS day
        FROM versions v,
             generate_series(greatest(v.valid_from, (p_from AT TIME ZONE v.zone)::date),
                             least(coalesce(v.valid_until - 1, 'infinity'::date), (p_to AT TIME ZONE v.zone)::date),
                             interval '1 day') AS d
    ), day_bands AS (
        SELECT days.*, b.position, b.name, b.from_minute, b.to_minute, b.price_per_kwh AS band_price
        FROM days JOIN tariff_bands b ON b.version_id = days.version_id
        WHERE extract(isodow FROM days.day)::int = ANY (b.isodows) AND NOT (days.day = ANY (days.holidays))
    ), edges AS (
        SELECT version_id, day, 0 AS minute FROM days
        UNION SELECT version_id, day, 1440 FROM days
        UNION SELECT version_id, day, from_minute FROM day_bands
        UNION SELECT version_id, day, to_minute FROM day_bands
    ), pieces AS (
        SELECT version_id, day, minute AS from_minute,
               lead(minute) OVER (PARTITION BY version_id, day ORDER BY minute) AS to_minute
        FROM edges
    )
    SELECT days.zone, days.day, p.from_minute, p.to_minute, band.name,
           (coalesce(band.band_price, days.price_per_kwh) + coalesce(a.per_kwh, 0)) * (1 + days.taxes_percent / 100)
    FROM pieces p
    JOIN days ON days.version_id = p.version_id AND days.day = p.day
    LEFT JOIN LATERAL (
        SELECT db.name, db.band_price FROM day_bands db
        WHERE db.version_id = p.version_id AND db.day = p.day
          AND db.from_minute <= p.from_minute AND p.to_minute <= db.to_minute
        ORDER BY db.position LIMIT 1
    ) band ON true
    LEFT JOIN tariff_monthly_adders a ON a.version_id = p.version_id AND a.month = date_trunc('month', p.day)::date
    WHERE p.to_minute IS NOT NULL
$$;

COMMENT ON FUNCTION outletd_tariff_pieces(bigint, text, timestamptz, timestamptz) IS
    'Prices of a tariff by local day and minutes of the day: band (NULL outside every band), price per kWh with '
    'adder and taxes.';

-- The same as instants: constant-price intervals [starts_at, ends_at) (outletd_local_instant's rule at DST).
CREATE FUNCTION outletd_tariff_segments(p_tariff_id bigint, p_zone text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (starts_at timestamptz, ends_at timestamptz, band text, price_per_kwh numeric)
LANGUAGE sql STABLE AS $$
    SELECT s.starts_at, s.ends_at, p.band, p.price_per_kwh
    FROM outletd_tariff_pieces(p_tariff_id, p_zone, p_from, p_to) p
    CROSS JOIN LATERAL (
        SELECT outletd_local_instant(p.day + make_interval(mins => p.from_minute), p.zone) AS starts_at,
               outletd_local_instant(p.day + make_interval(mins => p.to_minute), p.zone) AS ends_at
    ) s
    WHERE s.ends_at > p_from AND s.starts_at < p_to AND s.starts_at < s.ends_at
$$;

COMMENT ON FUNCTION outletd_tariff_segments(bigint, text, timestamptz, timestamptz) IS
    'Constant-price intervals of a tariff: band (NULL outside every band) and price per kWh with adder and taxes.';

-- The zone an outlet's days and (for a tariff without a clock of its own) its bands are counted in.
CREATE FUNCTION outletd_outlet_zone(p_device_id integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(d.time_zone, (SELECT time_zone FROM rollup_settings LIMIT 1), 'UTC')
    FROM devices d WHERE d.id = p_device_id
$$;

-- An outlet's energy and cost by hour (the rollups' hours) and band over the hours starting in [p_from, p_to).
-- Every minute is priced by the piece of the tariff's day its clock shows, so both 02:00 hours of a night when
-- clocks go back are in a 02:00–03:00 band, and a band inside a missing hour prices nothing. An hour that lies in
-- one piece (most: bands rarely start inside an hour) is priced whole from its hourly rollup, sixty times fewer
-- rows; an hour a band edge or a DST change cuts is priced minute by minute from its 1-minute rollups. Energy
-- is summed first and multiplied by its price once per hour and price, in numeric. Minutes without a price
-- (before the tariff's first version, or no tariff) have cost NULL: an hour's cost is NULL only when none of its
-- minutes has a price.
CREATE FUNCTION outletd_outlet_cost(p_code text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (hour_start timestamptz, band text, energy_wh double precision, cost numeric, currency text)
-- The planner cannot know how few hours a band edge cuts and estimates millions of minute rows; its JIT would
-- then spend more than a second compiling a query that runs in milliseconds.
LANGUAGE plpgsql STABLE SET jit = off AS $$
DECLARE
    v_device integer;
    v_tariff bigint;
    v_currency text;
    v_zone text;
    v_clock text;
BEGIN
    -- The outlet, its tariff and clock first, so that the rollups are read by their primary key.
    SELECT o.device_id, o.tariff_id, t.currency INTO v_device, v_tariff, v_currency
    FROM outlet_tariffs o LEFT JOIN tariffs t ON t.id = o.tariff_id WHERE o.code = p_code;
    IF v_device IS NULL THEN
        RETURN;
    END IF;
    v_zone := outletd_outlet_zone(v_device);
    v_clock := coalesce((SELECT v.time_zone FROM tariff_versions v WHERE v.tariff_id = v_tariff
                         ORDER BY v.valid_from DESC LIMIT 1), v_zone);
    RETURN QUERY
    WITH pieces AS MATERIALIZED (
        SELECT p.* FROM outletd_tariff_pieces(v_tariff, v_zone, p_from, p_to) p WHERE p.zone = v_clock
    ), hours AS MATERIALIZED (
        SELECT h.bucket_start, h.energy_wh, l.local, l.local::date AS local_day,
               (extract(hour FROM l.local) * 60 + extract(minute FROM l.local))::int AS local_minute,
               (h.bucket_start + interval '1 hour') AT TIME ZONE v_clock = l.local + interval '1 hour' AS plain
        FROM power_rollups_hourly h
        CROSS JOIN LATERAL (SELECT h.bucket_start AT TIME ZONE v_clock AS local) l
        WHERE h.device_id = v_device AND h.bucket_start >= p_from AND h.bucket_start < p_to
    ), whole AS MATERIALIZED (
        SELECT hr.bucket_start AS hour_start, p.band, hr.energy_wh, p.price_per_kwh
        FROM hours hr
        JOIN pieces p ON p.day = hr.local_day AND p.from_minute <= hr.local_minute
             AND hr.local_minute + 60 <= p.to_minute
        WHERE hr.plain
    ), cut_hours AS MATERIALIZED (
        SELECT h2.bucket_start FROM hours h2 WHERE NOT EXISTS (SELECT 1 FROM whole w WHERE w.hour_start = h2.bucket_start)
    ), cut AS (
        SELECT hr.bucket_start AS hour_start, p.band, m.energy_wh, p.price_per_kwh
        FROM cut_hours hr
        CROSS JOIN LATERAL (
            SELECT m1.bucket_start, m1.energy_wh, m1.bucket_start AT TIME ZONE v_clock AS local
            FROM power_rollups_minute m1
            WHERE m1.device_id = v_device AND m1.bucket_start >= hr.bucket_start
              AND m1.bucket_start < hr.bucket_start + interval '1 hour'
            OFFSET 0  -- read per cut hour, by the key: never all of the period's minutes
        ) m
        LEFT JOIN pieces p ON p.day = m.local::date
             AND p.from_minute <= (extract(hour FROM m.local) * 60 + extract(minute FROM m.local))::int
             AND (extract(hour FROM m.local) * 60 + extract(minute FROM m.local))::int < p.to_minute
    ), by_price AS (
        SELECT x.hour_start, x.band, x.price_per_kwh, sum(x.energy_wh) AS energy_wh
        FROM (SELECT * FROM whole UNION ALL SELECT * FROM cut) x
        GROUP BY 1, 2, 3
    )
    SELECT b.hour_start, b.band, sum(b.energy_wh), sum(b.energy_wh::numeric / 1000 * b.price_per_kwh), v_currency
    FROM by_price b
    GROUP BY 1, 2;
END
$$;

COMMENT ON FUNCTION outletd_outlet_cost(text, timestamptz, timestamptz) IS
    'Energy (Wh) and cost (numeric, unrounded) of an outlet by hour and band; cost NULL where no price.';

-- For dashboards: every outlet's cost by hour and band over all its hourly rollups. An hour a band edge cuts is
-- priced from its minute rollups, kept retention.minute_rollup_days (90); older such hours have no row. For a
-- range, outletd_outlet_cost(code, from, to) reads only that range.
CREATE VIEW outlet_cost_hourly AS
SELECT d.code, c.hour_start, c.energy_wh, c.cost, c.currency, c.band
FROM devices d
CROSS JOIN LATERAL (
    SELECT min(h.bucket_start) AS first_hour, max(h.bucket_start) + interval '1 hour' AS after_last
    FROM power_rollups_hourly h WHERE h.device_id = d.id
) r
CROSS JOIN LATERAL outletd_outlet_cost(d.code, r.first_hour, r.after_last) c
WHERE r.first_hour IS NOT NULL;

COMMENT ON VIEW outlet_cost_hourly IS
    'Energy (Wh) and cost per outlet, local hour and band (band NULL outside every band); cost NULL without a price. '
    'Money unrounded (numeric): round once, at display, to the currency''s minor unit.';
COMMENT ON COLUMN outlet_cost_hourly.hour_start IS 'Start of the hour (the rollups'' hours), as an instant.';

CREATE VIEW outlet_cost_daily AS
SELECT h.code, (h.hour_start AT TIME ZONE outletd_outlet_zone(d.id))::date AS day, sum(h.energy_wh) AS energy_wh,
       sum(h.cost) AS cost, h.currency
FROM outlet_cost_hourly h JOIN devices d ON d.code = h.code
GROUP BY 1, 2, h.currency;

COMMENT ON VIEW outlet_cost_daily IS
    'Energy (Wh) and cost per outlet and day of its time zone (devices.time_zone, else rollups.time_zone).';

-- What an outlet's standby costs: the lowest power it sustains (the 5th percentile of its hourly minimum over the
-- last 7 days), drawn for a month at its tariff (the last 30 days' prices: kW × Σ hours × price per kWh).
CREATE VIEW outlet_standby AS
SELECT d.code, s.standby_watts, s.standby_watts::numeric / 1000 * p.priced_hours AS month_cost, t.currency
FROM devices d
CROSS JOIN LATERAL (
    SELECT percentile_cont(0.05) WITHIN GROUP (ORDER BY h.min_power_watts) AS standby_watts
    FROM power_rollups_hourly h
    WHERE h.device_id = d.id AND h.bucket_start >= now() - interval '7 days' AND h.min_power_watts IS NOT NULL
) s
LEFT JOIN outlet_tariffs o ON o.device_id = d.id
LEFT JOIN tariffs t ON t.id = o.tariff_id
LEFT JOIN LATERAL (
    SELECT sum(extract(epoch FROM least(g.ends_at, now()) - greatest(g.starts_at, now() - interval '30 days'))
               / 3600 * g.price_per_kwh) AS priced_hours
    FROM outletd_tariff_segments(o.tariff_id, outletd_outlet_zone(d.id), now() - interval '30 days', now()) g
) p ON o.tariff_id IS NOT NULL
WHERE s.standby_watts IS NOT NULL;

COMMENT ON VIEW outlet_standby IS
    'Standby: 5th percentile of the hourly minimum power over 7 days (W), and its cost for a month at the tariff.';
