#!/usr/bin/env bash
# `make bench`: outletd against the ceiling of its own workload and the usual alternatives, in one
# run on one stack, with durable settings (PostgreSQL fsync, full_page_writes and synchronous_commit
# on; mosquitto persistence on). docs/PERFORMANCE.md explains every line of the table it prints.
#
#   Benchmarks/throughput.sh            the table (about 8 minutes after the release build)
#   Benchmarks/throughput.sh --soak     outletd at SOAK_RATE readings/s for SOAK_SECONDS, RSS every 10 s
#
# Throughput, the backlog method: an ingester's persistent session is created, the simulator publishes
# a backlog of READINGS readings (QoS 1, `outletd simulate --window`) that the broker queues for that
# session, then the ingester starts; its rate is READINGS / (last reading's commit − the ingester's
# start). Every ingester drains the same kind of backlog, from the same broker into the same database
# (B, outletd and D in ROUNDS rounds, one stage after the other; the table reports each round and the
# medians: this machine's speed drifts by up to half between its phases, and one round's ratio
# compares stages that ran in the same phase):
#   B        broker-ceiling draining the backlog (Benchmarks/BrokerCeiling: outletd's own MQTT layer and session
#            settings, every reading acknowledged and discarded): the broker's delivery ceiling (mosquitto_sub and
#            a client on libmosquitto's own loop drain slower than the broker delivers: Benchmarks/broker-ceiling.sh)
#   D        one COPY of the rows outletd stored, straight into `samples` (the database's ceiling)
#   H        1 / (1/B + 1/D): the ceiling of this workload when one machine does both
#   outletd  `outletd run` (spool, registry, rollups, all of it), from process start; outletd / min(B, D) is the
#            fraction of what the slower of broker and database allows on this machine
#   python   paho-mqtt + psycopg (PyPI, in a venv under .build/): batched (COPY per 1,000 rows or
#            100 ms; no registry, no rollups), and naive (one INSERT and commit per message; it drains
#            NAIVE_READINGS, a smaller backlog, at its own rate)
# Latency, the live method: outletd running, the simulator publishing at half of H for LIVE_SECONDS;
# publish → commit = the row's commit time (track_commit_timestamp) − the reading's time, which the
# simulator stamps when it publishes. Counted after the first WARM_SECONDS. Then the same at
# LIVE_LOW_RATE (10,000/s), a rate this 2-core machine carries with room to spare, and at LIVE_HIGH_RATE
# (40,000/s). The live capacity: the highest rate whose p99 stays within 100 ms, by bisection
# (LIVE_CAPACITY_STEPS, 3, more live stages) between the highest rate measured within it and the lowest
# beyond it (or H). Each process's µs of CPU per live reading (at H/2) beside its µs per drained reading
# (CPU-s per million readings of the drain) and their ratio: what a fleet reporting live costs per reading
# against a backlog (docs/CAPACITY.md).
# outletd's CPU (user + system, from /proc) and peak RSS are over its drain, start-up included. The CPU
# of every process of a stage (mosquitto, PostgreSQL's backends, the simulator…) is counted too: on
# one machine the stages share the cores, and those figures say where each stage's time went. CPU per
# million readings, whole pipeline (outletd + mosquitto + PostgreSQL, in outletd's drain) beside the floor
# (mosquitto + broker-ceiling in B, PostgreSQL in D's one COPY): where the pipeline spends more than the floor.
#
# Knobs: READINGS (1000000), ROUNDS (3), NAIVE_READINGS (100000), OUTLETS (10000 publishing), REGISTERED
# (100000 registered), LIVE_SECONDS (20), WARM_SECONDS (3), LIVE_LOW_RATE (10000), LIVE_HIGH_RATE (40000),
# LIVE_CAPACITY_STEPS (3), DRAIN_TIMEOUT (per drain: 600 s, or READINGS / 5000 s when longer), CONFIG (release),
# BENCH_DAEMON (another outletd binary to run as the daemon, e.g. an older build; the simulator stays
# this tree's), SOAK_SECONDS (600), SOAK_RATE (1000), DAY_OUTLETS (100: the rollups' day of the bytes stage,
# Benchmarks/bytes-per-reading.sh). Any outletd setting through its environment.
set -euo pipefail
cd "$(dirname "$0")/.."
readings=${READINGS:-1000000}
naive_readings=${NAIVE_READINGS:-100000}
outlets=${OUTLETS:-10000}
registered=${REGISTERED:-100000}
rounds=${ROUNDS:-3}
live_seconds=${LIVE_SECONDS:-20}
warm=${WARM_SECONDS:-3}
# Long enough for the slowest batched drain (the Python peer, ~16,000/s on a busy machine): 600 s, or
# a second per 5,000 readings of a larger backlog (10 million: 2,000 s).
drain_timeout=${DRAIN_TIMEOUT:-$(( readings / 5000 > 600 ? readings / 5000 : 600 ))}
config=${CONFIG:-release}
soak=0
soak_seconds=${SOAK_SECONDS:-600}
soak_rate=${SOAK_RATE:-1000}
[ "${1:-}" = --soak ] && soak=1
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench: ROUNDS must be a whole number of 1 or more" >&2; exit 2; }
(( readings % outlets == 0 && naive_readings % outlets == 0 )) \
    || { echo "bench: READINGS and NAIVE_READINGS must be multiples of OUTLETS ($outlets)" >&2; exit 2; }

