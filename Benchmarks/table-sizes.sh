#!/usr/bin/env bash
# Run it as: scripts/stack run Benchmarks/table-sizes.sh   (needs a release build: swift build -c release --product outletd)
# Sizes per row of the tables that grow with outlets × time: 200 outlets, one reading every 10 s
# for 24 h (1,728,000 samples), rollups built by `outletd rollup rebuild`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(swift build -c release --show-bin-path)/outletd"
$bin migrate >/dev/null
sql() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$OUTLETD_DATABASE_URL" -c "$1"; }
sql "INSERT INTO devices (code) SELECT 'size-' || lpad(i::text, 4, '0') FROM generate_series(1, 200) i"
start=$(date -u -d '2 days ago 00:00' +%FT%TZ)
sql "SELECT outletd_ensure_sample_partitions(ARRAY[(extract(epoch FROM timestamptz '$start') / 86400)::int, (extract(epoch FROM timestamptz '$start') / 86400)::int + 1])"
sql "INSERT INTO samples (device_id, measured_at, received_at, voltage_volts, current_amperes, power_watts, power_factor, energy_wh, seq)
     SELECT d.id, t, t, 229.5, 0.42, 96.4 + (s % 7), 0.97, s * 0.27, s
     FROM devices d, generate_series(0, 8639) s, LATERAL (SELECT timestamptz '$start' + s * interval '10 s' AS t) x"
sql "VACUUM ANALYZE samples_stored"
$bin rollup rebuild --since 3d >/dev/null
for t in power_rollups_minute_stored power_rollups_hourly_stored power_rollups_daily_stored; do sql "VACUUM ANALYZE $t"; done
for t in samples_stored power_rollups_minute_stored power_rollups_hourly_stored power_rollups_daily_stored; do
    sql "SELECT '$t: ' || n || ' rows, ' || pg_size_pretty(b) || ' with indexes and TOAST, ' || round(b::numeric / n) || ' bytes/row'
         FROM (SELECT (SELECT count(*) FROM $t) AS n,
                      (SELECT sum(pg_total_relation_size(oid))::bigint FROM (SELECT inhrelid AS oid FROM pg_inherits WHERE inhparent = '$t'::regclass
                                                                             UNION SELECT '$t'::regclass::oid) r) AS b) x"
done
