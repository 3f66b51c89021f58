#!/usr/bin/env bash
# Where outletd's own process spends its CPU (docs/PERFORMANCE.md, "Profile"): starts a throwaway
# mosquitto and PostgreSQL, registers PROFILE_OUTLETS outlets, runs the release `outletd run`, has
# `outletd simulate` publish PROFILE_RATE readings/s from them, and samples outletd with
# `perf record -e cpu-clock -g` for PROFILE_SECONDS (cpu-clock: this VM counts no hardware events,
# and valgrind 3.19 cannot run the Swift binary). Prints the top symbols and the readings stored.
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${PROFILE_OUTLETS:-10000}
rate=${PROFILE_RATE:-8000}
seconds=${PROFILE_SECONDS:-20}
out=${PROFILE_OUT:-.build/profile}
command -v perf >/dev/null || { echo "profile: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
swift build -c release --product outletd >/dev/null
bin=.build/release
rm -rf "$out" && mkdir -p "$out"
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_stack profile
export OUTLETD_LOGGING_LEVEL=warning OUTLETD_SPOOL_DIRECTORY=$dir/spool OUTLETD_HTTP_LISTEN=
export OUTLETD_MQTT_SESSION_EXPIRY_SECONDS=0
"$bin/outletd" migrate >/dev/null
register_simulated_outlets "$outlets" profile
"$bin/outletd" run >"$dir/outletd.log" 2>&1 &
outletd_pid=$!
pids+=("$outletd_pid")
sleep 3
interval=$(python3 -c "print($outlets / $rate)")
timeout -s INT $(( seconds + 8 )) "$bin/outletd" simulate --outlets "$outlets" --interval "$interval" \
    >"$dir/simulate.log" 2>&1 &
pids+=($!)
sleep 3
perf record -F 999 -e cpu-clock -g -p "$outletd_pid" -o "$out/perf.data" -- sleep "$seconds" 2>/dev/null
wait "${pids[1]}" || true
tail -n 1 "$dir/simulate.log"
sleep 5
echo "stored $(psql "$OUTLETD_DATABASE_URL" -X -At -c 'SELECT count(*) FROM samples')"
perf report -i "$out/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep '%' | head -8
perf report -i "$out/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null | grep '%' | head -30 \
    | swift demangle --simplified | cut -c1-140
echo "perf data: $out/perf.data (perf report -i $out/perf.data)"