swift build -c "$config" --product outletd >/dev/null
swift build -c "$config" --product broker-ceiling >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
daemon=${BENCH_DAEMON:-$bin/outletd}
venv=.build/bench-venv
if [ "$soak" = 0 ] && ! "$venv/bin/python" -c 'import paho.mqtt, psycopg' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'paho-mqtt>=2,<3' 'psycopg[binary]>=3.1,<4'
fi

# Durable: fsync and full_page_writes on (synchronous_commit is on by default); the broker queues the
# whole backlog for an absent session.
export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
# shellcheck source=Benchmarks/bytes-per-reading.sh
. Benchmarks/bytes-per-reading.sh
bench_outletd_stack throughput "$outlets"
sql "INSERT INTO devices (code, name) SELECT 'reg-' || i, 'registered only'
     FROM generate_series(1, greatest($registered - $outlets, 0)) i"
[ "$(sql 'SHOW fsync')/$(sql 'SHOW synchronous_commit')/$(sql 'SHOW full_page_writes')" = on/on/on ] \
    || { echo "bench: PostgreSQL is not durable (fsync/synchronous_commit/full_page_writes)" >&2; exit 1; }
# outletd keeps its session (and its queue) while it is away, under a fixed client id.
bench_backlog_setup

if [ "$soak" = 1 ]; then
    start_outletd
    wait_subscribed
    echo "soak: $soak_rate readings/s for $soak_seconds s, outletd RSS (KiB) every 10 s:"
    ( publish $(( soak_rate * soak_seconds / outlets )) "$soak_rate" ) &
    publisher_pid=$!
    while kill -0 "$publisher_pid" 2>/dev/null; do
        sleep 10
        echo "$(date +%T) rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$outletd_pid/status") stored=$(inserted)"
    done
    wait "$publisher_pid"
    echo "peak rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status")"
    exit 0
fi

# stack_cpu: CPU ticks (user + system) so far of outletd (0 when it is not running), mosquitto,
# PostgreSQL (the postmaster, the backends it reaped and those running) and this shell's reaped
# children (the simulator, psql).
stack_cpu() {
    local postmaster pg children outletd=0
    postmaster=$(head -n 1 "$dir/pg/postmaster.pid")
    pg=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
    for child in $(pgrep -P "$postmaster"); do
        children=$(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null) && pg=$(( pg + children ))
    done
    [ -n "${outletd_pid:-}" ] && [ -e "/proc/$outletd_pid" ] && outletd=$(cpu_ticks "$outletd_pid")
    echo "$outletd $(cpu_ticks "$(cat "$dir/mosquitto/pid")") $pg $(awk '{print $16 + $17}' "/proc/$$/stat")"
}
# cpu_since BEFORE…: the CPU-seconds of each of stack_cpu's four since BEFORE (its four numbers).
cpu_since() {
    local -a before=("$@") after
    read -ra after < <(stack_cpu)
    local hz out=()
    hz=$(getconf CLK_TCK)
    for i in 0 1 2 3; do out+=("$(calc "round((${after[i]} - ${before[i]}) / $hz, 2)")"); done
    echo "${out[*]}"
}
# per_million SECONDS READINGS: CPU-seconds per million readings.
per_million() { calc "round($1 / $2 * 1e6, 2)"; }

