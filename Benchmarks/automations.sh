#!/usr/bin/env bash
# Automations (docs/AUTOMATIONS.md): what the runner costs ingest, and how soon power rules act. One throwaway stack,
# durable settings (PostgreSQL fsync, full_page_writes and synchronous_commit on).
#
#   Benchmarks/automations.sh        (about 7 minutes after the release build, with the defaults)
#
# 1. Throughput before/after, paired backlog drains (Benchmarks/paired-drains.sh's method, `backlog_drain` in
#    stack.sh): a QoS 1 backlog of READINGS from 10,000 outlets (100,000 registered), drained by outletd from its
#    start to the commit of the last reading, while the database holds N_RULES over-power rules (100 kW for 5 min),
#    N_IDLE idle rules (0 W for 30 min while on; the simulated outlets never report on) and a group limit (1 MW for
#    5 min) over GROUP_OUTLETS outlets, each on its own publishing outlet: followed, never met. A runs with
#    OUTLETD_AUTOMATIONS_RUN=false, B with the runner on (every automations.interval_ms, 250); A then B, ROUNDS
#    times. Checks: nothing fired; after each B drain every rule had followed that drain's readings, after each A
#    none had.
# 2. Latency, live: outletd running while the simulator publishes RATE readings/s from the 10,000 outlets for
#    LIVE_SECONDS; meanwhile K heaters (outlets of their own, each with `automation add over-power CODE --watts 2000
#    --for 2s`) publish 2 readings/s each (native JSON through mosquitto_pub, stamped with their publish time): 500 W,
#    then 2,100 W from a moment staggered over the run. For each firing, from the reading that met the rule
#    (automation_firings.due_at) to its command's requested_at and sent_at (the relay published it). Once with one
#    instance, once with two (distinct instance ids and spools, both share groups set: docs/SCALING.md). Checks:
#    every heater's rule fired, once, with one command, sent.
# Prints a table and appends one line to Benchmarks/results/automations.tsv (NOTE: its last column). On a shared
# machine, "other processes' CPU-s" says how much a build or tests took from each drain and live run.
#
# Knobs: READINGS (1000000), ROUNDS (3), N_RULES (1000), N_IDLE (200), GROUP_OUTLETS (50), RATE (20000),
# LIVE_SECONDS (30), WARM_SECONDS (3: publish → commit counted after), K (20), NOTE, STATEMENTS=1 (PostgreSQL loads
# pg_stat_statements; after stage 1, its statements by server time, A's and B's together: where B's time went), any
# outletd setting through its environment (OUTLETD_AUTOMATIONS_INTERVAL_MS…).
set -euo pipefail
cd "$(dirname "$0")/.."
readings=${READINGS:-1000000}
rounds=${ROUNDS:-3}
n_rules=${N_RULES:-1000}
n_idle=${N_IDLE:-200}
group_outlets=${GROUP_OUTLETS:-50}
rate=${RATE:-20000}
live_seconds=${LIVE_SECONDS:-30}
warm=${WARM_SECONDS:-3}
k=${K:-20}
outlets=10000
registered=100000
drain_timeout=$(( 600 + readings / 10000 ))
for knob in readings rounds rate live_seconds k group_outlets; do
    [[ ${!knob} =~ ^[1-9][0-9]*$ ]] || { echo "bench: ${knob^^} must be a whole number of 1 or more" >&2; exit 2; }
done
(( readings % outlets == 0 )) || { echo "bench: READINGS must be a multiple of $outlets" >&2; exit 2; }
(( n_rules + n_idle + group_outlets <= outlets )) || { echo "bench: more rules than the $outlets outlets" >&2; exit 2; }
(( rate * live_seconds >= outlets && live_seconds >= 10 && k <= 99 )) \
    || { echo "bench: RATE × LIVE_SECONDS ≥ $outlets, LIVE_SECONDS ≥ 10 and K ≤ 99" >&2; exit 2; }

swift build -c release --product outletd >/dev/null
bin=$(swift build -c release --show-bin-path)
daemon=$bin/outletd
export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
started=$SECONDS
bench_outletd_stack automations "$outlets"
sql "INSERT INTO devices (code, name)
     SELECT 'reg-' || i, 'registered only' FROM generate_series(1, $(( registered - outlets ))) i"
require_durable
if [ "${STATEMENTS:-0}" = 1 ]; then
    sql "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
    scripts/stack pg-restart "$dir" 0 >/dev/null
    sql "CREATE EXTENSION pg_stat_statements"
fi

