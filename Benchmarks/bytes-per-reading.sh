#!/usr/bin/env bash
# Bytes on disk per stored reading: the samples' daily partitions with their indexes, as outletd's writer
# made them, and the rollups per outlet-day. docs/CAPACITY.md explains the figures.
#
# Sourced by Benchmarks/throughput.sh (after Benchmarks/stack.sh), which calls `samples_bytes` after an
# outletd drain and `rollup_day_bytes` at the end. Run alone, it starts its own stack, lets outletd drain a
# backlog and prints both (about a minute):
#
#   Benchmarks/bytes-per-reading.sh            READINGS (200000), OUTLETS (2000), DAY_OUTLETS (100),
#                                              BENCH_DAEMON (another outletd binary: it migrates and drains)
#
# samples_bytes prints, per reading: the heap (of it, from pageinspect: tuple header with null bitmap,
# column data, alignment padding, line pointer; the rest is page headers and free space), the indexes
# (leaf density from pgstattuple), and the total; then the same with the index rebuilt packed, as the maintenance
# pass leaves a partition once its day settled (RollupStore.packSettledPartitions). rollup_day_bytes stores one day at one reading every
# 10 s for DAY_OUTLETS outlets by SQL, rebuilds their rollups (`outletd rollup rebuild`) and prints the
# stored rollup tables' bytes per outlet-day; the rows it made are deleted after.

