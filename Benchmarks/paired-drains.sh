#!/usr/bin/env bash
# Paired backlog drains: two builds of outletd (or two settings) drain the same kind of backlog on one
# stack, alternating, ROUNDS times each: the way docs/PERFORMANCE.md measures a change ("paired drains").
# Each drain is the outletd stage of `make bench` (Benchmarks/throughput.sh): a QoS 1 backlog of READINGS
# from 10,000 outlets (100,000 registered), then outletd started, timed from its start to the commit of
# the last reading; durable settings. Prints per drain (`backlog_drain` in stack.sh): readings/s, CPU-seconds
# per million of outletd and of PostgreSQL, peak RSS, and the seconds its batches spent in transactions.
#
#   Benchmarks/paired-drains.sh READINGS A B [ROUNDS]
#
# A and B: a path to an outletd binary, or VAR=value[,VAR=value…][@PATH] (environment for that run, e.g.
# OUTLETD_INGEST_BATCH_MAX_ROWS=25000, or MALLOC_ARENA_MAX=2@/tmp/outletd-old). ROUNDS: 3.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
readings=$1 a=$2 b=$3 rounds=${4:-3}
outlets=10000
drain_timeout=$(( 600 + readings / 10000 ))
swift build -c release --product outletd >/dev/null
bin=$(swift build -c release --show-bin-path)
daemon=$bin/outletd
export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack paired "$outlets"
sql "INSERT INTO devices (code, name) SELECT 'reg-' || i, 'registered only' FROM generate_series(1, 90000) i"
bench_backlog_setup
start_outletd
wait_subscribed
stop_outletd
metrics_port=$(free_port)

for _ in $(seq 1 "$rounds"); do
    backlog_drain "$a"
    backlog_drain "$b"
done
