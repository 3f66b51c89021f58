#!/usr/bin/env bash
# Compaction of settled days (docs/COMPACTION.md), on a durable throwaway stack:
#   1. a settled day of OUTLETS outlets, one reading every 10 s, in the firmwares' mix (below), stored in row form as
#      the writer stores it (interleaved by time), its index packed as the maintenance pass leaves a settled day;
#   2. ingest alone at RATE readings/s from INGEST_OUTLETS outlets (Benchmarks/OwnerAppLoad/outlets.c, QoS 1) for
#      MEASURE_SECONDS: readings stored per second, publish → commit p50/p99;
#   3. the same while `outletd storage compact` packs the day (at DUTY, YIELD_MS and SPELL_MS, the background task's
#      defaults: it works that share of the time, waits while ingest's batches wait longer than YIELD_MS, and sizes
#      its chunks to busy spells of SPELL_MS), over the compaction's whole run, and the compaction's rate and CPU-s
#      per million readings;
#   4. bytes per reading of both forms (heap, TOAST and indexes together) and of each packed column; one outlet's
#      day and month read through `samples` in both forms, warm (median of 5) and cold (PostgreSQL restarted, the
#      kernel's page cache dropped; skipped when not root).
# Every day's readings are compared bit for bit before and after (the stage fails otherwise).
#
# The mix, by outlet number mod 6 (values with each firmware's decimals, as its decoder gives them): native (device
# clock in ms, five values, seq), Tasmota (clock in s, whole V and W, kWh by the Wh), Shelly Gen1 (no clock, power
# alone, a counter in watt-minutes), Shelly Gen2 (clock in s, one decimal), Zigbee2MQTT (no clock, whole W, kWh by
# 10 Wh), ESPHome (no clock, power = volts × amperes: doubles that are no whole number of anything). Each outlet
# switches an appliance on and off (runs of zeros), has noise in every value, Shelly Gen1 gaps of five minutes.
#
#   Benchmarks/compaction.sh               OUTLETS (2000), MONTH_OUTLETS (20), RATE (20000), INGEST_OUTLETS (18000),
#                                          MEASURE_SECONDS (20), SETTLE (60), DUTY (0.5), YIELD_MS (250),
#                                          SPELL_MS (250), CONFIG (release)
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${OUTLETS:-2000}
month_outlets=${MONTH_OUTLETS:-20}
rate=${RATE:-20000}
ingest_outlets=${INGEST_OUTLETS:-18000}
seconds=${MEASURE_SECONDS:-20}
settle=${SETTLE:-60}
duty=${DUTY:-0.5}
yield_ms=${YIELD_MS:-250}
spell_ms=${SPELL_MS:-250}
config=${CONFIG:-release}

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
daemon=$bin/outletd
publisher=.build/owner-app-outlets
cc -O2 -Wall -o "$publisher" Benchmarks/OwnerAppLoad/outlets.c -lm

export STACK_PG_DURABLE=1
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack compaction "$ingest_outlets"
require_durable
# The month must outlive the daemon's retention pass; compaction runs here by hand, not in the background.
export OUTLETD_INSTANCE_ID=bench OUTLETD_RETENTION_COMPACT_AFTER_HOURS=0 OUTLETD_RETENTION_RAW_DAYS=60 \
    OUTLETD_RETENTION_MINUTE_ROLLUP_DAYS=62
day=$(date -u -d '3 days ago' +%F)
month_start=$(date -u -d "$day - 29 days" +%F)
hz=$(getconf CLK_TCK)

