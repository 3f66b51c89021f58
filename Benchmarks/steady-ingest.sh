#!/usr/bin/env bash
# Where the cores go when outlets report live (docs/OWNER-APP-LOAD.md, "What limits the app now"): ingest alone,
# steady, at RATE readings/s from OUTLETS outlets (Benchmarks/OwnerAppLoad/outlets.c, QoS 1), on a durable
# throwaway stack. Prints, over MEASURE_SECONDS: the readings stored per second; the cores of outletd, the publisher,
# mosquitto and PostgreSQL, and of the four; each one's µs of CPU per reading; and outletd's batches (rows per
# batch, seconds in transactions per second). With STATEMENTS=1, PostgreSQL loads pg_stat_statements and the
# writer's statements are printed: calls, ms in all, ms per call.
#
#   Benchmarks/steady-ingest.sh                    18,000 outlets at 20,000 readings/s (the owners' app stage's)
#   RATE=10000 OUTLETS=100000 Benchmarks/steady-ingest.sh
#   OUTLETD_INGEST_BATCH_MAX_DELAY_MS=250 Benchmarks/steady-ingest.sh      any of outletd's settings
#
# Knobs: OUTLETS (18000), RATE (20000), MEASURE_SECONDS (20), SETTLE (15: seconds of ingest before the measure, while the
# outlets' first readings open their rollups), STATEMENTS (0), CONFIG (release).
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${OUTLETS:-18000}
rate=${RATE:-20000}
seconds=${MEASURE_SECONDS:-20}
settle=${SETTLE:-15}
config=${CONFIG:-release}

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
daemon=$bin/outletd
publisher=.build/owner-app-outlets
cc -O2 -Wall -o "$publisher" Benchmarks/OwnerAppLoad/outlets.c -lm

export STACK_PG_DURABLE=1
if [ "${STATEMENTS:-0}" = 1 ]; then
    export STACK_PG_CONF="shared_preload_libraries = 'pg_stat_statements'"
fi
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack steady "$outlets"
require_durable
metrics_port=$(free_port)
export OUTLETD_HTTP_LISTEN=127.0.0.1:$metrics_port OUTLETD_INSTANCE_ID=bench
# metric NAME: the value of one of outletd's metrics (0 before it exists).
metric() { curl -sf "127.0.0.1:$metrics_port/metrics" | awk -v n="$1" '$1 == n {v = $2} END {print v + 0}'; }

start_outletd
wait_subscribed
width=$(( ${#outlets} > 4 ? ${#outlets} : 4 ))
"$publisher" 127.0.0.1 "$OUTLETD_MQTT_PORT" "$outlets" "$rate" sim- "$width" 2000 >"$dir/publisher.log" 2>&1 &
publisher_pid=$!
pids+=("$publisher_pid")
echo "== $outlets outlets at $rate readings/s: $settle s to settle, then $seconds s measured" >&2
sleep "$settle"
if [ "${STATEMENTS:-0}" = 1 ]; then
    sql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
fi

hz=$(getconf CLK_TCK)
mosquitto_pid=$(cat "$dir/mosquitto/pid")
o0=$(cpu_ticks "$outletd_pid") p0=$(cpu_ticks "$publisher_pid") m0=$(cpu_ticks "$mosquitto_pid") g0=$(pg_cpu_ticks)
i0=$(inserted) b0=$(metric outletd_batches_committed_total) c0=$(metric outletd_commit_seconds_sum) t0=$(now)
sleep "$seconds"
o1=$(cpu_ticks "$outletd_pid") p1=$(cpu_ticks "$publisher_pid") m1=$(cpu_ticks "$mosquitto_pid") g1=$(pg_cpu_ticks)
i1=$(inserted) b1=$(metric outletd_batches_committed_total) c1=$(metric outletd_commit_seconds_sum) t1=$(now)
kill -0 "$publisher_pid" || { echo "steady-ingest: the publisher stopped (see $dir/publisher.log)" >&2; exit 1; }

elapsed=$(calc "$t1 - $t0")
stored=$(( i1 - i0 ))
(( stored > 0 )) || { echo "steady-ingest: nothing stored (see $dir/outletd.log)" >&2; exit 1; }
batches=$(calc "int($b1 - $b0)")
echo "stored $(calc "round($stored / $elapsed)") readings/s ($rate asked) over $(calc "round($elapsed, 1)") s"
printf '%-12s %6s %16s\n' "" cores "µs per reading"
row() { printf '%-12s %6s %16s\n' "$1" "$(calc "round($2 / $hz / $elapsed, 3)")" "$(calc "round($2 / $hz / $stored * 1e6, 1)")"; }
row outletd $(( o1 - o0 ))
row publisher $(( p1 - p0 ))
row mosquitto $(( m1 - m0 ))
row PostgreSQL $(( g1 - g0 ))
row "the four" $(( o1 - o0 + p1 - p0 + m1 - m0 + g1 - g0 ))
echo "of $(nproc) cores; outletd's batches: $batches, $(calc "round($stored / max($batches, 1))") rows each," \
    "$(calc "round(($c1 - $c0) / $elapsed, 2)") s in transactions per second"
tail -n 1 "$dir/publisher.log"
rejected=$(curl -sf "127.0.0.1:$metrics_port/metrics" | awk '/^outletd_rejected_total/ {n += $2} END {print n + 0}')
[ "$rejected" = 0 ] || { echo "steady-ingest: outletd rejected $rejected readings (see $dir/outletd.log)" >&2; exit 1; }
if [ "${STATEMENTS:-0}" = 1 ]; then
    echo "the writer's statements ($batches batches):"
    psql "$db" -X -q -P footer=off -c "
        SELECT calls, round(total_exec_time) AS ms, round((total_exec_time / calls)::numeric, 2) AS ms_per_call,
               left(regexp_replace(query, '\s+', ' ', 'g'), 80) AS statement
        FROM pg_stat_statements WHERE calls >= $batches / 2 AND total_exec_time > 100
        ORDER BY total_exec_time DESC"
fi
