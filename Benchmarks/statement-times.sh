#!/usr/bin/env bash
# Server time of each statement of the write path, with and without rollups: `outletd-bench ingest`
# on a throwaway stack whose PostgreSQL loads pg_stat_statements (docs/ROLLUPS.md, "Benchmark").
#
#   Benchmarks/statement-times.sh [OPTION…]    options of `outletd-bench ingest`
#                                              (default: --outlets 10000 --readings 50 --rounds 3 --warm-up 1)
#
# The on/off ratio of a 10,000-outlet round moves by ±10 points from round to round, mostly with
# the move statement, which both databases run alike. Each statement's own server time (summed
# over the run's batches, divided by its calls) is what tells two builds apart: run this for each,
# alternately. Prints the ratio lines of `outletd-bench` (median, over all rounds), then per
# database its statements, slowest first: calls, ms in total, ms per call, the statement's start.
# (A run of 3 rounds with 1 warm-up batch is 33 batches per database.)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh

[ $# -gt 0 ] || set -- --outlets 10000 --readings 50 --rounds 3 --warm-up 1
swift build -c release --product outletd-bench >/dev/null
bench="$(swift build -c release --show-bin-path)/outletd-bench"

bench_stack statements
cat >>"$dir/pg/postgresql.conf" <<'EOF'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = 'all'
EOF
scripts/stack pg-restart "$dir" 0 >/dev/null
base="postgresql://postgres@127.0.0.1:$OUTLETD_PG_PORT"
for db in bench_off bench_on; do
    psql "$base/postgres" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
done
# The view, in the database it is read from, shows the statements of all databases.
psql "$base/postgres" -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_stat_statements" \
    -c "SELECT pg_stat_statements_reset()" >/dev/null

"$bench" ingest "$base/bench_off" "$base/bench_on" "$@" | grep -E '^(median|all rounds)'
# (The rollups' statements all start with the same CTE: the next one's name tells them apart; the
# chains' COPY has two column lists. Statements below 100 ms in total, e.g. the triggers of the
# benchmark's set-up, are left out.)
psql "$base/postgres" -X -q -v ON_ERROR_STOP=1 -c "
    SELECT d.datname AS database, s.calls, round(s.total_exec_time::numeric) AS total_ms,
           round((s.total_exec_time / s.calls)::numeric, 1) AS ms_per_call,
           left(q, 50) || coalesce(' … ' || substring(q FROM '^WITH settings AS \(.*?\), (\w+) AS'), '')
               || CASE WHEN q LIKE 'COPY outletd_staging_chains %head_sample_count%' THEN ' … with end minutes'
                       ELSE '' END AS statement
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid,
         LATERAL (SELECT regexp_replace(s.query, '\s+', ' ', 'g') AS q) normalized
    WHERE d.datname IN ('bench_off', 'bench_on') AND s.total_exec_time >= 100
      AND q !~ '^(VACUUM|CHECKPOINT|TRUNCATE)'
    ORDER BY 1, 3 DESC"
