#!/usr/bin/env bash
# What database.durability replicated costs, against a primary with an asynchronous streaming standby
# (scripts/lib/pg-pair.sh: loopback, fsync on):
#
#  1. Drain rate. Paired backlog drains (Benchmarks/stack.sh's backlog_drain, as Benchmarks/paired-drains.sh):
#     READINGS readings from OUTLETS outlets published while outletd is away, then drained with durability
#     local and with replicated, alternating, ROUNDS rounds: readings/s, CPU-s per million of outletd and of
#     PostgreSQL, peak RSS.
#  2. The spool while the standby stalls. outletd (replicated) live at RATE readings/s; the standby's WAL
#     receiver stopped (SIGSTOP) for STALL seconds, then resumed. Every second: outletd_spool_unconfirmed_bytes
#     and outletd_replication_lag_bytes from /metrics. Prints the unconfirmed bytes before, at the end of the
#     stall, their growth per second of stall, and how long after the resume they were back to the level
#     before.
#
#   Benchmarks/replicated-drain.sh          READINGS=200000 OUTLETS=2000 ROUNDS=3 RATE=2000 STALL=10
#
# OUTLETS is 2,000 so that no outlet sends two readings within the same millisecond while the backlog is
# published as fast as the broker takes it (they would be one sample, and the drain would wait for the other).
#
# BENCH_BIN: a directory holding the outletd to measure, instead of this tree's release build.
set -euo pipefail
cd "$(dirname "$0")/.."
readings=${READINGS:-200000}
outlets=${OUTLETS:-2000}
rounds=${ROUNDS:-3}
rate=${RATE:-2000}
stall=${STALL:-10}
drain_timeout=$(( 600 + readings / 10000 ))
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
    daemon=$bin/outletd
else
    swift build -c release --product outletd >/dev/null
    bin=$(swift build -c release --show-bin-path)
    daemon=$bin/outletd
fi
"$daemon" check-config 2>/dev/null | grep -q '^database.durability = ' \
    || { echo "bench: this outletd has no database.durability setting" >&2; exit 1; }
export STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
# shellcheck source=scripts/lib/pg-pair.sh
. scripts/lib/pg-pair.sh

dir=$(mktemp -d /tmp/outletd-replicated.XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pg_stop "$dir/standby" immediate
    scripts/stack stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
p1=$(free_port)
p2=$(free_port)
metrics_port=$(free_port)
# Commit timestamps: drain_rate counts rows by the commit of the last one.
PG_PAIR_CONF="track_commit_timestamp = on" pg_pair_make "$dir" "$p1" "$p2"
scripts/stack start-mqtt "$dir" >/dev/null
# shellcheck disable=SC1091
. "$dir/env"
db="postgresql://outletd@127.0.0.1:$p1/outletd"
export OUTLETD_DATABASE_URL=$db
export OUTLETD_LOGGING_LEVEL=warning OUTLETD_SPOOL_DIRECTORY=$dir/spool OUTLETD_HTTP_LISTEN=
require_durable
"$daemon" migrate >/dev/null
register_simulated_outlets "$outlets" bench
bench_backlog_setup
start_outletd
wait_subscribed
stop_outletd

echo "machine: $(nproc) cores, $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg); $readings readings of $outlets outlets per drain"
echo "1. backlog drains, primary with a streaming standby"
for _ in $(seq 1 "$rounds"); do
    backlog_drain OUTLETD_DATABASE_DURABILITY=local
    backlog_drain OUTLETD_DATABASE_DURABILITY=replicated
done

echo "2. live at $rate readings/s, durability replicated, the standby's WAL receiver stopped for $stall s"
metric() {
    curl -s "127.0.0.1:$metrics_port/metrics" \
        | awk -v name="$1" 'index($1, name) == 1 && substr($1, length(name) + 1, 1) ~ /^(\{|)$/ {printf "%d", $2; exit}'
}
OUTLETD_DATABASE_DURABILITY=replicated OUTLETD_HTTP_LISTEN=127.0.0.1:$metrics_port start_outletd
wait_subscribed
"$bin/outletd" simulate --outlets "$outlets" --interval "$(calc "$outlets / $rate")" >"$dir/simulate-live.log" 2>&1 &
sim_pid=$!
pids+=("$sim_pid")
sample() { printf '%s %s %s\n' "$1" "$(metric outletd_spool_unconfirmed_bytes)" "$(metric outletd_replication_lag_bytes)"; }
samples=()
for t in $(seq 1 8); do samples+=("$(sample "$t")"); sleep 1; done
receiver=$(pgq "$p2" "SELECT pid FROM pg_stat_wal_receiver")
[ -n "$receiver" ] || { echo "bench: the standby has no WAL receiver" >&2; exit 1; }
before=$(printf '%s\n' "${samples[@]:3}" | awk '{print $2}' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
kill -STOP "$receiver"
for t in $(seq 1 "$stall"); do sleep 1; samples+=("$(sample "stall+$t")"); done
at_stall_end=$(metric outletd_spool_unconfirmed_bytes)
lag_at_stall_end=$(metric outletd_replication_lag_bytes)
kill -CONT "$receiver"
resumed=$(now)
back=""
for _ in $(seq 1 120); do
    sleep 0.25
    if [ "$(metric outletd_spool_unconfirmed_bytes)" -le $(( before * 2 + 65536 )) ]; then back=$(calc "round($(now) - $resumed, 2)"); break; fi
done
for t in $(seq 1 3); do samples+=("$(sample "after+$t")"); sleep 1; done
kill -INT "$sim_pid"
wait "$sim_pid" || { cat "$dir/simulate-live.log" >&2; echo "bench: the simulator failed" >&2; exit 1; }
echo "   simulator: $(tail -n 1 "$dir/simulate-live.log")"
echo "   second unconfirmed_bytes replication_lag_bytes"
printf '   %s\n' "${samples[@]}"
echo "unconfirmed before the stall (median): $before bytes; at its end: $at_stall_end bytes (lag $lag_at_stall_end);" \
    "growth $(calc "round(($at_stall_end - $before) / $stall)") bytes per second of stall;" \
    "back under 2 × before + 64 KiB: $([ -n "$back" ] && echo "$back s after the resume" || echo "not within 30 s")"
stop_outletd
