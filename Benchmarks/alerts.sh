#!/usr/bin/env bash
# Alerts (docs/ALERTS.md): what an evaluation round costs with OUTLETS outlets (10,000) reporting every 10 s, all
# watched by an owner's offline, on-too-long and command-failed rules, when SILENT of them (100) have gone quiet:
# `outletd alert evaluate` runs ROUNDS rounds (6) and prints each one's wall time and the PostgreSQL backend's CPU
# time; the first opens the SILENT incidents, the others find them open. Every outlet reports on, so on-too-long has
# a pending watch on each (the heaviest case: 10,100 subjects a round). A throwaway stack; about a minute.
#
#   Benchmarks/alerts.sh        (OUTLETS, SILENT, ROUNDS)
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${OUTLETS:-10000}
silent=${SILENT:-100}
rounds=${ROUNDS:-6}

swift build --product outletd >/dev/null
bin="$(swift build --show-bin-path)/outletd"
dir=$(mktemp -d /tmp/outletd-alerts-bench.XXXXXX)
cleanup() { scripts/stack stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
scripts/stack start "$dir" >/dev/null
# shellcheck disable=SC1091
. "$dir/env"
export OUTLETD_CONFIG=""
"$bin" migrate >/dev/null
printf 'bench-password-1\n' | "$bin" user add owner --password-stdin >/dev/null
psql -q -X "$OUTLETD_DATABASE_URL" -v ON_ERROR_STOP=1 >/dev/null <<SQL
INSERT INTO devices (code, owner_id) SELECT 'b-' || lpad(g::text, 6, '0'), (SELECT id FROM app_users)
FROM generate_series(1, $outlets) g;
-- A reading every 10 s for the last day; the first $silent silent for 5 minutes.
INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                 first_measured_at, last_measured_at)
SELECT id, 8640, 0, 0, now(), now() - interval '1 day',
       now() - CASE WHEN id <= $silent THEN interval '5 minutes' ELSE interval '3 seconds' END
FROM devices;
UPDATE devices SET reported_state = 'on';
ANALYZE;
SQL
"$bin" alert set offline --owner owner >/dev/null
"$bin" alert set on-too-long --owner owner --for 3600 >/dev/null
"$bin" alert set command-failed --owner owner >/dev/null
echo "alerts: $outlets outlets every 10 s, offline + on-too-long + command-failed on all of them, $silent silent:"
"$bin" alert evaluate --rounds "$rounds" | sed 's/^/  /'