# The rules, each on its own publishing outlet (sim-00001…): over-power, then idle, then the group's members.
# The bulk ones as `automation add` stores them (AutomationStore.add); the group limit through the CLI.
code_sql="'sim-' || lpad(i::text, ${#outlets}, '0')"
sql "INSERT INTO automations (kind, device_id, watts, hold_seconds, created_by)
     SELECT CASE WHEN i <= $n_rules THEN 'over-power' ELSE 'idle' END, d.id,
            CASE WHEN i <= $n_rules THEN 100000 ELSE 0 END, CASE WHEN i <= $n_rules THEN 300 ELSE 1800 END,
            'operator:bench'
     FROM generate_series(1, $(( n_rules + n_idle ))) i JOIN devices d ON d.code = $code_sql"
members=$(sql "SELECT string_agg($code_sql, ',' ORDER BY i)
               FROM generate_series($(( n_rules + n_idle + 1 )), $(( n_rules + n_idle + group_outlets ))) i")
"$bin/outletd" automation add group-limit bench-group --watts 1000000 --outlets "$members" --for 5m >/dev/null
watching=$(( n_rules + n_idle + 1 ))

# ---- 1. Throughput: paired backlog drains, runner off (A) and on (B) ----
bench_backlog_setup
start_outletd
wait_subscribed
stop_outletd
metrics_port=$(free_port)
# followed: how many rules followed readings published since the last drain's publishing began.
followed() { sql "SELECT count(*) FROM automations WHERE watch_seen_until >= to_timestamp($drain_published)"; }
# The machine may be shared (a build, tests): other_cpu BEFORE… says how many CPU-seconds processes other than the
# benchmark's used since BEFORE (machine_ticks' four numbers): the machine's user and system time (/proc/stat;
# interrupts not counted) less PostgreSQL's, mosquitto's and this shell's waited-for children's (outletd, the
# simulator, psql…: call it when they were waited for).
machine_ticks() {
    echo "$(awk '/^cpu / {print $2 + $3 + $4}' /proc/stat) $(pg_cpu_ticks)" \
         "$(cpu_ticks "$(cat "$dir/mosquitto/pid")") $(awk '{print $16 + $17}' "/proc/$$/stat")"
}
other_cpu() {
    local -a before=("$@") after
    read -ra after < <(machine_ticks)
    calc "round(max(0, (${after[0]} - ${before[0]}) - (${after[1]} - ${before[1]}) - (${after[2]} - ${before[2]})
                        - (${after[3]} - ${before[3]})) / $(getconf CLK_TCK), 1)"
}
rounds_a=() rounds_b=() rounds_ratio=() cpu_a=() cpu_b=() pg_a=() pg_b=() tx_a=() tx_b=() other_a=() other_b=()
for (( r = 1; r <= rounds; r++ )); do
    echo "== round $r of $rounds: A (runner off), then B (runner on), each drains a backlog of $readings" >&2
    read -ra ticks < <(machine_ticks)
    backlog_drain OUTLETD_AUTOMATIONS_RUN=false >&2
    other_a+=("$(other_cpu "${ticks[@]}")")
    rounds_a+=("${drained[0]}") cpu_a+=("${drained[1]}") tx_a+=("${drained[3]}") pg_a+=("${drained[4]}")
    [ "$(followed)" = 0 ] || { echo "bench: with OUTLETD_AUTOMATIONS_RUN=false, rules were evaluated" >&2; exit 1; }
    read -ra ticks < <(machine_ticks)
    backlog_drain OUTLETD_AUTOMATIONS_RUN=true >&2
    other_b+=("$(other_cpu "${ticks[@]}")")
    rounds_b+=("${drained[0]}") cpu_b+=("${drained[1]}") tx_b+=("${drained[3]}") pg_b+=("${drained[4]}")
    seen=$(followed)
    [ "$seen" = "$watching" ] || { echo "bench: the runner followed $seen of $watching rules in drain B" >&2; exit 1; }
    rounds_ratio+=("$(calc "round(${rounds_b[-1]} / ${rounds_a[-1]}, 3)")")