# samples_bytes: prints the samples' bytes per reading (what is stored now; VACUUM ANALYZE first, which sets
# the visibility map, as autovacuum would).
samples_bytes() {
    local root
    root=$(samples_root)
    sql "CREATE EXTENSION IF NOT EXISTS pageinspect; CREATE EXTENSION IF NOT EXISTS pgstattuple"
    psql "$db" -X -q -v ON_ERROR_STOP=1 -c "VACUUM ANALYZE $root" >/dev/null
    sql "WITH leaves AS (SELECT relid FROM pg_partition_tree('$root') WHERE isleaf AND pg_relation_size(relid) > 0),
              rows AS (SELECT sum(n_live_tup) AS n FROM pg_stat_user_tables JOIN leaves USING (relid)),
              pages AS (SELECT relid, p FROM leaves, generate_series(0, least(pg_relation_size(relid) / 8192, 2000) - 1) p),
              items AS (SELECT i.lp_len, i.t_hoff FROM pages, heap_page_items(get_raw_page(relid::regclass::text, p::int)) i
                        WHERE i.lp_flags = 1),
              tuples AS (SELECT avg(t_hoff) AS hoff, avg(lp_len - t_hoff) AS data,
                                avg((lp_len + 7) / 8 * 8 - lp_len) AS pad FROM items),
              sizes AS (SELECT sum(pg_relation_size(relid)) AS heap, sum(pg_indexes_size(relid)) AS idx FROM leaves),
              density AS (SELECT avg(s.avg_leaf_density) AS leaf FROM leaves,
                                 LATERAL (SELECT indexrelid FROM pg_index WHERE indrelid = relid) x,
                                 LATERAL pgstatindex(indexrelid::regclass::text) s)
         SELECT format('samples (%s): %s readings; heap %s B/reading (tuple header %s + data %s + padding %s + line pointer 4, '
                       || 'pages'' headers and free space %s); indexes %s B/reading (leaf density %s %%); total %s B/reading',
                       '$root', n, round(heap / n, 1), round(hoff, 1), round(data, 1), round(pad, 1),
                       round(heap / n - hoff - data - pad - 4, 1), round(idx / n, 1), round(leaf::numeric, 1),
                       round((heap + idx) / n, 1))
         FROM rows, tuples, sizes, density"
    # As the maintenance pass leaves a partition whose day settled: its index rebuilt packed (fillfactor 100).
    local index
    for index in $(sql "SELECT i.indexrelid::regclass FROM pg_partition_tree('$root') t JOIN pg_index i ON i.indrelid = t.relid
                        WHERE t.isleaf AND i.indisprimary"); do
        sql "ALTER INDEX $index SET (fillfactor = 100); REINDEX INDEX $index"
    done
    sql "WITH leaves AS (SELECT relid FROM pg_partition_tree('$root') WHERE isleaf AND pg_relation_size(relid) > 0),
              sizes AS (SELECT sum(n_live_tup) AS n, sum(pg_relation_size(relid)) AS heap, sum(pg_indexes_size(relid)) AS idx
                        FROM leaves JOIN pg_stat_user_tables USING (relid))
         SELECT format('samples, index packed as for a settled day: indexes %s B/reading; total %s B/reading',
                       round(idx / n, 1), round((heap + idx) / n, 1))
         FROM sizes"
}

# rollup_day_bytes: prints the stored rollups' bytes per outlet-day (DAY_OUTLETS outlets, one reading every 10 s).
rollup_day_bytes() {
    local outlets=${DAY_OUTLETS:-100} start tables=(power_rollups_minute_stored power_rollups_hourly_stored
                                                    power_rollups_daily_stored)
    start=$(date -u -d '3 days ago 00:00' +%FT%TZ)
    sql "INSERT INTO devices (code, name) SELECT 'day-' || i, 'bytes-per-reading day' FROM generate_series(1, $outlets) i"
    sql "SELECT outletd_ensure_sample_partitions(ARRAY[(extract(epoch FROM timestamptz '$start') / 86400)::int])" >/dev/null
    local rows="SELECT d.id, t, t + interval '3 ms', NULL::timestamptz, 229.5 + (s % 5) / 10.0, 0.42, 96.4 + (s % 7), 0.97,
                       s * 0.268, s::bigint
                FROM devices d, generate_series(0, 8639) s,
                     LATERAL (SELECT timestamptz '$start' + s * interval '10 s' AS t) x
                WHERE d.code LIKE 'day-%'"
    if [ "$(samples_root)" = samples_stored ]; then
        # Straight into the table (the view's insert trigger runs a statement per row).
        sql "INSERT INTO samples_stored SELECT c.* FROM ($rows) r (d, m, rc, dt, v, i, p, pf, e, q),
                                        LATERAL outletd_compact_sample(d, m, rc, dt, v, i, p, pf, e, q) c"
    else
        sql "INSERT INTO samples $rows"
    fi
    "$bin/outletd" rollup rebuild --since "$start" >/dev/null
    local t
    for t in "${tables[@]}"; do psql "$db" -X -q -v ON_ERROR_STOP=1 -c "VACUUM ANALYZE $t" >/dev/null; done
    sql "WITH day AS (SELECT id FROM devices WHERE code LIKE 'day-%'),
              per AS (SELECT (SELECT count(*) FROM power_rollups_minute_stored r JOIN day ON r.device_id = day.id) AS minute,
                             (SELECT count(*) FROM power_rollups_minute_stored) AS minute_all,
                             (SELECT count(*) FROM power_rollups_hourly_stored) AS hour_all,
                             (SELECT count(*) FROM power_rollups_daily_stored) AS day_all)
         SELECT format('rollups: %s B per outlet-day (minute %s B/row, hour %s B/row, day %s B/row, with indexes; %s minute rows per outlet-day)',
                       round((pg_total_relation_size('power_rollups_minute_stored') * 1.0 / minute_all * minute
                              + pg_total_relation_size('power_rollups_hourly_stored') * 1.0 / hour_all * 24
                              + pg_total_relation_size('power_rollups_daily_stored') * 1.0 / day_all) / $outlets),
                       round(pg_total_relation_size('power_rollups_minute_stored') * 1.0 / minute_all, 1),
                       round(pg_total_relation_size('power_rollups_hourly_stored') * 1.0 / hour_all, 1),
                       round(pg_total_relation_size('power_rollups_daily_stored') * 1.0 / day_all, 1),
                       round(minute * 1.0 / $outlets))
         FROM per"
    sql "DELETE FROM samples WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'day-%')"
    for t in "${tables[@]}"; do sql "DELETE FROM $t WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'day-%')"; done
    sql "DELETE FROM rollup_tails WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'day-%');
         DELETE FROM device_power_totals WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'day-%');
         DELETE FROM devices WHERE code LIKE 'day-%'"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    cd "$(dirname "$0")/.."
    readings=${READINGS:-200000} outlets=${OUTLETS:-2000} drain_timeout=600
    (( readings % outlets == 0 )) || { echo "bench: READINGS must be a multiple of OUTLETS ($outlets)" >&2; exit 2; }
    if [ -n "${BENCH_DAEMON:-}" ]; then
        daemon=$BENCH_DAEMON
    else
        swift build -c release --product outletd >/dev/null
        daemon=$(swift build -c release --show-bin-path)/outletd
    fi
    export STACK_PG_DURABLE=1 STACK_MQTT_MAX_QUEUED=$(( readings + 1000 ))
    # shellcheck source=Benchmarks/stack.sh
    . Benchmarks/stack.sh
    bin=$(dirname "$daemon")  # the daemon's own build migrates (an older build: its own schema)
    bench_outletd_stack bytes "$outlets"
    require_durable
    bench_backlog_setup
    start_outletd
    wait_subscribed
    stop_outletd
    publish $(( readings / outlets ))
    base=$(inserted)
    t0=$(now)
    start_outletd
    wait_rows "$readings" "$base"
    echo "outletd ($daemon) drained $readings readings at $(drain_rate "$t0" "$readings")/s"
    stop_outletd
    samples_bytes
    rollup_day_bytes
fi
