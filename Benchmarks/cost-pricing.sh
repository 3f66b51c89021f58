#!/usr/bin/env bash
# What pricing costs (docs/COST.md). Cost is computed when it is read, from the rollups, so "re-pricing" a
# month after a new tariff version is simply reading it again; this measures that read. OUTLETS outlets get
# DAYS days of 1-minute and hourly rollups (100 W all along, written straight into the stored tables), priced
# on the issue's tarifa branca (three bands on whole hours, holidays, a monthly adder; CUT=1 moves the bands by
# half an hour, so that two hours of every working day are priced minute by minute). Then:
#   1. every outlet's month in one statement (outletd_outlet_cost per outlet, summed),
#   2. the same through the dashboards' view outlet_cost_daily,
#   3. one outlet's month in a session of its own, as the owners' app and `outletd stats` read it (median of 20).
# Each prints seconds and milliseconds per outlet-month; the last line extrapolates (1) to 10,000 outlets
# (linear: each outlet's month is priced on its own, by its primary key range).
#
#   Benchmarks/cost-pricing.sh         OUTLETS=1000 DAYS=30: 43.2 million minute rows, ~6 GB, ~6 minutes
#
# Knobs: OUTLETS (1000), DAYS (30), CUT (0), CONFIG (debug).
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${OUTLETS:-1000}
days=${DAYS:-30}
config=${CONFIG:-debug}   # only migrate and tariff run outletd: the timing is PostgreSQL's

swift build -c "$config" --product outletd >/dev/null
bin="$(swift build -c "$config" --show-bin-path)/outletd"

# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_stack cost-pricing
db=$OUTLETD_DATABASE_URL
"$bin" migrate >/dev/null
register_simulated_outlets "$outlets" cost

start=2026-11-01T03:00:00Z   # Fortaleza's midnight
cat >"$dir/branca.yaml" <<'YAML'
currency: BRL
time_zone: America/Fortaleza
valid_from: 2026-11-01
price_per_kwh: 0.62
bands:
  - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:00", to: "21:00", price_per_kwh: 1.38}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "17:00", to: "18:00", price_per_kwh: 0.89}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "21:00", to: "22:00", price_per_kwh: 0.89}
holidays: [2026-11-02, 2026-11-15, 2026-11-20, 2026-12-25]
monthly_adders_per_kwh: {"2026-11": 0.01885, "2026-12": 0.04463}
YAML
if [ "${CUT:-0}" = 1 ]; then
    sed -i 's/"17:00"/"17:30"/; s/"18:00", to/"18:30", to/; s/to: "18:00"/to: "18:30"/; s/"21:00", to/"21:30", to/;
            s/to: "21:00"/to: "21:30"/; s/to: "22:00"/to: "22:30"/' "$dir/branca.yaml"
fi
"$bin" tariff set branca --file "$dir/branca.yaml" >/dev/null
"$bin" tariff assign branca --default >/dev/null

echo "cost-pricing: writing $outlets outlets × $days days of minute rollups"
t0=$(now)
sql "INSERT INTO power_rollups_minute_stored (device_id, bucket_start, sample_count, power_sum_watts,
         power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
         last_power_watts, last_at)
     SELECT d.id, m, 6, 600, 6000, 60, 100, 100, m, 100.0 / 60, 100, m
     FROM devices d, generate_series('$start'::timestamptz, '$start'::timestamptz + interval '$days days'
                                     - interval '1 minute', interval '1 minute') m"
sql "INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
         power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
         last_power_watts, last_at)
     SELECT d.id, h, 360, 36000, 360000, 3600, 100, 100, h, 100, 100, h
     FROM devices d, generate_series('$start'::timestamptz, '$start'::timestamptz + interval '$days days'
                                     - interval '1 hour', interval '1 hour') h"
sql "VACUUM ANALYZE power_rollups_minute_stored"
sql "VACUUM ANALYZE power_rollups_hourly_stored"
rows=$(sql "SELECT count(*) FROM power_rollups_minute_stored")
echo "cost-pricing: $rows minute rows in $(calc "round($(now) - $t0, 1)") s"

period="'$start', '$start'::timestamptz + interval '$days days'"
timed() {  # timed LABEL SQL: prints the result and seconds
    local t=$(now) value
    value=$(sql "$2")
    local seconds
    seconds=$(calc "$(now) - $t")
    echo "cost-pricing: $1: $value in $(calc "round($seconds, 2)") s ($(calc "round($seconds / $outlets * 1000, 2)") ms per outlet-month)"
    last_seconds=$seconds
}
timed "every outlet's month (outletd_outlet_cost)" \
    "SELECT round(sum(c.cost), 2) FROM devices d, outletd_outlet_cost(d.code, $period) c"
all_seconds=$last_seconds
timed "every outlet's month (outlet_cost_daily)" "SELECT round(sum(cost), 2) FROM outlet_cost_daily"

one=()
for _ in $(seq 1 20); do
    t=$(now)
    sql "SELECT sum(cost) FROM outletd_outlet_cost('sim-0001', $period)" >/dev/null
    one+=("$(calc "$(now) - $t")")
done
median=$(printf '%s\n' "${one[@]}" | sort -g | sed -n 10p)
echo "cost-pricing: one outlet's month: median $(calc "round($median * 1000, 1)") ms of 20"
echo "cost-pricing: 10,000 outlets' month, extrapolated from $outlets: $(calc "round($all_seconds / $outlets * 10000, 1)") s"