# mix_rows FIRST_DAY FIRST_SLOT LAST_SLOT PREFIX: the readings of PREFIX-outlets in the 10 s slots FIRST_SLOT to
# LAST_SLOT from FIRST_DAY, as the SQL of outletd_compact_sample's arguments (device, measured, received, device
# time, V, A, W, PF, Wh, seq).
mix_rows() {
    echo "SELECT d.id, m, rc, dt, v, a, p, pf, e, q FROM devices d
          CROSS JOIN generate_series($2, $3) s
          CROSS JOIN LATERAL (SELECT d.id % 6 AS shape, hashint8(d.id::bigint * 100000000 + s) AS h,
                                     (hashint8(d.id::bigint * 100000000 + s / 360) % 3 <> 0) AS on_) k
          CROSS JOIN LATERAL (SELECT timestamptz '$1' + s * interval '10 s' AS t,
                                     229 + abs(h % 400) / 100.0 AS volts,
                                     CASE WHEN on_ THEN 90 + abs(h / 7 % 2000) / 100.0 ELSE 0 END AS watts,
                                     (d.id * 1234.5 + s * 0.27)::float8 AS energy,
                                     (2000 + abs(h / 11 % 40000)) * interval '1 microsecond' AS delay) x
          CROSS JOIN LATERAL (
              SELECT CASE shape WHEN 0 THEN t + abs(h / 13 % 400) * interval '1 ms'
                                WHEN 1 THEN t WHEN 3 THEN t ELSE t + delay END AS m,
                     CASE shape WHEN 0 THEN t + abs(h / 13 % 400) * interval '1 ms' + delay ELSE t + delay END AS rc,
                     CASE shape WHEN 0 THEN t + abs(h / 13 % 400) * interval '1 ms' WHEN 1 THEN t WHEN 3 THEN t END AS dt,
                     CASE shape WHEN 0 THEN round(volts, 2) WHEN 1 THEN round(volts) WHEN 3 THEN round(volts, 1)
                                WHEN 4 THEN round(volts) WHEN 5 THEN round(volts, 1) END::float8 AS v,
                     CASE shape WHEN 0 THEN round(watts / volts, 3) WHEN 1 THEN round(watts / volts, 3)
                                WHEN 3 THEN round(watts / volts, 3) WHEN 4 THEN round(watts / volts, 2)
                                WHEN 5 THEN round(watts / volts, 3) END::float8 AS a,
                     CASE shape WHEN 0 THEN round(watts, 2)::float8 WHEN 1 THEN round(watts)::float8
                                WHEN 2 THEN round(watts, 2)::float8 WHEN 3 THEN round(watts, 1)::float8
                                WHEN 4 THEN round(watts)::float8
                                ELSE round(volts, 1)::float8 * round(watts / volts, 3)::float8 END AS p,
                     CASE shape WHEN 0 THEN CASE WHEN on_ THEN round(0.9 + abs(h % 100) / 1000.0, 2) ELSE 0 END
                                WHEN 1 THEN CASE WHEN on_ THEN 0.95 ELSE 0 END END::float8 AS pf,
                     CASE shape WHEN 0 THEN round(energy::numeric, 3)::float8
                                WHEN 1 THEN round((energy / 1000)::numeric, 3)::float8 * 1000
                                WHEN 2 THEN round(energy * 60) / 60 WHEN 3 THEN round(energy::numeric, 3)::float8
                                WHEN 4 THEN round((energy / 1000)::numeric, 2)::float8 * 1000 END AS e,
                     CASE shape WHEN 0 THEN s END::bigint AS q) r
          WHERE d.code LIKE '$4-%' AND NOT (shape = 2 AND s % 1000 < 30)"
}

# store_mix FIRST_DAY DAYS PREFIX N SLOTS: N outlets' days stored in row form, by time then outlet as the writer stores
# them, SLOTS 10 s slots (of all N outlets) a statement, so that each statement's sort stays in memory; a statement
# that fails fails the stage (set -e at its wait).
store_mix() {
    local first last=$(( $2 * 8640 - 1 ))
    sql "INSERT INTO devices (code, name) SELECT '$3-' || i, 'compaction bench' FROM generate_series(1, $4) i"
    sql "SELECT outletd_ensure_sample_partitions(ARRAY(SELECT (date '$1' - date '1970-01-01') + generate_series(0, $2 - 1)))" \
        >/dev/null
    local writers=()
    for ((first = 0; first <= last; first += $5)); do
        # Two statements at a time, as the writer's batches come from more than one connection.
        if [ "${#writers[@]}" -ge 2 ]; then
            wait "${writers[0]}"
            writers=("${writers[@]:1}")
        fi
        sql "SET work_mem = '1GB';
             INSERT INTO samples_stored SELECT c.* FROM ($(mix_rows "$1" "$first" "$(( first + $5 - 1 < last ? first + $5 - 1 : last ))" "$3"))
                 r (d, m, rc, dt, v, a, p, pf, e, q),
             LATERAL outletd_compact_sample(d, m, rc, dt, v, a, p, pf, e, q) c ORDER BY c.measured_at, c.device_id" &
        writers+=("$!")
        [ "$first" = 0 ] || [ $(( first / $5 % 6 )) != 0 ] || echo "   $3: $(( first * 100 / (last + 1) )) % stored" >&2
    done
    for writer in "${writers[@]}"; do wait "$writer"; done
}