done
if [ "${STATEMENTS:-0}" = 1 ]; then
    statements=$(psql "$db" -X -q -v ON_ERROR_STOP=1 -c "
        SELECT calls, round(total_exec_time) AS total_ms, round((total_exec_time / calls)::numeric, 2) AS ms_per_call,
               left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        ORDER BY total_exec_time DESC LIMIT 12")
fi
fired=$(sql "SELECT count(*) FROM automation_firings")
[ "$fired" = 0 ] || { echo "bench: $fired firings of rules that the readings never meet" >&2; exit 1; }
forget_session bench # (else the broker would queue the live readings for it)

# ---- 2. Latency, live ----
# heaters.py PORT SECONDS CODE…: each CODE publishes 2 readings/s for SECONDS (through a `mosquitto_pub -l` of its
# own, QoS 1), 500 W, then 2,100 W from its crossing on (staggered: heater i at 2 s + i × (SECONDS − 6 s) / K).
# Stamps each reading with the moment it publishes it (whole ms; exactly 500 ms apart per heater). Prints the number
# of readings.
cat >"$dir/heaters.py" <<'EOF'
import json, subprocess, sys, time

port, seconds, codes = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
publishers = [
    subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", port, "-q", "1", "-i", "bench-" + code, "-l",
                      "-t", "outlets/%s/telemetry" % code], stdin=subprocess.PIPE, text=True, bufsize=1)
    for code in codes]