per_outlet=$(( readings / outlets ))
# broker_ceiling_drain: B, the broker's delivery ceiling. broker-ceiling (outletd's MQTT layer, storage cut off)
# makes its session, the backlog is published, and it drains it. Sets B (readings/s: its start → the last
# reading's arrival), b_broker and b_client (CPU-s of mosquitto and of broker-ceiling, from its getrusage) and
# b_busy (mosquitto's CPU-s over the drain's seconds: near 1, a core of the broker's was busy all along).
broker_ceiling_drain() {
    local t0 t1 line last
    local -a cpu0
    "$bin/broker-ceiling" bench-b --subscribe-only
    publish "$per_outlet"
    read -ra cpu0 < <(stack_cpu)
    t0=$(now)
    line=$("$bin/broker-ceiling" bench-b "$readings" "$drain_timeout")
    t1=$(now)
    read -r _ b_broker _ _ < <(cpu_since "${cpu0[@]}")
    last=$(sed -n 's/.* last=\([0-9.]*\) .*/\1/p' <<<"$line")
    b_client=$(sed -n 's/.* cpu=\([0-9.]*\)$/\1/p' <<<"$line")
    [ -n "$last" ] && [ -n "$b_client" ] || { echo "bench: broker-ceiling said \"$line\"" >&2; exit 1; }
    B=$(calc "round($readings / ($last - $t0))")
    b_busy=$(calc "round($b_broker / ($t1 - $t0), 2)")
    forget_session bench-b
}
# drain_round N: B, outletd and D, one after the other (as close in time as they can be: the machine's
# speed drifts between its phases, and a ratio compares stages that ran in the same phase). Appends the
# round's figures to the arrays below.
rounds_B=() rounds_D=() rounds_H=() rounds_O=() rounds_OH=() rounds_OM=() rounds_cpu=() rounds_rss=()
rounds_b_broker=() rounds_b_client=() rounds_b_busy=() rounds_o_broker=() rounds_o_pg=() rounds_d_pg=()
rounds_pipeline=() rounds_floor=()
drain_round() {
    local round=$1 B O D H cpu rss_kib cpu_per_million b_broker b_client b_busy o_broker o_pg d_pg base t0
    local -a cpu0
    echo "== round $round of $rounds. B: broker-ceiling drains a backlog of $readings" >&2
    broker_ceiling_drain
    echo "   B = $B/s; CPU-s mosquitto $b_broker (busy $b_busy of the drain), broker-ceiling $b_client" >&2

    echo "== round $round of $rounds. outletd drains a backlog of $readings" >&2
    start_outletd
    wait_subscribed
    stop_outletd
    publish "$per_outlet"
    base=$(inserted)
    outletd_pid=
    read -ra cpu0 < <(stack_cpu)
    t0=$(now)
    start_outletd
    wait_rows "$readings" "$base"
    read -r _ o_broker o_pg _ < <(cpu_since "${cpu0[@]}")
    cpu=$(cpu_ticks "$outletd_pid")
    rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$outletd_pid/status")
    O=$(drain_rate "$t0" "$readings")
    cpu_per_million=$(calc "round($cpu / $(getconf CLK_TCK) / $readings * 1e6, 2)")
    echo "   outletd: $O/s, $cpu_per_million CPU-s per million, peak RSS $rss_kib KiB;" \
         "CPU-s mosquitto $o_broker, PostgreSQL $o_pg" >&2
    if [ "$round" = 1 ]; then
        echo "== bytes per reading of the samples outletd stored" >&2
        bytes_samples=$(samples_bytes)
    fi

    echo "== round $round of $rounds. D: one COPY of outletd's $readings rows into samples" >&2
    sql "\\copy (SELECT * FROM $(samples_root)) TO '$dir/rows.copy'"
    stop_outletd
    # (Else its session would queue the next round's backlogs.)
    forget_session bench
    empty_tables
    read -ra cpu0 < <(stack_cpu)
    t0=$(now)
    psql "$db" -X -q -v ON_ERROR_STOP=1 -c "\\copy $(samples_root) FROM '$dir/rows.copy'"
    D=$(calc "round($readings / ($(now) - $t0))")
    read -r _ _ d_pg _ < <(cpu_since "${cpu0[@]}")
    echo "   D = $D/s; CPU-s PostgreSQL $d_pg" >&2
    rm -f "$dir/rows.copy"
    empty_tables
    H=$(calc "round(1 / (1 / $B + 1 / $D))")
    rounds_B+=("$B") rounds_D+=("$D") rounds_H+=("$H") rounds_O+=("$O") rounds_OH+=("$(calc "round($O / $H, 2)")")
    rounds_OM+=("$(calc "round($O / min($B, $D), 2)")")
    rounds_cpu+=("$cpu_per_million") rounds_rss+=("$rss_kib")
    rounds_b_broker+=("$(per_million "$b_broker" "$readings")") rounds_b_client+=("$(per_million "$b_client" "$readings")")
    rounds_b_busy+=("$b_busy") rounds_o_broker+=("$(per_million "$o_broker" "$readings")")
    rounds_o_pg+=("$(per_million "$o_pg" "$readings")") rounds_d_pg+=("$(per_million "$d_pg" "$readings")")
    rounds_pipeline+=("$(calc "round($cpu_per_million + ${rounds_o_broker[-1]} + ${rounds_o_pg[-1]}, 2)")")
    rounds_floor+=("$(calc "round(${rounds_b_broker[-1]} + ${rounds_b_client[-1]} + ${rounds_d_pg[-1]}, 2)")")
}
# median VALUE…: the middle value (of an even count, the mean of the two middle ones).
median() { calc "__import__('statistics').median([$(IFS=,; echo "$*")])"; }
for (( r = 1; r <= rounds; r++ )); do drain_round "$r"; done
B=$(median "${rounds_B[@]}") D=$(median "${rounds_D[@]}") H=$(median "${rounds_H[@]}") O=$(median "${rounds_O[@]}")
cpu_per_million=$(median "${rounds_cpu[@]}")
rss_kib=$(calc "max([$(IFS=,; echo "${rounds_rss[*]}")])")
B=$(calc "round($B)") D=$(calc "round($D)") H=$(calc "round($H)") O=$(calc "round($O)")

