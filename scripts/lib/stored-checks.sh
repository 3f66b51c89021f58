# shellcheck shell=bash
# What the database holds, checked against what `outletd simulate` sent and against a recomputation from raw
# samples. Sourced by scripts/chaos, scripts/scale-test and scripts/failover-test, after they define
# sql() (psql -X -A -t -q on the database to check). Each function prints one count.

# readings_missing OUTLETS PUBLISHED [CODE_PREFIX]: readings the simulator published that samples lacks.
# The simulator publishes round robin: outlet k (1-based) sent seq 1..PUBLISHED/OUTLETS, plus one more when
# k <= PUBLISHED % OUTLETS. Readings published but never acknowledged may be missing; acknowledged ones may not.
readings_missing() {
    local outlets=$1 published=$2 prefix=${3:-sim-}
    sql "
        SELECT count(*) FROM (
            SELECT '$prefix' || lpad(k::text, 4, '0') AS code, seq
            FROM generate_series(1, $outlets) k,
                 generate_series(1, $published / $outlets
                                    + CASE WHEN k <= $published % $outlets THEN 1 ELSE 0 END) seq
        ) expected
        WHERE NOT EXISTS (SELECT 1 FROM samples s JOIN devices d ON d.id = s.device_id
                          WHERE d.code = expected.code AND s.seq = expected.seq)"
}

# readings_duplicated: rows beyond the first of each (outlet, seq).
readings_duplicated() {
    sql "SELECT count(*) - count(DISTINCT (device_id, seq)) FROM samples"
}

# totals_mismatches: outlets whose device_power_totals differ from a recomputation from samples
# (count, sum, peak).
totals_mismatches() {
    sql "
        SELECT count(*) FROM (SELECT device_id, count(*) AS n, sum(power_watts) AS s, max(power_watts) AS p
                              FROM samples GROUP BY device_id) r
        FULL JOIN device_power_totals t USING (device_id)
        WHERE t.sample_count IS DISTINCT FROM r.n OR t.peak_power_watts IS DISTINCT FROM r.p
           OR abs(t.power_sum_watts - r.s) > 1e-9 * greatest(1, abs(r.s))"
}

# rollup_mismatches: minute, hourly and daily rows that differ from their definition over all raw samples
# (UTC buckets, the default 600 s maximum gap; docs/ROLLUPS.md).
rollup_mismatches() {
    local total=0 spec table key bucket n
    for spec in "power_rollups_minute:bucket_start:date_trunc('minute', measured_at, 'UTC')" \
                "power_rollups_hourly:bucket_start:date_trunc('hour', measured_at, 'UTC')" \
                "power_rollups_daily:day:(measured_at AT TIME ZONE 'UTC')::date"; do
        IFS=: read -r table key bucket <<<"$spec"
        n=$(sql "
            WITH segments AS (
                SELECT device_id, measured_at, power_watts, energy_wh, $bucket AS bucket,
                       extract(epoch FROM lead(measured_at) OVER w - measured_at)::float8 AS seconds,
                       lead(power_watts) OVER w AS next_power, lead(energy_wh) OVER w AS next_energy
                FROM samples WINDOW w AS (PARTITION BY device_id ORDER BY measured_at)
            ), expected AS (
                SELECT device_id, bucket, count(*) AS sample_count, max(power_watts) AS peak,
                       min(power_watts) AS min_power,
                       coalesce(sum((power_watts + next_power) / 2 * seconds) FILTER (WHERE seconds <= 600), 0)
                           AS integral,
                       sum(CASE WHEN energy_wh IS NOT NULL AND next_energy IS NOT NULL
                                THEN CASE WHEN next_energy >= energy_wh THEN next_energy - energy_wh
                                          WHEN energy_wh - next_energy <= greatest(1, energy_wh / 100) THEN 0
                                          ELSE next_energy END
                                WHEN seconds <= 600 THEN (power_watts + next_power) / 2 * seconds / 3600
                                ELSE 0 END) AS energy,
                       max(measured_at) AS last_at
                FROM segments GROUP BY 1, 2
            )
            SELECT count(*) FROM expected e FULL JOIN $table a ON a.device_id = e.device_id AND a.$key = e.bucket
            WHERE e.device_id IS NULL OR a.device_id IS NULL OR e.sample_count <> a.sample_count
               OR e.peak <> a.peak_power_watts OR e.min_power <> a.min_power_watts OR e.last_at <> a.last_at
               OR abs(e.energy - a.energy_wh) > 1e-9 * greatest(1, abs(e.energy))
               OR abs(e.integral - a.power_integral_watt_seconds) > 1e-9 * greatest(1, abs(e.integral))") \
            || return 1
        total=$((total + n))
    done
    echo "$total"
}

# rejections_counted: every rejection counted, all reasons (rejection_counts).
rejections_counted() {
    sql "SELECT coalesce(sum(count), 0) FROM rejection_counts"
}
