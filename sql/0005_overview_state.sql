-- outletd schema, migration 5: the dashboard overview shows each outlet's availability and its
-- reported on/off state (device columns of migration 3) instead of placeholders.

CREATE OR REPLACE VIEW outlet_overview AS
WITH local AS (
    SELECT (now() AT TIME ZONE time_zone)::date AS today,
           date_trunc('month', now() AT TIME ZONE time_zone)::date AS month_start
    FROM rollup_settings
)
SELECT d.code,
       d.name,
       d.enabled,
       d.online                    AS online,
       d.reported_state            AS state,
       last.last_power_watts,
       last.last_at                AS last_reading_at,
       today.average_power_watts   AS average_power_today_watts,
       today.peak_power_watts      AS peak_power_today_watts,
       today.peak_at               AS peak_today_at,
       coalesce(today.energy_wh, 0) AS energy_today_wh,
       coalesce(month.energy_wh, 0) AS energy_month_wh
FROM devices d
CROSS JOIN local
LEFT JOIN power_rollups_daily today ON today.device_id = d.id AND today.day = local.today
LEFT JOIN LATERAL (
    SELECT m.last_power_watts, m.last_at FROM power_rollups_minute m
    WHERE m.device_id = d.id ORDER BY m.bucket_start DESC LIMIT 1
) last ON true
LEFT JOIN LATERAL (
    SELECT sum(r.energy_wh) AS energy_wh FROM power_rollups_daily r
    WHERE r.device_id = d.id AND r.day >= local.month_start AND r.day <= local.today
) month ON true;
