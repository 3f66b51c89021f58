#!/usr/bin/env bash
# End-to-end throughput of outletd against the stack's ceiling and the usual alternatives.
#
#   Benchmarks/throughput.sh            the table of docs/PERFORMANCE.md (a few minutes)
#   Benchmarks/throughput.sh --soak     outletd at SOAK_RATE readings/s for SOAK_SECONDS, RSS every 10 s
#
# Starts a throwaway mosquitto + PostgreSQL (scripts/stack), registers BENCH_REGISTERED outlets
# (BENCH_OUTLETS of them publish), and measures, with the same payloads (`outletd simulate`,
# QoS 1, publishing as fast as the broker acknowledges):
#   B        the broker ceiling: simulator → mosquitto → a subscriber that only counts (mosquitto_sub)
#   D        the database ceiling: one COPY of the rows outletd stored, straight into `samples`
#   H        1 / (1/B + 1/D)
#   outletd  end to end over BENCH_SECONDS (readings committed in PostgreSQL per second)
#   python   paho-mqtt + psycopg (from PyPI, in a venv under .build/): one INSERT per message,
#            and batched (COPY every 1,000 rows or 100 ms)
# Rates count rows whose commit time (track_commit_timestamp) falls in the publishing window,
# minus its first WARM_SECONDS. Latency publish → commit is commit time − the reading's `ts`
# (the simulator stamps it when it publishes), at half of outletd's measured rate.
#
# Knobs: BENCH_SECONDS (60, outletd at full rate), SIDE_SECONDS (20, every other run),
# WARM_SECONDS (5), DRAIN_SECONDS (60: how long outletd may take to store its backlog), BENCH_OUTLETS (10000), BENCH_REGISTERED (100000), CONFIG (release),
# SOAK_SECONDS (600), SOAK_RATE (1000, below outletd's measured rate).
set -euo pipefail
cd "$(dirname "$0")/.."
bench_seconds=${BENCH_SECONDS:-60}
side_seconds=${SIDE_SECONDS:-20}
warm=${WARM_SECONDS:-5}
drain_seconds=${DRAIN_SECONDS:-60}
outlets=${BENCH_OUTLETS:-10000}
registered=${BENCH_REGISTERED:-100000}
config=${CONFIG:-release}
soak=0
soak_seconds=${SOAK_SECONDS:-600}
soak_rate=${SOAK_RATE:-1000}
[ "${1:-}" = --soak ] && soak=1

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
venv=.build/bench-venv
if [ "$soak" = 0 ] && ! "$venv/bin/python" -c 'import paho.mqtt, psycopg' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'paho-mqtt>=2,<3' 'psycopg[binary]>=3.1,<4'
fi

# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack throughput "$outlets"
sql "INSERT INTO devices (code, name) SELECT 'reg-' || i, 'registered only'
     FROM generate_series(1, greatest($registered - $outlets, 0)) i"

# publish RATE SECONDS: the simulator for SECONDS (RATE 0: as fast as it can); sets t0, t1.
publish() {
    local interval
    if [ "$1" = 0 ]; then interval=0.000001; else interval=$(calc "$outlets / $1"); fi
    t0=$(now)
    timeout -s INT "$2" "$bin/outletd" simulate --outlets "$outlets" --interval "$interval" \
        >"$dir/simulate.log" 2>&1 || true
    t1=$(calc "$t0 + $2")
    tail -n 1 "$dir/simulate.log" >&2
    acknowledged=$(sed -n 's/.*acknowledged \([0-9]*\), invalid.*/\1/p' "$dir/simulate.log")
}
# Rows of `samples` committed in [t0 + warm, t1], per second.
committed_rate() {
    sql "SELECT round(count(*) / ($t1 - $t0 - $warm)) FROM samples
         WHERE pg_xact_commit_timestamp(xmin) BETWEEN to_timestamp($t0 + $warm) AND to_timestamp($t1)"
}
wait_stored() { # until `samples` holds $1 rows, at most DRAIN_SECONDS; sets `backlog`
    backlog=0
    for _ in $(seq 1 $(( drain_seconds * 5 ))); do
        [ "$(sql 'SELECT count(*) FROM samples')" -ge "$1" ] && return 0
        sleep 0.2
    done
    backlog=$(( $1 - $(sql 'SELECT count(*) FROM samples') ))
    echo "throughput: $backlog of $1 acknowledged readings not stored after the publisher stopped + ${drain_seconds} s" >&2
}
stop_outletd() { # and forget its backlog: the next phase starts from empty tables
    kill -TERM "$outletd_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$outletd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$outletd_pid" 2>/dev/null || true
    wait "$outletd_pid" 2>/dev/null || true
    sql "TRUNCATE samples, device_power_totals, power_rollups_minute_stored, power_rollups_hourly_stored, power_rollups_daily_stored,
                  rollup_tails, ingest_checkpoints"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start_outletd() {
    rm -rf "$dir/spool"
    "$bin/outletd" run >>"$dir/outletd.log" 2>&1 &
    outletd_pid=$!
    pids+=("$outletd_pid")
    sleep 3
}

