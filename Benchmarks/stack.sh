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

# sql TEXT: runs TEXT on $db, prints the rows unaligned.
sql() { psql "$db" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
now() { date +%s.%N; }
calc() { python3 -c "print($1)"; }
