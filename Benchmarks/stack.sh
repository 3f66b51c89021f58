# Sourced by the benchmark scripts (from the repository's root): a throwaway mosquitto and
# PostgreSQL (scripts/stack) for one run.

# bench_stack NAME: starts the stack in a new /tmp/outletd-NAME.* folder (`dir`) and loads its
# environment (OUTLETD_DATABASE_URL, OUTLETD_MQTT_URL, ...). On exit, every pid added to `pids` is
# killed, then the stack is stopped and its folder removed.
bench_stack() {
    dir=$(mktemp -d "/tmp/outletd-$1.XXXXXX")
    pids=()
    trap bench_stack_cleanup EXIT
    scripts/stack start "$dir" >/dev/null
    # shellcheck disable=SC1091
    . "$dir/env"
}

bench_stack_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    scripts/stack stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}

# register_simulated_outlets N NAME: registers the codes `outletd simulate --outlets N` publishes
# from (sim-0001 …, zero-padded to at least four digits), named NAME.
register_simulated_outlets() {
    local width=$(( ${#1} > 4 ? ${#1} : 4 ))
    psql "$OUTLETD_DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -c \
        "INSERT INTO devices (code, name) SELECT 'sim-' || lpad(i::text, $width, '0'), '$2' FROM generate_series(1, $1) i"
}

# bench_outletd_stack NAME OUTLETS: bench_stack NAME for runs of the outletd daemon ($bin/outletd):
# commit timestamps on (the benchmarks count rows by commit time), outletd's environment for a
# benchmark run exported, the schema migrated and OUTLETS simulated outlets registered. Sets `db`.
bench_outletd_stack() {
    bench_stack "$1"
    db=$OUTLETD_DATABASE_URL
    sql "ALTER SYSTEM SET track_commit_timestamp = on" 2>/dev/null
    scripts/stack pg-restart "$dir" 0 >/dev/null
    export OUTLETD_LOGGING_LEVEL=warning OUTLETD_SPOOL_DIRECTORY=$dir/spool OUTLETD_HTTP_LISTEN=
    export OUTLETD_MQTT_SESSION_EXPIRY_SECONDS=0
    "$bin/outletd" migrate >/dev/null
    register_simulated_outlets "$2" bench
}

# free_port: a TCP port free on loopback now (the kernel's pick), for a listener of the run's own.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# sql TEXT: runs TEXT on $db, prints the rows unaligned.
sql() { psql "$db" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
now() { date +%s.%N; }
calc() { python3 -c "print($1)"; }
# median VALUE…: the middle value (of an even count, the mean of the two middle ones).
median() { calc "__import__('statistics').median([$(IFS=,; echo "$*")])"; }
# require_durable: fails unless PostgreSQL runs with fsync, synchronous_commit and full_page_writes on.
require_durable() {
    [ "$(sql 'SHOW fsync')/$(sql 'SHOW synchronous_commit')/$(sql 'SHOW full_page_writes')" = on/on/on ] \
        || { echo "bench: PostgreSQL is not durable (fsync/synchronous_commit/full_page_writes)" >&2; exit 1; }
}

# ---- The backlog method (Benchmarks/throughput.sh, Benchmarks/profile.sh) ----
# They expect: bin (this tree's build), daemon (the outletd to run), outlets (publishing), dir, db,
# drain_timeout (seconds).

# bench_backlog_setup: outletd keeps its session (and its queue) while it is away, under a fixed id.
bench_backlog_setup() {
    export OUTLETD_MQTT_SESSION_EXPIRY_SECONDS=3600 OUTLETD_INSTANCE_ID=bench
}
topic='outlets/+/telemetry'
mqtt_sub() { mosquitto_sub -h 127.0.0.1 -p "$OUTLETD_MQTT_PORT" -q 1 -t "$topic" "$@"; }

# publish COUNT_PER_OUTLET [RATE]: the simulator publishes COUNT_PER_OUTLET readings from each outlet,
# as fast as the broker acknowledges (or at RATE readings/s); fails unless all were acknowledged.
publish() {
    local interval=0.000001
    [ -n "${2:-}" ] && interval=$(calc "$outlets / $2")
    "$bin/outletd" simulate --outlets "$outlets" --interval "$interval" --count "$1" --window 2000 \
        >"$dir/simulate.log" 2>&1 || { cat "$dir/simulate.log" >&2; echo "bench: the simulator failed" >&2; exit 1; }
    local summary
    summary=$(tail -n 1 "$dir/simulate.log")
    echo "   simulator: $summary" >&2
    acknowledged=$(sed -n 's/.*acknowledged \([0-9]*\), invalid.*/\1/p' <<<"$summary")
    [ "$acknowledged" = $(( $1 * outlets )) ] || { echo "bench: not every reading was acknowledged" >&2; exit 1; }
}
# samples_root: the partitioned table that holds the samples: samples_stored (`samples` before migration 24, for
# BENCH_DAEMON set to an older build).
samples_root() { sql "SELECT coalesce(to_regclass('samples_stored'), to_regclass('samples'))::text"; }
# Rows ever inserted into samples' partitions (statistics: cheap to poll, unlike count(*)).
inserted() {
    sql "SELECT coalesce(sum(s.n_tup_ins), 0)
         FROM pg_partition_tree(coalesce(to_regclass('samples_stored'), to_regclass('samples'))) t
         JOIN pg_stat_user_tables s USING (relid)"
}
# wait_rows N: until `samples` holds N rows (polling the statistics, not the table), DRAIN_TIMEOUT at most.
wait_rows() {
    local base=$2 deadline=$(( SECONDS + drain_timeout ))
    until [ $(( $(inserted) - base )) -ge "$1" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "bench: $1 rows not stored after ${drain_timeout} s" >&2; exit 1; }
        sleep 0.25
    done
    local count
    count=$(sql "SELECT count(*) FROM samples")
    [ "$count" = "$1" ] || { echo "bench: samples holds $count rows, expected $1" >&2; exit 1; }
}
# drain_rate START N: N readings over START … the last commit.
drain_rate() {
    sql "SELECT round($2 / extract(epoch FROM max(pg_xact_commit_timestamp(xmin)) - to_timestamp($1)))
         FROM $(samples_root)"
}
# empty_tables: (outletd stopped) the next stage starts from empty tables and an empty spool; the spool's
# records would otherwise be stored again, their checkpoint having gone with ingest_checkpoints.
empty_tables() {
    rm -rf "$dir/spool"
    sql "TRUNCATE $(samples_root), device_power_totals, power_rollups_minute_stored, power_rollups_hourly_stored,
                  power_rollups_daily_stored, rollup_tails, ingest_checkpoints"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start_outletd() {
    "$daemon" run >>"$dir/outletd.log" 2>&1 &
    outletd_pid=$!
    pids+=("$outletd_pid")
}
# status [ID]: the retained status of the outletd whose instance id is ID (bench).
status() {
    mosquitto_sub -h 127.0.0.1 -p "$OUTLETD_MQTT_PORT" -t "outletd/${1:-bench}/status" -C 1 -W 2 2>/dev/null || true
}
# wait_subscribed [ID PID]: until outletd (or instance ID, process PID) is subscribed: it says `online` (retained)
# after subscribing.
wait_subscribed() {
    local id=${1:-bench} pid=${2:-$outletd_pid}
    for _ in $(seq 1 120); do
        [ "$(status "$id")" = online ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    echo "bench: outletd $id did not come online (see $dir/outletd*.log)" >&2
    exit 1
}
# forget_session CLIENT_ID: a clean-session connect ends a session the broker keeps (so that it does
# not queue the next stage's readings).
forget_session() { mqtt_sub -i "$1" -E; }
# stop_outletd [ID PID]: stops outletd (or instance ID, process PID); fails unless it exited cleanly and said offline.
stop_outletd() {
    local id=${1:-bench} pid=${2:-$outletd_pid}
    kill -TERM "$pid"
    wait "$pid" || { echo "bench: outletd $id exited with $? (see $dir/outletd*.log)" >&2; exit 1; }
    [ "$(status "$id")" = offline ] || { echo "bench: outletd $id did not say offline" >&2; exit 1; }
}

# ---- Paired backlog drains (Benchmarks/paired-drains.sh's method; Benchmarks/automations.sh) ----
# They expect the backlog method's variables, readings (the backlog, a multiple of outlets), metrics_port (where
# outletd's /metrics listens while it drains) and outletd's session made (bench_backlog_setup, start_outletd,
# wait_subscribed, stop_outletd).

# pg_cpu_ticks: CPU ticks (user + system) so far of PostgreSQL: the postmaster, the backends it reaped and those
# running.
pg_cpu_ticks() {
    local postmaster ticks child pid
    postmaster=$(head -n 1 "$dir/pg/postmaster.pid")
    ticks=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
    for pid in $(pgrep -P "$postmaster"); do
        child=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && ticks=$(( ticks + child ))
    done
    echo "$ticks"
}
# backlog_drain SPEC: a backlog of $readings published, then drained by the outletd and environment SPEC names (as
# Benchmarks/paired-drains.sh takes them: a path, or VAR=value[,VAR=value…][@PATH]), timed from its start to the
# commit of the last reading; the tables emptied after. Prints one line; sets drained=(readings/s, outletd CPU-s
# per million, peak RSS KiB, s in transactions, PostgreSQL CPU-s per million) and drain_published (when the
# backlog's publishing began, epoch seconds).
backlog_drain() {
    local spec=$1 path=$daemon assignments="" base t0 pid cpu pg0 pg rss rate committed hz
    case "$spec" in
        *=*@*) assignments=${spec%@*} path=${spec##*@} ;;
        *=*) assignments=$spec ;;
        *) path=$spec ;;
    esac
    hz=$(getconf CLK_TCK)
    drain_published=$(now)
    publish $(( readings / outlets ))
    base=$(inserted)
    pg0=$(pg_cpu_ticks)
    t0=$(now)
    (
        IFS=,
        for assignment in $assignments; do export "${assignment?}"; done
        export OUTLETD_HTTP_LISTEN=127.0.0.1:$metrics_port
        exec "$path" run >>"$dir/outletd.log" 2>&1
    ) &
    pid=$!
    pids+=("$pid")
    wait_rows "$readings" "$base"
    cpu=$(cpu_ticks "$pid")
    pg=$(( $(pg_cpu_ticks) - pg0 ))
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    committed=$(curl -s "127.0.0.1:$metrics_port/metrics" | awk '/^outletd_commit_seconds_sum/ {printf "%.1f", $2}')
    rate=$(drain_rate "$t0" "$readings")
    kill -TERM "$pid"
    wait "$pid" || { echo "bench: outletd exited with $? (see $dir/outletd.log)" >&2; exit 1; }
    drained=("$rate" "$(calc "round($cpu / $hz / $readings * 1e6, 2)")" "$rss" "${committed:--}"
             "$(calc "round($pg / $hz / $readings * 1e6, 2)")")
    printf '%-40s %7s readings/s %6s CPU-s per million (PostgreSQL %s) %7s KiB peak RSS %6s s in transactions\n' \
        "$spec" "${drained[0]}" "${drained[1]}" "${drained[4]}" "${drained[2]}" "${drained[3]}"
    empty_tables
}
