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
# A first run of WARM_UP_SECONDS, with rollups, meets the cold caches and is not counted.
#
# Knobs: PAIRS (3), RUN_SECONDS (20), WARM_SECONDS (5), WARM_UP_SECONDS (10), DRAIN_SECONDS
# (120), BENCH_OUTLETS (10000), CONFIG (release).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${PAIRS:-3}
run_seconds=${RUN_SECONDS:-20}
warm=${WARM_SECONDS:-5}
drain_seconds=${DRAIN_SECONDS:-120}
warm_up_seconds=${WARM_UP_SECONDS:-10}
outlets=${BENCH_OUTLETS:-10000}
config=${CONFIG:-release}

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)

# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack rollup-cost "$outlets"

declare -A rows=([with]=0 [without]=0) seconds=([with]=0 [without]=0)

# run with|without|warm-up: one run; adds to rows[side] and seconds[side] (a warm-up run, with
# rollups, counts for neither).
run() {
    local side=$1 maintain=true run_seconds=$run_seconds
    [ "$side" = without ] && maintain=false
    [ "$side" = warm-up ] && run_seconds=$warm_up_seconds
    sql "TRUNCATE samples_stored, device_power_totals, power_rollups_minute_stored, power_rollups_hourly_stored,
                  power_rollups_daily_stored, rollup_tails, ingest_checkpoints;
         UPDATE rollup_settings SET unmaintained_since = NULL; CHECKPOINT"
    rm -rf "$dir/spool"
    OUTLETD_ROLLUPS_MAINTAIN=$maintain "$bin/outletd" run >>"$dir/outletd.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    sleep 3
    local t0 t1 acknowledged stored batches n
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
    # Each batch is one transaction: how many the writer made, and their mean size.
    batches=$(sql "SELECT count(DISTINCT xmin::text) FROM samples_stored")
    n=$(sql "SELECT count(*) FROM samples_stored
             WHERE pg_xact_commit_timestamp(xmin) BETWEEN to_timestamp($t0 + $warm) AND to_timestamp($t1)")
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    if [ "$side" != warm-up ]; then
        rows[$side]=$(( ${rows[$side]} + n ))
        seconds[$side]=$(calc "${seconds[$side]} + $t1 - $t0 - $warm")
    fi
    local label="$side rollups:"
    [ "$side" = warm-up ] && label="warm-up, not counted:"
    printf '%-22s %7d readings/s committed (acknowledged %d, stored %d in %d batches of %d on average)\n' \
        "$label" "$(calc "round($n / ($t1 - $t0 - $warm))")" "$acknowledged" "$stored" "$batches" \
        "$(( stored / (batches > 0 ? batches : 1) ))"
    if [ "$stored" -lt "$acknowledged" ]; then
        echo "rollup-cost: $(( acknowledged - stored )) acknowledged readings not stored after ${drain_seconds} s" >&2
        exit 1
    fi
}

# The first run after the stack starts meets cold caches (PostgreSQL's, the page cache): it is not
# counted.
run warm-up
for i in $(seq 1 "$pairs"); do
    if [ $(( i % 2 )) = 1 ]; then run without; run with; else run with; run without; fi
done
without=$(calc "round(${rows[without]} / ${seconds[without]})")
with=$(calc "round(${rows[with]} / ${seconds[with]})")
echo "all runs: without rollups $without/s, with rollups $with/s, with/without = $(calc "round(100 * $with / $without, 1)") %"