if [ "$soak" = 1 ]; then
    start_outletd
    echo "soak: $soak_rate readings/s for $soak_seconds s, outletd RSS (KiB) every 10 s:"
    ( publish "$soak_rate" "$soak_seconds" ) &
    publisher_pid=$!
    for _ in $(seq 1 $(( soak_seconds / 10 ))); do
        sleep 10
        echo "$(date +%T) rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$outletd_pid/status") stored=$(sql 'SELECT count(*) FROM samples')"
    done
    wait "$publisher_pid" || true
    echo "peak rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status")"
    exit 0
fi

echo "== B: broker ceiling (${side_seconds} s)" >&2
mosquitto_sub -h 127.0.0.1 -p "$OUTLETD_MQTT_PORT" -q 1 -t 'outlets/+/telemetry' -F '%U' >"$dir/sub.txt" &
sub_pid=$!
pids+=("$sub_pid")
sleep 1
publish 0 "$side_seconds"
sleep 1
kill "$sub_pid"
B=$(awk -v a="$(calc "$t0 + $warm")" -v b="$t1" '$1 >= a && $1 <= b {n++} END {printf "%d", n / (b - a)}' "$dir/sub.txt")

echo "== outletd at full rate (${bench_seconds} s)" >&2
start_outletd
cpu_before=$(cpu_ticks "$outletd_pid")
publish 0 "$bench_seconds"
wait_stored "$acknowledged"
cpu_after=$(cpu_ticks "$outletd_pid")
rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status")
O=$(committed_rate)
stored=$(sql "SELECT count(*) FROM samples")
cpu_per_million=$(calc "round(($cpu_after - $cpu_before) / $(getconf CLK_TCK) / $stored * 1e6, 1)")
full_backlog=$backlog
echo "acknowledged $acknowledged, stored $stored" >&2

echo "== D: COPY of the same $stored rows into samples" >&2
sql "\\copy (SELECT * FROM samples) TO '$dir/rows.copy'"
stop_outletd
d0=$(now)
psql "$db" -X -q -v ON_ERROR_STOP=1 -c "\\copy samples FROM '$dir/rows.copy'"
d1=$(now)
D=$(calc "round($stored / ($d1 - $d0))")
sql "TRUNCATE samples"
H=$(calc "round(1 / (1 / $B + 1 / $D))")

half=$(( O / 2 ))
echo "== outletd at half rate: $half readings/s (${side_seconds} s)" >&2
start_outletd
publish "$half" "$side_seconds"
wait_stored "$acknowledged"
latency=$(sql "SELECT round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::int || ' ' ||
                      round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY x))::int
               FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - measured_at) AS x FROM samples
                     WHERE measured_at >= to_timestamp($t0 + $warm)) s")
half_backlog=$backlog
stop_outletd

python_rate() { # python_rate [--batched]
    sql "TRUNCATE samples"
    "$venv/bin/python" Benchmarks/Throughput/ingester.py "$db" 127.0.0.1 "$OUTLETD_MQTT_PORT" outlets "$@" \
        >"$dir/python.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    sleep 2
    publish 0 "$side_seconds"
    kill -TERM "$pid"
    wait "$pid" || true
    committed_rate
}
echo "== python, batched COPY (${side_seconds} s)" >&2
PB=$(python_rate --batched)
echo "== python, one INSERT per message (${side_seconds} s)" >&2
P1=$(python_rate)

printf '\n%-44s %12s\n' "" "readings/s"
printf '%-44s %12s\n' "B  broker ceiling (count-only subscriber)" "$B"
printf '%-44s %12s\n' "D  database ceiling (COPY into samples)" "$D"
printf '%-44s %12s\n' "H  = 1/(1/B + 1/D)" "$H"
printf '%-44s %12s   backlog %s after %s s\n' "outletd (spool, rollups, ${bench_seconds} s)" "$O" "$full_backlog" "$drain_seconds"
printf '%-44s %12s\n' "python paho + psycopg, batched COPY" "$PB"
printf '%-44s %12s\n' "python paho + psycopg, one INSERT" "$P1"
echo
printf '%-44s %12s   target ≥ 0.80\n' "outletd / H" "$(calc "round($O / $H, 2)")"
printf '%-44s %12s   target ≥ 25\n' "outletd / one INSERT" "$(calc "round($O / max($P1, 1), 1)")"
printf '%-44s %12s   target ≥ 3\n' "outletd / batched" "$(calc "round($O / max($PB, 1), 1)")"
read -r p50 p99 <<<"$latency"
printf '%-44s %12s   backlog %s\n' "publish→commit p50 at $half/s (ms)" "$p50" "$half_backlog"
printf '%-44s %12s   target ≤ 200\n' "publish→commit p99 at $half/s (ms)" "$p99"
printf '%-44s %12s\n' "outletd CPU s per million readings" "$cpu_per_million"
printf '%-44s %12s   target ≤ 65536 (%s outlets registered)\n' "outletd peak RSS (KiB)" "$rss_kib" "$registered"
