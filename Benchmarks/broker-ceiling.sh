#!/usr/bin/env bash
# Which client shows the broker's delivery ceiling (stage B of `make bench`): three clients that store nothing
# drain the same durable QoS 1 backlog (Benchmarks/throughput.sh's backlog method), alternating, in ROUNDS rounds:
#   mosquitto_sub          mosquitto_sub -q 1 -c (MQTT 3.1.1), output to /dev/null: `make bench`'s B until now
#   libmosquitto-drain     Benchmarks/Throughput/libmosquitto_drain.c: libmosquitto's own loop, outletd's session
#                          settings (v5, clean start off, Receive Maximum 1000, TCP_NODELAY)
#   broker-ceiling         Benchmarks/BrokerCeiling: outletd's MQTT layer (its network loop, buffered reads,
#                          gathered PUBACKs) and outletd's session settings, storage cut off
# For each drain: readings/s (backlog / (client start → last message, or exit for mosquitto_sub)), mosquitto's and
# the client's CPU-seconds per million readings, and mosquitto's CPU over the drain's wall time (1.0: a core busy).
#
#   Benchmarks/broker-ceiling.sh [READINGS (1000000)] [ROUNDS (3)]      OUTLETS (10000 publishing), CONFIG (release)
set -euo pipefail
cd "$(dirname "$0")/.."
readings=${1:-1000000}
rounds=${2:-3}
outlets=${OUTLETS:-10000}
config=${CONFIG:-release}
drain_timeout=$(( readings / 5000 > 600 ? readings / 5000 : 600 ))
(( readings % outlets == 0 )) || { echo "broker-ceiling: READINGS must be a multiple of OUTLETS ($outlets)" >&2; exit 2; }
swift build -c "$config" --product outletd >/dev/null
swift build -c "$config" --product broker-ceiling >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
cc -O2 -o "$bin/libmosquitto-drain" Benchmarks/Throughput/libmosquitto_drain.c -lmosquitto

export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack broker-ceiling "$outlets"
bench_backlog_setup
hz=$(getconf CLK_TCK)
children_ticks() { awk '{print $16 + $17}' "/proc/$$/stat"; }
broker_ticks() { cpu_ticks "$(cat "$dir/mosquitto/pid")"; }

# drain CLIENT: the session made, a backlog of $readings published, CLIENT drains it; prints the result row.
drain() {
    local client=$1 id="ceiling-$1" t0 end m0 c0 line
    case "$client" in
        mosquitto_sub) mqtt_sub -i "$id" -c -E ;;
        libmosquitto-drain) "$bin/libmosquitto-drain" "$OUTLETD_MQTT_PORT" "$id" "$topic" --subscribe-only ;;
        broker-ceiling) "$bin/broker-ceiling" "$id" --subscribe-only ;;
    esac
    publish $(( readings / outlets ))
    m0=$(broker_ticks) c0=$(children_ticks) t0=$(now)
    case "$client" in
        mosquitto_sub) mqtt_sub -i "$id" -c -C "$readings" -W "$drain_timeout" >/dev/null; end=$(now) ;;
        libmosquitto-drain) line=$("$bin/libmosquitto-drain" "$OUTLETD_MQTT_PORT" "$id" "$topic" "$readings") ;;
        broker-ceiling) line=$("$bin/broker-ceiling" "$id" "$readings" "$drain_timeout") ;;
    esac
    [ "$client" = mosquitto_sub ] || end=$(sed -n 's/.* last=\([0-9.]*\) .*/\1/p' <<<"$line")
    local broker=$(( $(broker_ticks) - m0 )) own=$(( $(children_ticks) - c0 ))
    printf '%-20s %10s %14s %14s %10s\n' "$client" "$(calc "round($readings / ($end - $t0))")" \
        "$(calc "round($broker / $hz / $readings * 1e6, 2)")" "$(calc "round($own / $hz / $readings * 1e6, 2)")" \
        "$(calc "round($broker / $hz / ($end - $t0), 2)")"
    forget_session "$id"
}
printf '%-20s %10s %14s %14s %10s\n' client readings/s "mosquitto CPU" "client CPU" "mosquitto" \
    "" "" "s per million" "s per million" "busy"
for (( r = 1; r <= rounds; r++ )); do
    echo "round $r of $rounds, $readings readings"
    for client in mosquitto_sub libmosquitto-drain broker-ceiling; do drain "$client"; done
done
