#!/usr/bin/env bash
# Command latency, operator publish → command publish, idle and under telemetry load.
#
#   Benchmarks/command-latency.sh [REQUESTS] [SPACING_MS] [LOAD_OUTLETS] [LOAD_INTERVAL_S]
#
# Starts a throwaway mosquitto + PostgreSQL (scripts/stack), outletd, then measures REQUESTS
# set requests (default 500, one every SPACING_MS = 20 ms) twice: idle, and while
# `outletd simulate` publishes LOAD_OUTLETS readings every LOAD_INTERVAL_S seconds
# (default 1000 outlets every 0.1 s: 10,000 readings/s). CONFIG=release (default) or debug.
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-500}
spacing=${2:-20}
load_outlets=${3:-1000}
load_interval=${4:-0.1}
config=${CONFIG:-release}
swift build -c "$config" --product outletd >/dev/null
swift build -c "$config" --product command-latency >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_stack bench
export OUTLETD_LOGGING_LEVEL=warning
"$bin/outletd" migrate >/dev/null
"$bin/outletd" device add bench-1 >/dev/null
"$bin/outletd" run >"$dir/outletd.log" 2>&1 &
pids+=($!)
sleep 2
echo "idle:"
"$bin/command-latency" "$requests" "$spacing"
"$bin/outletd" simulate --outlets "$load_outlets" --interval "$load_interval" --register >"$dir/simulate.log" 2>&1 &
pids+=($!)
sleep 5
echo "under load ($load_outlets outlets every $load_interval s):"
"$bin/command-latency" "$requests" "$spacing"
stored_before=$(psql "$OUTLETD_DATABASE_URL" -Atc "SELECT count(*) FROM samples")
sleep 5
stored_after=$(psql "$OUTLETD_DATABASE_URL" -Atc "SELECT count(*) FROM samples")
echo "ingest rate after the run: $(( (stored_after - stored_before) / 5 )) readings/s stored"
psql "$OUTLETD_DATABASE_URL" -Atc "SELECT status, count(*) FROM commands GROUP BY 1 ORDER BY 1" | sed 's/^/commands: /'
