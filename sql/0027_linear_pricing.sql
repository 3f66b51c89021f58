-- outletd schema, migration 27: pricing in time proportional to what it reads (issue 62).
--
-- A period's cost read each of its tariff's pieces and then scanned every band of every day of the period for the
-- band that covers the piece: a year of the tarifa branca is 1,406 pieces × 780 day-bands, 1.1 million rows
-- compared, 57 ms of a year-long detail's 95 ms, and four times as much for two years. outletd_tariff_pieces now
-- finds each piece's band by a join on its day (each piece meets the few bands of its own day), and
-- outletd_outlet_cost prices an hour that one price covers straight from its hourly rollup instead of grouping it
-- twice with itself. Both give the rows they gave before, value for value (TariffPricingTests compares them with
-- migration 21's functions); a year now takes 30 ms, a month 3.

CREATE OR REPLACE FUNCTION outletd_tariff_pieces(p_tariff_id bigint, p_zone text, p_from timestamptz,
                                                 p_to timestamptz)
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
    ), banded AS (
        -- The first band (by position) that covers the piece, or none: joined by the piece's version and day.
        SELECT DISTINCT ON (p.version_id, p.day, p.from_minute)
               p.version_id, p.day, p.from_minute, p.to_minute, db.name, db.band_price
        FROM pieces p
        LEFT JOIN day_bands db ON db.version_id = p.version_id AND db.day = p.day
             AND db.from_minute <= p.from_minute AND p.to_minute <= db.to_minute
        WHERE p.to_minute IS NOT NULL
        ORDER BY p.version_id, p.day, p.from_minute, db.position
    )
    SELECT days.zone, days.day, p.from_minute, p.to_minute, p.name,
           (coalesce(p.band_price, days.price_per_kwh) + coalesce(a.per_kwh, 0)) * (1 + days.taxes_percent / 100)
    FROM banded p
    JOIN days ON days.version_id = p.version_id AND days.day = p.day
    LEFT JOIN tariff_monthly_adders a ON a.version_id = p.version_id AND a.month = date_trunc('month', p.day)::date
$$;

-- As in migration 21, but for the hours one price covers (most), whose row is final as read: one hour, one band,
-- one price, so its energy and cost go out as they are rather than through two groupings of one row each.
CREATE OR REPLACE FUNCTION outletd_outlet_cost(p_code text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (hour_start timestamptz, band text, energy_wh double precision, cost numeric, currency text)
LANGUAGE plpgsql STABLE SET jit = off AS $$
DECLARE
    v_device integer;
    v_tariff bigint;
    v_currency text;
    v_zone text;
    v_clock text;
BEGIN
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
        SELECT h.bucket_start, h.energy_wh, l.local::date AS local_day,
               (date_part('hour', l.local) * 60 + date_part('minute', l.local))::int AS local_minute,
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
        SELECT h2.bucket_start FROM hours h2
        WHERE NOT EXISTS (SELECT 1 FROM whole w WHERE w.hour_start = h2.bucket_start)
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
        FROM cut x
        GROUP BY 1, 2, 3
    )
    SELECT w.hour_start, w.band, w.energy_wh, w.energy_wh::numeric / 1000 * w.price_per_kwh, v_currency
    FROM whole w
    UNION ALL
    SELECT b.hour_start, b.band, sum(b.energy_wh), sum(b.energy_wh::numeric / 1000 * b.price_per_kwh), v_currency
    FROM by_price b
    GROUP BY 1, 2;
END
$$;
