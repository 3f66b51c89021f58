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

-- The constant-price intervals of tariff p_tariff_id over [p_from, p_to): each local day of the tariff's clock
-- (the version's time_zone, else p_zone) is cut at midnight and at its bands' edges; each piece carries the
-- first band that covers it (NULL outside every band) and its price per kWh with the month's adder and the
-- taxes: (price + adder) × (1 + taxes_percent / 100). A version prices from its valid_from until the next one's.
-- Before the first version there is no price and no row.
CREATE FUNCTION outletd_tariff_segments(p_tariff_id bigint, p_zone text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (starts_at timestamptz, ends_at timestamptz, band text, price_per_kwh numeric)
LANGUAGE sql STABLE AS $$
    WITH versions AS (
        SELECT v.*, coalesce(v.time_zone, p_zone) AS zone,
               lead(v.valid_from) OVER (ORDER BY v.valid_from) AS valid_until
        FROM tariff_versions v WHERE v.tariff_id = p_tariff_id
    ), days AS (
        SELECT v.id AS version_id, v.zone, v.price_per_kwh, v.taxes_percent, v.holidays, d::date AS day
        FROM versions v,
             generate_series(greatest(v.valid_from, (p_from AT TIME ZONE v.zone)::date - 1),
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
    ), priced AS (
        SELECT days.zone, days.day, p.from_minute, p.to_minute, band.name AS band,
               (coalesce(band.band_price, days.price_per_kwh) + coalesce(a.per_kwh, 0))
                   * (1 + days.taxes_percent / 100) AS price_per_kwh
        FROM pieces p
        JOIN days ON days.version_id = p.version_id AND days.day = p.day
        LEFT JOIN LATERAL (
            SELECT db.name, db.band_price FROM day_bands db
            WHERE db.version_id = p.version_id AND db.day = p.day
              AND db.from_minute <= p.from_minute AND p.to_minute <= db.to_minute
            ORDER BY db.position LIMIT 1
        ) band ON true
        LEFT JOIN tariff_monthly_adders a
               ON a.version_id = p.version_id AND a.month = date_trunc('month', p.day)::date
        WHERE p.to_minute IS NOT NULL
    )
    SELECT s.starts_at, s.ends_at, priced.band, priced.price_per_kwh
    FROM priced
    CROSS JOIN LATERAL (
        SELECT outletd_local_instant(priced.day + make_interval(mins => priced.from_minute), priced.zone) AS starts_at,
               outletd_local_instant(priced.day + make_interval(mins => priced.to_minute), priced.zone) AS ends_at
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

-- An outlet's energy and cost by local hour (the hour's start in the outlet's zone) and band over [p_from, p_to):
-- each minute rollup priced at the segment it starts in. Minutes without a price (before the tariff's first
-- version, or no tariff at all) have cost NULL: an hour's cost is NULL only when none of its minutes has a price.
CREATE FUNCTION outletd_outlet_cost(p_code text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (hour_start timestamptz, band text, energy_wh double precision, cost numeric, currency text)
LANGUAGE sql STABLE AS $$
    WITH outlet AS (
        SELECT o.device_id, o.tariff_id, t.currency, outletd_outlet_zone(o.device_id) AS zone
        FROM outlet_tariffs o LEFT JOIN tariffs t ON t.id = o.tariff_id WHERE o.code = p_code
    ), segments AS (
        SELECT s.* FROM outlet, outletd_tariff_segments(outlet.tariff_id, outlet.zone, p_from, p_to) s
    )
    -- The local hour a minute falls in starts that minute minus its local minute of the hour (the rollups' rule), so
    -- each of the two 02:00 hours of a night when clocks go back keeps its own minutes.
    SELECT m.bucket_start - extract(minute FROM m.bucket_start AT TIME ZONE outlet.zone)::int * interval '1 minute'
               AS hour_start, s.band, sum(m.energy_wh) AS energy_wh,
           sum(m.energy_wh::numeric / 1000 * s.price_per_kwh) AS cost, outlet.currency
    FROM outlet
    JOIN power_rollups_minute m ON m.device_id = outlet.device_id
         AND m.bucket_start >= p_from AND m.bucket_start < p_to
    LEFT JOIN segments s ON m.bucket_start >= s.starts_at AND m.bucket_start < s.ends_at
    GROUP BY 1, 2, outlet.currency
$$;

COMMENT ON FUNCTION outletd_outlet_cost(text, timestamptz, timestamptz) IS
    'Energy (Wh) and cost (numeric, unrounded) of an outlet by local hour and band; cost NULL where no price.';

-- For dashboards: every outlet's cost by hour and band over all its minute rollups (kept retention.minute_rollup_days).
-- For a range, outletd_outlet_cost(code, from, to) reads only that range.
CREATE VIEW outlet_cost_hourly AS
SELECT d.code, c.hour_start, c.energy_wh, c.cost, c.currency, c.band
FROM devices d
CROSS JOIN LATERAL (
    SELECT min(m.bucket_start) AS first_minute, max(m.bucket_start) + interval '1 minute' AS after_last
    FROM power_rollups_minute m WHERE m.device_id = d.id
) r
CROSS JOIN LATERAL outletd_outlet_cost(d.code, r.first_minute, r.after_last) c
WHERE r.first_minute IS NOT NULL;

COMMENT ON VIEW outlet_cost_hourly IS
    'Energy (Wh) and cost per outlet, local hour and band (band NULL outside every band); cost NULL without a price. '
    'Money unrounded (numeric): round once, at display, to the currency''s minor unit.';
COMMENT ON COLUMN outlet_cost_hourly.hour_start IS 'Start of the hour in the outlet''s time zone, as an instant.';

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