time.sleep(1)  # connected
ticks = int(seconds * 2)
crossing = [4 + i * (ticks - 12) // len(codes) for i in range(len(codes))]
start_ms = round(time.time() * 1000)
count = 0
for tick in range(ticks):
    for i, publisher in enumerate(publishers):
        ts = start_ms + tick * 500 + i * 500 // len(codes)
        wait = ts / 1000 - time.time()
        if wait > 0:
            time.sleep(wait)
        power = 2100 if tick >= crossing[i] else 500
        publisher.stdin.write(json.dumps(
            {"voltage": 230, "current": round(power / 230, 3), "power": power, "ts": ts, "seq": tick + 1}) + "\n")
        count += 1
for publisher in publishers:
    publisher.stdin.close()
if any(publisher.wait() != 0 for publisher in publishers):
    sys.exit("heaters: a mosquitto_pub failed")
print(count)
EOF

# spread END FIRINGS: p50 / p99 / max seconds of `END − due_at` over FIRINGS (`FROM … WHERE …`, f: the firings, c:
# their commands); ENDs that are NULL are counted as missing.
spread() {
    sql "SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 3)::text, '-') || ' / ' ||
                coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY x)::numeric, 3)::text, '-') || ' / ' ||
                coalesce(round(max(x)::numeric, 3)::text, '-') ||
                CASE WHEN count(*) > count(x) THEN ' (' || count(*) - count(x) || ' missing)' ELSE '' END
         FROM (SELECT extract(epoch FROM $1 - f.due_at) AS x $2) s"
}
# live_run N: the live stage with N instances (1, or 2 sharing the stream). Appends its figures to the arrays below;
# fails (after printing them) unless every heater's rule fired once, with one command, sent.
live_rows=()
live_tsv=()
live_run() {
    local n=$1 prefix="heater-$1-" label ids=() instance_pids=() base t0 heater_pid heater_readings deadline
    local -a share=()
    label=$([ "$n" = 1 ] && echo "one instance" || echo "$n instances")
    sql "INSERT INTO devices (code, name)
         SELECT '$prefix' || lpad(i::text, 2, '0'), 'heater' FROM generate_series(1, $k) i"
    for (( i = 1; i <= k; i++ )); do
        "$bin/outletd" automation add over-power "$prefix$(printf %02d "$i")" --watts 2000 --for 2s >/dev/null
    done
    if [ "$n" = 1 ]; then
        ids=(live-1)
    else
        for (( i = 1; i <= n; i++ )); do ids+=("live-$n-$i"); done
        share=(OUTLETD_MQTT_SHARE_GROUP=bench OUTLETD_COMMANDS_SHARE_GROUP=bench)
    fi
    for id in "${ids[@]}"; do
        (
            export OUTLETD_INSTANCE_ID=$id OUTLETD_SPOOL_DIRECTORY=$dir/spool-$id OUTLETD_MQTT_SESSION_EXPIRY_SECONDS=0
            for assignment in "${share[@]}"; do export "${assignment?}"; done
            exec "$daemon" run >>"$dir/outletd-$id.log" 2>&1
        ) &
        instance_pids+=($!)
        pids+=($!)
    done
    for i in "${!ids[@]}"; do wait_subscribed "${ids[i]}" "${instance_pids[i]}"; done
    echo "== live, $label: the simulator at $rate readings/s for $live_seconds s, $k heaters at 2 readings/s" >&2
    read -ra ticks < <(machine_ticks)
    base=$(inserted)
    t0=$(now)
    python3 "$dir/heaters.py" "$OUTLETD_MQTT_PORT" "$live_seconds" $(sql "SELECT string_agg(code, ' ' ORDER BY code)
        FROM devices WHERE code LIKE '$prefix%'") >"$dir/heaters.out" 2>"$dir/heaters.err" &
    heater_pid=$!
    publish $(( rate * live_seconds / outlets )) "$rate"
    wait "$heater_pid" || { cat "$dir/heaters.err" >&2; echo "bench: the heaters' publisher failed" >&2; exit 1; }
    heater_readings=$(cat "$dir/heaters.out")
    wait_rows $(( acknowledged + heater_readings )) "$base"
    # Every rule's firing sent (or the deadline: the checks below say what is missing).
    deadline=$(( SECONDS + 20 ))
    while [ "$(sql "SELECT count(*) FROM automation_firings f JOIN commands c ON c.id = f.command_id
                    JOIN devices d ON d.id = f.device_id WHERE d.code LIKE '$prefix%' AND c.sent_at IS NOT NULL")" \
            -lt "$k" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.5
    done
    local stored p50 p99 fired rules_once requested sent hold by_instance sent_by
    stored=$(sql "SELECT round($acknowledged / extract(epoch FROM max(pg_xact_commit_timestamp(xmin))
                                                        - to_timestamp($t0)))
                  FROM samples_stored WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'sim-%')")
    read -r p50 p99 < <(sql "SELECT round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::int || ' ' ||
                                    round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY x))::int
                             FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - measured_at) AS x
                                   FROM samples_stored WHERE measured_at >= to_timestamp($t0 + $warm)) s")
    # Per heater rule: its firings and the commands it requested.
    local rules="SELECT a.id, (SELECT count(*) FROM automation_firings f WHERE f.automation_id = a.id) AS firings,
                        (SELECT count(*) FROM commands c WHERE c.requested_by = 'automation:' || a.id) AS commands
                 FROM automations a JOIN devices d ON d.id = a.device_id WHERE d.code LIKE '$prefix%'"
    fired=$(sql "SELECT count(*) FROM ($rules) r WHERE firings > 0")
    rules_once=$(sql "SELECT count(*) FROM ($rules) r WHERE firings = 1 AND commands = 1")
    local firings="FROM automation_firings f JOIN devices d ON d.id = f.device_id
                   LEFT JOIN commands c ON c.id = f.command_id
                   WHERE d.code LIKE '$prefix%' AND f.result = 'fired'"
    requested=$(spread c.requested_at "$firings")
    sent=$(spread c.sent_at "$firings")
    # The reading that met each rule, after the heater's first reading at or above 2,000 W: the hold, 2 s, when the
    # runner saw every reading (a reading committed after a later one of the same outlet is passed over).
    hold=$(sql "SELECT count(*) FILTER (WHERE f.due_at - (SELECT min(measured_at) FROM samples s
                                                       WHERE s.device_id = f.device_id AND s.power_watts >= 2000)
                                       = interval '2 s') || ' of ' || count(*) $firings")
    by_instance=$(sql "SELECT string_agg(instance_id || ' ' || n, ', ' ORDER BY instance_id)
                       FROM (SELECT f.instance_id, count(*) n $firings GROUP BY 1) s")
    sent_by=$(sql "SELECT string_agg(coalesce(sent_by, 'not sent') || ' ' || n, ', ' ORDER BY sent_by)
                   FROM (SELECT c.sent_by, count(*) n $firings GROUP BY 1) s")
    for i in "${!ids[@]}"; do stop_outletd "${ids[i]}" "${instance_pids[i]}"; done
    local other wall
    other=$(other_cpu "${ticks[@]}")
    wall=$(calc "round($(now) - $t0)")
    local errors
    errors=$(for id in "${ids[@]}"; do cat "$dir/outletd-$id.log"; done | grep -c '\berror\b' || true)
    empty_tables
    rm -rf "$dir"/spool-*
    live_rows+=(
        "$label: stored at (readings/s)|$stored|asked $rate/s; publish → commit p50 / p99: $p50 / $p99 ms"
        "$label: CPU-s of other processes on the machine|$other|in $wall s × $(nproc) cores"
        "$label: heaters whose rule fired|$fired of $k|each once, one command: $rules_once of $k"
        "$label: due → requested p50 / p99 / max (s)|$requested|"
        "$label: due → sent p50 / p99 / max (s)|$sent|≤ 2"
        "$label: met 2 s after the crossing|$hold|firings by $by_instance"
        "$label: commands sent by|$sent_by|error lines in the logs: $errors"
    )
    live_tsv+=("$fired" "$(cut -d' ' -f5 <<<"$requested")" "$(cut -d' ' -f1 <<<"$sent")"
               "$(cut -d' ' -f3 <<<"$sent")" "$(cut -d' ' -f5 <<<"$sent")")
    if [ "$fired" != "$k" ] || [ "$rules_once" != "$k" ] || [[ $sent == *missing* ]]; then
        live_failed+=("$label: $fired of $k heaters fired, $rules_once once with one command; due → sent: $sent")
    fi
}
live_failed=()
live_run 1
live_run 2

# ---- The table ----
row() { printf '%-52s %22s   %s\n' "$@"; }
ratio() { calc "round($1 / $2, 3)"; }
a=$(calc "round($(median "${rounds_a[@]}"))") b=$(calc "round($(median "${rounds_b[@]}"))")
ca=$(median "${cpu_a[@]}") cb=$(median "${cpu_b[@]}") pa=$(median "${pg_a[@]}") pb=$(median "${pg_b[@]}")
spread_a=$(calc "round(max([$(IFS=,; echo "${rounds_a[*]}")]) / min([$(IFS=,; echo "${rounds_a[*]}")]), 3)")
echo
echo "1. Paired backlog drains of $readings readings; in the database $n_rules over-power rules, $n_idle idle rules and"
echo "   a group limit of $group_outlets outlets, on publishing outlets, never met."
echo "   A: OUTLETD_AUTOMATIONS_RUN=false, B: the runner on"
row "round: A (runner off) / B (runner on), readings/s" "B / A" "CPU-s per million A / B: outletd; PostgreSQL"
for (( r = 0; r < rounds; r++ )); do
    row "$(( r + 1 )): ${rounds_a[r]} / ${rounds_b[r]}" "${rounds_ratio[r]}" \
        "${cpu_a[r]} / ${cpu_b[r]}; ${pg_a[r]} / ${pg_b[r]}; other processes' CPU-s ${other_a[r]} / ${other_b[r]}"
done
echo
row "(medians of $rounds rounds)" "measured" "target"
row "A runner off: readings/s" "$a" ""
row "B runner on: readings/s" "$b" ""
row "B / A readings/s (of the medians)" "$(ratio "$b" "$a")" "no measurable cost"
row "B / A readings/s (median of the rounds' ratios)" "$(median "${rounds_ratio[@]}")" \
    "A's own spread, max / min: $spread_a"
row "outletd CPU-s per million A / B" "$ca / $cb" "B / A $(ratio "$cb" "$ca")"
row "PostgreSQL CPU-s per million A / B" "$pa / $pb" "B / A $(ratio "$pb" "$pa")"
row "s in transactions A / B (outletd_commit_seconds)" "$(median "${tx_a[@]}") / $(median "${tx_b[@]}")" ""
if [ -n "${statements:-}" ]; then
    echo
    echo "Stage 1's statements (A's and B's drains; pg_stat_statements), by server time:"
    echo "$statements"
fi
echo
echo "2. Live at $rate readings/s for $live_seconds s; $k heaters (over-power 2000 W for 2 s) at 2 readings/s;"
echo "   the runner every ${OUTLETD_AUTOMATIONS_INTERVAL_MS:-250} ms; due: the reading that met the rule;"
echo "   sent: a relay published the command"
row "" "measured" "target"
for line in "${live_rows[@]}"; do
    IFS='|' read -r what measured target <<<"$line"
    row "$what" "$measured" "$target"
done
echo
echo "run time: $(( SECONDS - started )) s (the release build before it not counted)"

results=Benchmarks/results/automations.tsv
header=(date commit readings rounds rules a_per_s b_per_s b_over_a a_cpu_s_per_million b_cpu_s_per_million
        a_pg_cpu_s_per_million b_pg_cpu_s_per_million rate k one_fired one_requested_max one_sent_p50 one_sent_p99
        one_sent_max two_fired two_requested_max two_sent_p50 two_sent_p99 two_sent_max note)
[ -s "$results" ] || (IFS=$'\t'; echo "${header[*]}") >"$results"
fields=("$(date +%F)" "$(git rev-parse --short HEAD)" "$readings" "$rounds" "$n_rules+$n_idle+g$group_outlets" "$a" "$b"
        "$(ratio "$b" "$a")" "$ca" "$cb" "$pa" "$pb" "$rate" "$k" "${live_tsv[@]}" "${NOTE:-}")
(IFS=$'\t'; echo "${fields[*]}") >>"$results"

if [ ${#live_failed[@]} -gt 0 ]; then
    printf 'bench: %s\n' "${live_failed[@]}" >&2
    exit 1
fi