# digests: per outlet and UTC day of the bench's outlets, how many readings and an md5 of every column's exact bytes
# (float8send), in order of time, read through `samples` one outlet-day at a time: compares both forms bit for bit
# without holding a copy of the day.
digests() {
    echo "SELECT d.id, g.day, x.n, x.h FROM devices d
          CROSS JOIN LATERAL generate_series(CASE WHEN d.code LIKE 'mix-%' THEN date '$day' ELSE date '$month_start' END,
                                             date '$day', interval '1 day') g (day)
          CROSS JOIN LATERAL (
              SELECT count(*) AS n,
                     md5(string_agg(ROW(measured_at, received_at, device_time, float8send(voltage_volts),
                                        float8send(current_amperes), float8send(power_watts), float8send(power_factor),
                                        float8send(energy_wh), seq)::text, ',' ORDER BY measured_at)) AS h
              FROM samples s
              WHERE s.device_id = d.id AND s.measured_at >= g.day AND s.measured_at < g.day + interval '1 day') x
          WHERE (d.code LIKE 'mix-%' OR d.code LIKE 'mon-%') AND x.n > 0"
}

echo "== a settled day ($day) of $outlets outlets and a month of $month_outlets, in row form" >&2
store_mix "$day" 1 mix "$outlets" 360
store_mix "$month_start" 30 mon "$month_outlets" $(( 30 * 8640 ))
# As the maintenance pass leaves a settled day: analysed, its index packed.
psql "$db" -X -q -c "VACUUM ANALYZE samples_stored" >/dev/null
for index in $(sql "SELECT i.indexrelid::regclass FROM pg_partition_tree('samples_stored') t JOIN pg_index i ON i.indrelid = t.relid
                    WHERE t.isleaf AND i.indisprimary"); do
    sql "ALTER INDEX $index SET (fillfactor = 100); REINDEX INDEX $index"
done
partition=samples_p${day//-/}
day_readings=$(sql "SELECT count(*) FROM $partition WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'mix-%')")
row_bytes=$(sql "SELECT round(pg_total_relation_size('$partition')::numeric * $day_readings
                            / (SELECT count(*) FROM $partition) / $day_readings, 1)")
echo "== digests of every outlet-day in row form" >&2
sql "SET TimeZone = 'UTC'; CREATE TABLE bench_before AS $(digests)"

one_day="SELECT count(*), sum(power_watts) FROM samples WHERE device_id = (SELECT id FROM devices WHERE code = 'mix-1')
         AND measured_at >= '$day' AND measured_at < date '$day' + 1"
one_month="SELECT count(*), sum(power_watts) FROM samples WHERE device_id = (SELECT id FROM devices WHERE code = 'mon-1')"
# read_ms QUERY: the median of 5 runs' execution time (ms), the server's own figure (EXPLAIN ANALYZE).
read_ms() {
    local times=() i
    for i in 1 2 3 4 5; do
        times+=("$(psql "$db" -X -q -At -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $1" \
                   | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')")
    done
    median "${times[@]}"
}
# cold_ms QUERY: once, after a restart of PostgreSQL with the kernel's page cache dropped.
cold_ms() {
    if [ -w /proc/sys/vm/drop_caches ]; then
        scripts/stack pg-restart "$dir" 0 >/dev/null
        sync
        echo 3 >/proc/sys/vm/drop_caches
        psql "$db" -X -q -At -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $1" \
            | python3 -c 'import json,sys; print(round(json.load(sys.stdin)[0]["Execution Time"], 1))'
    else
        echo "- (not root)"
    fi
}
row_day_warm=$(read_ms "$one_day") row_month_warm=$(read_ms "$one_month")
row_day_cold=$(cold_ms "$one_day") row_month_cold=$(cold_ms "$one_month")

# ingest_window: the stored rate and publish → commit p50/p99 (ms) of readings measured in the next MEASURE_SECONDS.
ingest_window() {
    local i0 t0 i1 t1
    i0=$(inserted) t0=$(now)
    sleep "$seconds"
    i1=$(inserted) t1=$(now)
    kill -0 "$publisher_pid" || { echo "compaction: the publisher stopped (see $dir/publisher.log)" >&2; exit 1; }
    echo "$(calc "round(($i1 - $i0) / ($t1 - $t0))") $(sql "
        SELECT round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::int || ' ' ||
               round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY x))::int
        FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - measured_at) AS x FROM samples_stored
              WHERE measured_at >= to_timestamp($t0) AND measured_at < to_timestamp($t1)) s")"
}

