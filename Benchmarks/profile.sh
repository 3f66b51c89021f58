#!/usr/bin/env bash
# Where outletd's own process spends its CPU while it drains a backlog (docs/PERFORMANCE.md,
# "Where outletd's CPU goes"):
# the backlog method of `make bench` (Benchmarks/throughput.sh), with outletd started under
# `perf record -g` (frame pointers: Swift's release builds keep them). Durable settings, as in the bench.
# Prints the readings/s of the drain, the top shared objects and the top symbols (self time).
#
# Knobs: PROFILE_READINGS (1000000), PROFILE_OUTLETS (10000), PROFILE_OUT (.build/profile).
set -euo pipefail
cd "$(dirname "$0")/.."
readings=${PROFILE_READINGS:-1000000}
outlets=${PROFILE_OUTLETS:-10000}
out=${PROFILE_OUT:-.build/profile}
drain_timeout=600
command -v perf >/dev/null || { echo "profile: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
swift build -c release --product outletd >/dev/null
bin=$(swift build -c release --show-bin-path)
daemon=$bin/outletd
rm -rf "$out" && mkdir -p "$out"
export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack profile "$outlets"
bench_backlog_setup

start_outletd
wait_subscribed
stop_outletd
publish $(( readings / outlets ))
base=$(inserted)
t0=$(now)
perf record -F 999 -g -o "$out/perf.data" -- "$daemon" run >>"$dir/outletd.log" 2>&1 &
perf_pid=$!
pids+=("$perf_pid")
wait_rows "$readings" "$base"
rate=$(drain_rate "$t0" "$readings")
kill -TERM "$(pgrep -P "$perf_pid" -f "outletd run")"
wait "$perf_pid" || { echo "profile: outletd or perf failed (see $dir/outletd.log)" >&2; exit 1; }
echo "drained $readings readings at $rate/s under perf (perf costs some of it)"
perf report -i "$out/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep '%' | head -10
perf report -i "$out/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null | grep '%' | head -40 \
    | swift demangle --simplified | cut -c1-150
echo "perf data: $out/perf.data (perf report -i $out/perf.data)"
