#!/usr/bin/env bash
# outletd with a registry of a million outlets (docs/PERFORMANCE.md, "A million outlets"):
#   1. `outletd-bench registry`: the full load's time, memory, and a look-up's nanoseconds;
#   2. `outletd run` started with REGISTRY_OUTLETS registered: seconds until /readyz answers 200 and
#      its resident memory then;
#   3. a backlog of one reading from each of ACTIVE_OUTLETS outlets drained by that outletd (rollups
#      on), with the writer's batches and their mean duration from /metrics.
# Durable settings, as in `make bench`. Knobs: REGISTRY_OUTLETS (1000000), ACTIVE_OUTLETS (100000),
# ACTIVE_READINGS (3, per active outlet).
set -euo pipefail
cd "$(dirname "$0")/.."
registered=${REGISTRY_OUTLETS:-1000000}
outlets=${ACTIVE_OUTLETS:-100000}
per_outlet=${ACTIVE_READINGS:-3}
drain_timeout=900
swift build -c release --product outletd --product outletd-bench >/dev/null 2>&1 \
    || swift build -c release >/dev/null
bin=$(swift build -c release --show-bin-path)
daemon=$bin/outletd
export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( outlets * per_outlet + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack registry "$outlets"
bench_backlog_setup

echo "== outletd-bench registry: $registered outlets"
# The simulated outlets (sim-000001 …) are registered; the bench adds its own (bench-0000001 …) up to the total.
"$bin/outletd-bench" registry "$db" --outlets "$registered"

echo "== outletd run with $registered registered"
http_port=$(free_port)
export OUTLETD_HTTP_LISTEN=127.0.0.1:$http_port
t0=$(now)
start_outletd
until curl -fs "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1; do
    kill -0 "$outletd_pid" 2>/dev/null || { echo "bench: outletd exited (see $dir/outletd.log)" >&2; exit 1; }
    sleep 0.05
done
ready=$(calc "round($(now) - $t0, 2)")
wait_subscribed
echo "ready after $ready s; RSS $(awk '/VmRSS/ {print $2}' "/proc/$outletd_pid/status") KiB," \
     "peak $(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status") KiB"

echo "== a backlog of $per_outlet readings from each of $outlets outlets"
stop_outletd
publish "$per_outlet"
base=$(inserted)
t0=$(now)
start_outletd
wait_rows $(( outlets * per_outlet )) "$base"
echo "drained $(( outlets * per_outlet )) readings at $(drain_rate "$t0" $(( outlets * per_outlet )))/s from process start;" \
     "RSS $(awk '/VmRSS/ {print $2}' "/proc/$outletd_pid/status") KiB, peak $(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status") KiB"
curl -fs "http://127.0.0.1:$http_port/metrics" | grep -E '^outletd_(batches_committed_total|batch_rows_(sum|count)|commit_seconds_(sum|count)) '
stop_outletd