echo "== ingest alone: $ingest_outlets outlets at $rate readings/s, $settle s to settle, then $seconds s" >&2
start_outletd
wait_subscribed
width=$(( ${#ingest_outlets} > 4 ? ${#ingest_outlets} : 4 ))
"$publisher" 127.0.0.1 "$OUTLETD_MQTT_PORT" "$ingest_outlets" "$rate" sim- "$width" 2000 >"$dir/publisher.log" 2>&1 &
publisher_pid=$!
pids+=("$publisher_pid")
sleep "$settle"
read -r alone_rate alone_p50 alone_p99 < <(ingest_window)

echo "== the same while outletd storage compact packs $day (duty $duty, yield $yield_ms ms, spell $spell_ms ms)" >&2
g0=$(pg_cpu_ticks) o0=$(cpu_ticks "$outletd_pid") i0=$(inserted) t0=$(now)
# The compaction's own CPU (user + system, its children's rusage) is written to compact.cpu when it exits.
python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + ".log", "w"), stderr=subprocess.STDOUT)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1] + ".cpu", "w").write("%f\n" % (usage.ru_utime + usage.ru_stime))
sys.exit(code)' "$dir/compact" "$daemon" storage compact "$day" --duty "$duty" --yield-ms "$yield_ms" \
    --spell-ms "$spell_ms" &
compact_pid=$!
pids+=("$compact_pid")
wait "$compact_pid" || { cat "$dir/compact.log" >&2; echo "compaction: outletd storage compact failed" >&2; exit 1; }
i1=$(inserted) t1=$(now) g1=$(pg_cpu_ticks) o1=$(cpu_ticks "$outletd_pid")
kill -0 "$publisher_pid" || { echo "compaction: the publisher stopped (see $dir/publisher.log)" >&2; exit 1; }
during_rate=$(calc "round(($i1 - $i0) / ($t1 - $t0))")
read -r during_p50 during_p99 < <(sql "
    SELECT round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::int || ' ' ||
           round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY x))::int
    FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - measured_at) AS x FROM samples_stored
          WHERE measured_at >= to_timestamp($t0) AND measured_at < to_timestamp($t1)) s")
compact_cpu=$(cat "$dir/compact.cpu")
compact_line=$(tail -n 1 "$dir/compact.log")
compacted=$(sed -n 's/.*: \([0-9]*\) readings of.*/\1/p' <<<"$compact_line")
compact_seconds=$(sed -n 's/.* in \([0-9.]*\) s .*/\1/p' <<<"$compact_line")
waited=$(sed -n 's/.*; waited \([0-9.]*\) s for ingest.*/\1/p' <<<"$compact_line")
kill "$publisher_pid"
stop_outletd
echo "== the month's days too, then both forms compared" >&2
for offset in $(seq 0 29); do
    "$daemon" storage compact "$(date -u -d "$month_start + $offset days" +%F)" >>"$dir/compact.log" 2>&1 \
        || { tail -n 5 "$dir/compact.log" >&2; echo "compaction: outletd storage compact failed" >&2; exit 1; }
done
echo "== digests of every outlet-day in compact form" >&2
sql "SET TimeZone = 'UTC'; CREATE TABLE bench_after AS $(digests)"
differing=$(sql "SELECT count(*) FROM ((TABLE bench_before EXCEPT ALL TABLE bench_after)
                                      UNION ALL (TABLE bench_after EXCEPT ALL TABLE bench_before)) d")
