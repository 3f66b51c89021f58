# shellcheck shell=bash
# A PostgreSQL primary and an asynchronous streaming standby on loopback, fsync on, for scripts/failover-test
# and Benchmarks/replicated-drain.sh. Source it from the repository's root; it defines:
#
#   pg_pair_make DIR P1 P2   initdb DIR/pg (the primary, port P1: wal_level replica, a `replicator` role and its
#                            hba line, an `outletd` role in pg_monitor owning database outletd), then
#                            pg_basebackup -R into DIR/standby (port P2), started and streaming
#   pgq PORT SQL [DB]        psql as postgres on PORT (database outletd unless DB), rows unaligned
#   pg_start DATA, pg_stop DATA [MODE]   pg_ctl start / stop (MODE fast unless given)
#   pg_kill DATA             kill -9 of DATA's postmaster and every child (its pid file removed); prints how
#                            many processes
#   as_pg CMD…               CMD as the postgres user when running as root (initdb refuses root)
#
# Both servers share DIR/sock for their Unix sockets. PG_PAIR_CONF: more lines for the primary's
# postgresql.conf (the standby inherits them through the base backup).

pg_pair_bindir() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return
    fi
    local d
    # shellcheck disable=SC2012
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] || { echo "pg-pair: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; return 1; }
    echo "$d"
}
pgbin=$(pg_pair_bindir)

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pgq() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "${3:-outletd}" -c "$2"; }

pg_start() {
    as_pg "$pgbin/pg_ctl" -D "$1" -l "$1/server.log" -w -t 60 start >/dev/null 9>&- \
        || { tail -n 20 "$1/server.log" >&2; echo "pg-pair: PostgreSQL in $1 did not start" >&2; return 1; }
}

pg_stop() {
    [ -f "$1/postmaster.pid" ] || return 0
    as_pg "$pgbin/pg_ctl" -D "$1" -m "${2:-fast}" -w -t 60 stop >/dev/null 2>&1 || true
}

pg_kill() {
    local postmaster children
    postmaster=$(head -n 1 "$1/postmaster.pid")
    children=$(pgrep -P "$postmaster" | tr '\n' ' ')
    # shellcheck disable=SC2086
    kill -KILL "$postmaster" $children
    # Its pid file stays behind: gone, a later pg_ctl stop cannot signal whatever process reuses the pid.
    rm -f "$1/postmaster.pid"
    echo $(( 1 + $(wc -w <<<"$children") ))
}

pg_pair_make() {
    local dir=$1 p1=$2 p2=$3
    mkdir -p "$dir/pg" "$dir/standby" "$dir/sock"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/pg" "$dir/standby" "$dir/sock"; fi
    chmod 700 "$dir/standby"
    as_pg "$pgbin/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 -N >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; echo "pg-pair: initdb failed" >&2; return 1; }
    cat >>"$dir/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $p1
unix_socket_directories = '$dir/sock'
fsync = on
synchronous_commit = on
full_page_writes = on
wal_level = replica
max_wal_senders = 4
wal_keep_size = '256MB'
synchronous_standby_names = ''
hot_standby = on
wal_receiver_status_interval = '1s'
max_connections = 100
shared_buffers = '128MB'
log_min_messages = warning
${PG_PAIR_CONF:-}
EOF
    cat >"$dir/pg/pg_hba.conf" <<EOF
local all         all        trust
host  all         all        127.0.0.1/32 trust
host  replication replicator 127.0.0.1/32 trust
EOF
    pg_start "$dir/pg" || return 1
    pgq "$p1" "CREATE ROLE replicator REPLICATION LOGIN" postgres
    pgq "$p1" "CREATE ROLE outletd LOGIN" postgres
    # database.durability replicated reads the standbys' positions in pg_stat_replication, hidden from other roles.
    pgq "$p1" "GRANT pg_monitor TO outletd" postgres
    pgq "$p1" "CREATE DATABASE outletd OWNER outletd" postgres
    as_pg "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$p1" -U replicator -D "$dir/standby" -R -X stream -c fast -N \
        >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; echo "pg-pair: pg_basebackup failed" >&2; return 1; }
    echo "port = $p2" >>"$dir/standby/postgresql.conf"
    pg_start "$dir/standby" || return 1
    for _ in $(seq 1 100); do
        [ "$(pgq "$p1" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" postgres)" = 1 ] && return 0
        sleep 0.1
    done
    echo "pg-pair: the standby does not stream" >&2
    return 1
}