half=$(( H / 2 ))
# live RATE: outletd running, the simulator publishing RATE readings/s for LIVE_SECONDS. Sets `result`
# to (stored_rate p50 p99 seconds outletd mosquitto postgresql simulator readings): the rate at which the
# readings were stored, publish → commit in ms, the stage's wall time (first publish → last commit),
# the CPU-seconds each process used meanwhile and the readings stored.
live() {
    local rate=$1 base t0 readings rate_stored p50 p99 seconds cpu
    local -a before
    start_outletd
    wait_subscribed
    base=$(inserted)
    read -ra before < <(stack_cpu)
    t0=$(now)
    publish $(( rate * live_seconds / outlets )) "$rate"
    readings=$acknowledged
    wait_rows "$readings" "$base"
    read -ra cpu < <(cpu_since "${before[@]}")
    seconds=$(sql "SELECT round(extract(epoch FROM max(pg_xact_commit_timestamp(xmin)) - to_timestamp($t0))::numeric, 1)
                   FROM $(samples_root)")
    rate_stored=$(calc "round($readings / $seconds)")
    read -r p50 p99 < <(sql "SELECT round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::int || ' ' ||
                                    round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY x))::int
                             FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - measured_at) AS x
                                   FROM $(samples_root) WHERE measured_at >= to_timestamp($t0 + $warm)) s")
    stop_outletd
    empty_tables
    result=("$rate_stored" "$p50" "$p99" "$seconds" "${cpu[@]}" "$readings")
}
echo "== live: outletd while the simulator publishes $half readings/s (H/2) for ${live_seconds} s" >&2
live "$half"
read -r live_rate p50 p99 live_wall cpu_o cpu_m cpu_p cpu_s live_readings <<<"${result[*]}"
cores=$(calc "round(($cpu_o + $cpu_m + $cpu_p + $cpu_s) / $live_wall, 2)")
low=${LIVE_LOW_RATE:-10000}
echo "== live: outletd while the simulator publishes $low readings/s for ${live_seconds} s" >&2
live "$low"
read -r low_rate low_p50 low_p99 _ <<<"${result[*]}"
high=${LIVE_HIGH_RATE:-40000}
echo "== live: outletd while the simulator publishes $high readings/s for ${live_seconds} s" >&2
live "$high"
read -r high_rate high_p50 high_p99 _ <<<"${result[*]}"
# The live capacity: bisection between the highest rate measured within 100 ms at p99 and the lowest beyond.
within=0 beyond=$H
for measured in "$half $p99" "$low $low_p99" "$high $high_p99"; do
    read -r rate_asked rate_p99 <<<"$measured"
    if (( rate_p99 <= 100 && rate_asked > within )); then within=$rate_asked; fi
    if (( rate_p99 > 100 && rate_asked < beyond )); then beyond=$rate_asked; fi
