#!/usr/bin/env bash
# Benchmark (not a test): end-to-end ingest throughput of 1 and 2 outletd instances in one share
# group, on this machine, against the real mosquitto and PostgreSQL of scripts/stack.
#
# For each instance count N: a fresh database and topic prefix; the N instances start once (so the
# broker holds their sessions and the shared subscription) and stop; BENCH_MESSAGES readings of
# BENCH_OUTLETS outlets are published QoS 1 while they are away (mosquitto deals them out to the
# stopped members' sessions); then the N instances start together and the time until every reading
# is committed (rollups included) is measured. The publisher is not running during the
# measurement, so the figure is what broker → outletd → PostgreSQL drains. Also printed: CPU
# seconds used by outletd, PostgreSQL and mosquitto during the drain, and the load average.
#
#   Benchmarks/scale-throughput.sh            BENCH_MESSAGES=100000 BENCH_OUTLETS=200 BENCH_ROUNDS=2
# docs/SCALING.md has the figures and what they mean.
set -euo pipefail
cd "$(dirname "$0")/.."

messages=${BENCH_MESSAGES:-100000}
outlets=${BENCH_OUTLETS:-200}
rounds=${BENCH_ROUNDS:-2}
per_outlet=$((messages / outlets))
messages=$((per_outlet * outlets))

swift build -c release --product outletd >/dev/null 2>&1
bin="$(swift build -c release --show-bin-path)/outletd"

dir=$(mktemp -d /tmp/outletd-bench-scale.XXXXXX)
declare -a pids
cleanup() {
    for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
    scripts/stack stop "$dir" >/dev/null 2>&1 || true
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$dir"
}
trap cleanup EXIT
scripts/stack start "$dir" >/dev/null
# shellcheck disable=SC1091
. "$dir/env"
base_url=$OUTLETD_DATABASE_URL
export OUTLETD_LOGGING_LEVEL=info OUTLETD_HTTP_LISTEN=
export OUTLETD_MQTT_SHARE_GROUP=bench OUTLETD_COMMANDS_SHARE_GROUP=bench OUTLETD_MQTT_RECEIVE_MAXIMUM=1000

# CPU seconds (user + system) of a set of pids, from /proc.
cpu_seconds() {
    local ticks=0 pid t
    for pid in "$@"; do
        case $pid in '' | *[!0-9]*) continue ;; esac
        # Fields after "pid (comm) ": utime and stime are the 12th and 13th.
        t=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13; exit}')
        ticks=$((ticks + ${t:-0}))
    done
    echo "$ticks"
}
stack_pids() {
    local pm
    pm=$(head -n 1 "$dir/pg/postmaster.pid")
    echo "$pm $(pgrep -P "$pm" | tr '\n' ' ')"
}
hz=$(getconf CLK_TCK)

wait_connected() {
    local log=$1
    for _ in $(seq 1 300); do
        grep -q "broker connected" "$log" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "not connected: $log" >&2; exit 1
}

echo "machine: $(nproc) cores, $(uname -r); $messages readings of $outlets outlets per run"
for round in $(seq 1 "$rounds"); do
    for n in 1 2; do
        db="bench_${round}_${n}"
        psql -X -q "$base_url" -c "CREATE DATABASE $db" >/dev/null
        url="${base_url%/*}/$db"
        prefix="b${round}n${n}/outlets"
        export OUTLETD_DATABASE_URL=$url OUTLETD_MQTT_TOPIC_PREFIX=$prefix
        "$bin" migrate >/dev/null
        psql -X -q "$url" -c "INSERT INTO devices (code) SELECT 'bench-' || lpad(i::text, 4, '0') FROM generate_series(1, $outlets) i" >/dev/null
        # Join the share group once, then stop: the sessions keep the subscription.
        for i in $(seq 1 "$n"); do
            OUTLETD_INSTANCE_ID="b$round-$n-$i" OUTLETD_SPOOL_DIRECTORY="$dir/spool-$round-$n-$i" \
                "$bin" run >"$dir/join-$round-$n-$i.log" 2>&1 &
            pids[i]=$!
        done
        for i in $(seq 1 "$n"); do wait_connected "$dir/join-$round-$n-$i.log"; done
        for i in $(seq 1 "$n"); do kill -TERM "${pids[i]}"; wait "${pids[i]}" || true; pids[i]=""; done
        # Publish while they are away: one mosquitto_pub per outlet, readings 100 ms apart.
        now_ms=$(($(date +%s%3N) - per_outlet * 100))
        publish_start=$(date +%s.%N)
        for k in $(seq 1 "$outlets"); do
            code="bench-$(printf '%04d' "$k")"
            awk -v n="$per_outlet" -v t="$now_ms" -v k="$k" 'BEGIN {
                for (s = 0; s < n; s++)
                    printf "{\"voltage\":230.%d,\"current\":0.5,\"power\":%d,\"ts\":%.0f,\"seq\":%d}\n", s % 10, (s * 7 + k) % 500, t + s * 100, s
            }' | mosquitto_pub -V mqttv5 -p "$OUTLETD_MQTT_PORT" -q 1 -t "$prefix/$code/telemetry" -l
        done
        publish_end=$(date +%s.%N)
        # Drain.
        before_pg=$(cpu_seconds $(stack_pids))
        before_mqtt=$(cpu_seconds "$(cat "$dir/mosquitto/pid")")
        start=$(date +%s.%N)
        for i in $(seq 1 "$n"); do
            OUTLETD_INSTANCE_ID="b$round-$n-$i" OUTLETD_SPOOL_DIRECTORY="$dir/spool-$round-$n-$i" \
                "$bin" run >"$dir/run-$round-$n-$i.log" 2>&1 &
            pids[i]=$!
        done
        deadline=$((SECONDS + 300))
        while [ "$(psql -X -A -t -q "$url" -c 'SELECT count(*) FROM samples')" -lt "$messages" ]; do
            [ "$SECONDS" -lt "$deadline" ] || { echo "not every reading stored after 300 s ($dir)" >&2; exit 1; }
            sleep 0.1
        done
        end=$(date +%s.%N)
        outletd_ticks=$(cpu_seconds "${pids[@]:1}")
        after_pg=$(cpu_seconds $(stack_pids))
        after_mqtt=$(cpu_seconds "$(cat "$dir/mosquitto/pid")")
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        for i in $(seq 1 "$n"); do kill -TERM "${pids[i]}"; wait "${pids[i]}" || true; pids[i]=""; done
        awk -v r="$round" -v n="$n" -v m="$messages" -v s="$start" -v e="$end" -v ps="$publish_start" \
            -v pe="$publish_end" -v o="$outletd_ticks" -v pg="$((after_pg - before_pg))" \
            -v mq="$((after_mqtt - before_mqtt))" -v hz="$hz" -v load="$load" 'BEGIN {
            printf "round %d, %d instance(s): %d readings drained in %.2f s = %.0f readings/s", r, n, m, e - s, m / (e - s)
            printf " (published in %.1f s); CPU s: outletd %.1f, postgres %.1f, mosquitto %.1f; load %s\n",
                pe - ps, o / hz, pg / hz, mq / hz, load
        }'
    done
done