[ "$differing" = 0 ] || { echo "compaction: $differing outlet-days differ after compaction" >&2; exit 1; }
left=$(sql "SELECT count(*) FROM samples_rows WHERE measured_at < date '$day' + 1")
[ "$left" = 0 ] || { echo "compaction: $left readings left in row form" >&2; exit 1; }

psql "$db" -X -q -c "VACUUM ANALYZE samples_compact" >/dev/null
compact_day_bytes=$(sql "
    SELECT round(pg_total_relation_size('samples_compact')::numeric
                 * sum(pg_column_size(c.*)) FILTER (WHERE day = '$day') / sum(pg_column_size(c.*))
                 / sum(readings) FILTER (WHERE day = '$day'), 2)
    FROM samples_compact c")
read -r heap toast index < <(sql "
    SELECT round(pg_relation_size('samples_compact')::numeric / n, 2) || ' ' ||
           round(pg_total_relation_size(reltoastrelid)::numeric / n, 2) || ' ' ||
           round(pg_indexes_size('samples_compact')::numeric / n, 2)
    FROM pg_class, (SELECT sum(readings) AS n FROM samples_compact) r WHERE oid = 'samples_compact'::regclass")
columns=$(sql "SELECT string_agg(format('%s %s', name, round(bytes::numeric / n, 2)), ', ' ORDER BY o)
               FROM (SELECT sum(readings) n, sum(pg_column_size(measured_at)) t, sum(pg_column_size(received_at)) rc,
                            sum(pg_column_size(device_time)) dt, sum(pg_column_size(voltage)) v,
                            sum(pg_column_size(current)) a, sum(pg_column_size(power)) p,
                            sum(pg_column_size(power_factor)) pf, sum(pg_column_size(energy)) e,
                            sum(pg_column_size(seq)) q FROM samples_compact WHERE day = '$day') s,
               LATERAL (VALUES (1, 'measured_at', t), (2, 'received_at', rc), (3, 'device_time', dt), (4, 'voltage', v),
                               (5, 'current', a), (6, 'power', p), (7, 'power_factor', pf), (8, 'energy', e),
                               (9, 'seq', q)) c (o, name, bytes)")
compact_day_warm=$(read_ms "$one_day") compact_month_warm=$(read_ms "$one_month")
compact_day_cold=$(cold_ms "$one_day") compact_month_cold=$(cold_ms "$one_month")

compact_rate=$(calc "round($compacted / $compact_seconds)")
row() { printf '%-56s %16s   %s\n' "$1" "$2" "${3:-}"; }
echo
row "compaction ($outlets outlets, firmwares' mix, a settled day)" "row form" "compact"
row "bytes per reading on disk (heap, TOAST, indexes)" "$row_bytes" "$compact_day_bytes (target ≤ 8; all days: heap $heap, TOAST $toast, index $index)"
row "one outlet's day through samples, warm / cold (ms)" "$row_day_warm / $row_day_cold" "$compact_day_warm / $compact_day_cold"
row "one outlet's month through samples, warm / cold (ms)" "$row_month_warm / $row_month_cold" "$compact_month_warm / $compact_month_cold"
echo "bytes per reading of each packed column (TOAST-compressed where it helped): $columns"
row "compaction rate (readings/s, duty $duty, yield $yield_ms, spell $spell_ms ms)" "$compact_rate" \
    "$compacted readings in $compact_seconds s${waited:+; waited $waited s for ingest}"
row "compaction CPU-s per million readings: outletd" "$(calc "round($compact_cpu / $compacted * 1e6, 2)")" ""
row "ingest alone: stored/s, publish → commit p50 / p99 (ms)" "$alone_rate" "$alone_p50 / $alone_p99"
row "ingest while compacting: stored/s, p50 / p99 (ms)" "$during_rate" "$during_p50 / $during_p99"
row "CPU-s over the compaction ($(calc "round($t1 - $t0, 1)") s): the daemon, PostgreSQL" "$(calc "round(($o1 - $o0) / $hz, 1)")" "$(calc "round(($g1 - $g0) / $hz, 1)") (ingest's and the compaction's)"