done
for (( step = 0; step < ${LIVE_CAPACITY_STEPS:-3}; step++ )); do
    (( beyond - within > 1000 )) || break
    middle=$(( (within + beyond) / 2 / 1000 * 1000 ))
    (( middle > within )) || break
    echo "== live capacity: outletd while the simulator publishes $middle readings/s (p99 ≤ 100 ms between $within and $beyond)" >&2
    live "$middle"
    if (( ${result[2]} <= 100 )); then within=$middle; else beyond=$middle; fi
done
forget_session bench

# python_drain COUNT [--batched]: the Python ingester drains a backlog of COUNT; prints its rate.
python_drain() {
    local count=$1 client_id="bench-python${2:-}"
    shift
    local ingester=("$venv/bin/python" Benchmarks/Throughput/ingester.py "$db" 127.0.0.1 "$OUTLETD_MQTT_PORT" outlets
                    --client-id "$client_id" "$@")
    "${ingester[@]}" --subscribe-only >>"$dir/python.log" 2>&1 \
        || { tail "$dir/python.log" >&2; echo "bench: the Python ingester failed" >&2; exit 1; }
    publish $(( count / outlets ))
    base=$(inserted)
    t0=$(now)
    "${ingester[@]}" >>"$dir/python.log" 2>&1 &
    # This function runs in a command substitution, a subshell: `pids` does not reach the cleanup, so the
    # subshell stops its ingester itself when it leaves (a drain that timed out included). Not a local:
    # the trap runs after the function returned.
    python_pid=$!
    trap 'kill "$python_pid" 2>/dev/null || true' EXIT
    wait_rows "$count" "$base"
    kill -TERM "$python_pid"
    wait "$python_pid" || { tail "$dir/python.log" >&2; echo "bench: the Python ingester failed" >&2; exit 1; }
    drain_rate "$t0" "$count"
    forget_session "$client_id"
    sql "TRUNCATE $(samples_root)"
}
echo "== python, batched COPY, drains a backlog of $readings" >&2
PB=$(python_drain "$readings" --batched)
echo "== python, one INSERT per message, drains a backlog of $naive_readings" >&2
P1=$(python_drain "$naive_readings")

echo "== bytes per outlet-day of the rollups (one day of ${DAY_OUTLETS:-100} outlets, every 10 s)" >&2
bytes_rollups=$(rollup_day_bytes)

ratio() { calc "round($1 / $2, 2)"; }
# cpu_block: CPU-seconds per million readings, the whole pipeline (outletd's drain: outletd, mosquitto, PostgreSQL)
# beside the floor (mosquitto and broker-ceiling in B, PostgreSQL in D's one COPY), process by process; medians of
# the rounds (the totals: the median of the rounds' totals).
cpu_block() {
    local pipeline floor
    cpu_row() { printf '%-48s %12s %10s %12s   %s\n' "$1" "$2" "$3" "$(calc "round($2 - $3, 2)")" "${4:-}"; }
    pipeline=$(median "${rounds_pipeline[@]}") floor=$(median "${rounds_floor[@]}")
    printf '%-48s %12s %10s %12s\n' "CPU-seconds per million readings" pipeline floor difference
    cpu_row "outletd | broker-ceiling in B" "$cpu_per_million" "$(median "${rounds_b_client[@]}")"
    cpu_row "mosquitto: outletd's drain | B" "$(median "${rounds_o_broker[@]}")" "$(median "${rounds_b_broker[@]}")"
    cpu_row "PostgreSQL: outletd's drain | D's one COPY" "$(median "${rounds_o_pg[@]}")" "$(median "${rounds_d_pg[@]}")"
    cpu_row "total" "$pipeline" "$floor" \
        "wall: $(nproc) cores × $(calc "round($readings / $O, 1)") s = $(calc "round($(nproc) * 1e6 / $O, 1)") per million"
}
row() { printf '%-48s %12s   %s\n' "$@"; }
echo
row "" "readings/s" ""
row "B  broker: broker-ceiling drains the backlog" "$B" "mosquitto busy $(median "${rounds_b_busy[@]}") of the drain"
row "D  database: one COPY of outletd's rows" "$D" ""
row "H  = 1/(1/B + 1/D)" "$H" ""
row "outletd drains the backlog (rollups on)" "$O" "$readings readings, from process start"
row "python batched COPY drains the backlog" "$PB" ""
row "python one INSERT per message" "$P1" "$naive_readings readings"
echo
row "round: B / D / H / outletd (readings/s)" "outletd / H" "outletd / min(B, D); CPU-s per million, peak RSS KiB"
for (( r = 0; r < rounds; r++ )); do
    row "$(( r + 1 )): ${rounds_B[r]} / ${rounds_D[r]} / ${rounds_H[r]} / ${rounds_O[r]}" "${rounds_OH[r]}" \
        "${rounds_OM[r]}; ${rounds_cpu[r]}, ${rounds_rss[r]}"
