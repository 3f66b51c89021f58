#!/usr/bin/env bash
# What the rollups cost end to end: outletd's ingest rate with rollups maintained against the same
# daemon with `rollups.maintain: false`, alternating, on one throwaway stack.
#
#   Benchmarks/rollup-cost.sh            3 pairs of 20 s runs (about 5 minutes)
#
# Each run starts outletd on empty tables, publishes as fast as the broker acknowledges from
# BENCH_OUTLETS simulated outlets (`outletd simulate`, QoS 1) for RUN_SECONDS, waits until every
# acknowledged reading is stored, and counts the rows whose commit time (track_commit_timestamp)
# falls in the publishing window minus its first WARM_SECONDS. The runs alternate: without, with,
# with, without, ... so that a slow minute of the machine weighs on both sides alike. The last line
# is the ratio over all runs (all rows over all seconds of each side), the figure to quote.
# `outletd-bench ingest` (docs/ROLLUPS.md) measures the database stage alone.
#
# Knobs: PAIRS (3), RUN_SECONDS (20), WARM_SECONDS (5), DRAIN_SECONDS (120), BENCH_OUTLETS
# (10000), CONFIG (release).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${PAIRS:-3}
run_seconds=${RUN_SECONDS:-20}
warm=${WARM_SECONDS:-5}
drain_seconds=${DRAIN_SECONDS:-120}
outlets=${BENCH_OUTLETS:-10000}
config=${CONFIG:-release}

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)

# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_stack rollup-cost
db=$OUTLETD_DATABASE_URL
sql() { psql "$db" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
sql "ALTER SYSTEM SET track_commit_timestamp = on" 2>/dev/null
scripts/stack pg-restart "$dir" 0 >/dev/null
export OUTLETD_LOGGING_LEVEL=warning OUTLETD_SPOOL_DIRECTORY=$dir/spool OUTLETD_HTTP_LISTEN=
export OUTLETD_MQTT_SESSION_EXPIRY_SECONDS=0
"$bin/outletd" migrate >/dev/null
register_simulated_outlets "$outlets" bench

now() { date +%s.%N; }
calc() { python3 -c "print($1)"; }
declare -A rows=([with]=0 [without]=0) seconds=([with]=0 [without]=0)

# run with|without: one run; adds to rows[side] and seconds[side].
run() {
    local side=$1 maintain=true
    [ "$side" = without ] && maintain=false
    sql "TRUNCATE samples, device_power_totals, power_rollups_minute_stored, power_rollups_hourly_stored,
                  power_rollups_daily_stored, rollup_tails, ingest_checkpoints;
         UPDATE rollup_settings SET unmaintained_since = NULL; CHECKPOINT"
    rm -rf "$dir/spool"
    OUTLETD_ROLLUPS_MAINTAIN=$maintain "$bin/outletd" run >>"$dir/outletd.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    sleep 3
    local t0 t1 acknowledged stored n
    t0=$(now)
    timeout -s INT "$run_seconds" "$bin/outletd" simulate --outlets "$outlets" --interval 0.000001 \
        >"$dir/simulate.log" 2>&1 || true
    t1=$(calc "$t0 + $run_seconds")
    acknowledged=$(sed -n 's/.*acknowledged \([0-9]*\), invalid.*/\1/p' "$dir/simulate.log")
    for _ in $(seq 1 $(( drain_seconds * 5 ))); do
        [ "$(sql 'SELECT count(*) FROM samples')" -ge "$acknowledged" ] && break
        sleep 0.2
    done
    stored=$(sql "SELECT count(*) FROM samples")
    n=$(sql "SELECT count(*) FROM samples
             WHERE pg_xact_commit_timestamp(xmin) BETWEEN to_timestamp($t0 + $warm) AND to_timestamp($t1)")
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    rows[$side]=$(( ${rows[$side]} + n ))
    seconds[$side]=$(calc "${seconds[$side]} + $t1 - $t0 - $warm")
    printf '%-8s rollups: %7d readings/s committed (acknowledged %d, stored %d)\n' \
        "$side" "$(calc "round($n / ($t1 - $t0 - $warm))")" "$acknowledged" "$stored"
    if [ "$stored" -lt "$acknowledged" ]; then
        echo "rollup-cost: $(( acknowledged - stored )) acknowledged readings not stored after ${drain_seconds} s" >&2
        exit 1
    fi
}

for i in $(seq 1 "$pairs"); do
    if [ $(( i % 2 )) = 1 ]; then run without; run with; else run with; run without; fi
done
without=$(calc "round(${rows[without]} / ${seconds[without]})")
with=$(calc "round(${rows[with]} / ${seconds[with]})")
echo "all runs: without rollups $without/s, with rollups $with/s, with/without = $(calc "round(100 * $with / $without, 1)") %"