done
echo
row "(B, D, H, outletd, ratios and CPU: medians of the rounds; RSS: the highest)" "measured" "target"
row "outletd / H" "$(median "${rounds_OH[@]}")" "≥ 0.9"
row "outletd / min(B, D)" "$(median "${rounds_OM[@]}")" "of what the slower ceiling allows"
row "outletd / python batched" "$(ratio "$O" "$PB")" "≥ 2.3"
row "outletd / python one INSERT" "$(ratio "$O" "$P1")" "≥ 20"
row "outletd CPU-seconds per million readings" "$cpu_per_million" "≤ 5"
row "outletd peak RSS, KiB ($readings backlog)" "$rss_kib" "≤ 65536 (10M backlog: READINGS=10000000)"
echo
cpu_block
echo
row "live at $half/s (H/2): stored at (readings/s)" "$live_rate" ""
row "live at H/2: publish → commit p50 (ms)" "$p50" ""
row "live at H/2: publish → commit p99 (ms)" "$p99" "≤ 100"
row "live at H/2: CPU-s outletd/mosquitto/PG/simulator" "$cpu_o/$cpu_m/$cpu_p/$cpu_s" "in $live_wall s"
row "live at H/2: cores the four used" "$cores" "of $(nproc)"
row "live at $low/s: publish → commit p50 / p99 (ms)" "$low_p50 / $low_p99" "(stored at $low_rate/s)"
row "live at $high/s: publish → commit p50 / p99 (ms)" "$high_p50 / $high_p99" "p99 ≤ 100 (stored at $high_rate/s)"
row "live capacity: p99 ≤ 100 ms up to (readings/s)" "$within" "beyond it at $beyond/s; the drain's H: $H/s"
echo
# µs of CPU per reading: live at H/2 (the CPU-s over the readings stored) and drained (CPU-s per million readings).
live_us() { calc "round($1 / $live_readings * 1e6, 1)"; }
us_row() { printf '%-48s %12s %10s %12s   %s\n' "$1" "$2" "$3" "$(calc "round($2 / $3, 2)")" "${4:-}"; }
printf '%-48s %12s %10s %12s   %s\n' "µs of CPU per reading" "live at H/2" drain "live/drain" target
us_row "outletd" "$(live_us "$cpu_o")" "$cpu_per_million" "live ≤ 8 µs"
us_row "mosquitto" "$(live_us "$cpu_m")" "$(median "${rounds_o_broker[@]}")"
us_row "PostgreSQL" "$(live_us "$cpu_p")" "$(median "${rounds_o_pg[@]}")" "live/drain ≤ 1.5"
echo
echo "bytes on disk (Benchmarks/bytes-per-reading.sh):"
echo "$bytes_samples" | sed 's/^/  /'
echo "  $bytes_rollups"

# The owners' app under load while ingest runs (docs/OWNER-APP-LOAD.md): a stack of its own, about 4 minutes.
echo
Benchmarks/owner-app-load.sh

# Compaction of a settled day (docs/COMPACTION.md): bytes per reading of both forms, their read times, the
# compaction's rate with ingest at 20,000 readings/s beside it; a stack of its own, about 10 minutes.
echo
Benchmarks/compaction.sh

# Alerts (docs/ALERTS.md): an evaluation round's wall and PostgreSQL CPU time with 10,000 outlets, 100 of them
# gone quiet; a stack of its own, about a minute.
echo
Benchmarks/alerts.sh

# Alerts end to end (docs/ALERTS.md): 10,000 outlets every 10 s through the broker, 100 go silent; each offline
# alert's delivery to a webhook after its condition was met (p99 against 2 × 10 + 30 s), exactly once, and ingest's
# rate meanwhile; a stack of its own, about 4 minutes.
echo
Benchmarks/alert-latency.sh
