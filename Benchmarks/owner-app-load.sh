#!/usr/bin/env bash
# The owners' app under load while ingest runs (docs/OWNER-APP-LOAD.md): a stage of `make bench`, or on its own.
#
#   Benchmarks/owner-app-load.sh        about 6 minutes after the release build and the data (OWNERS=6000)
#
# OWNERS owners, each with 3 outlets and a session (made by SQL as the login makes it: bcrypt is slow on purpose),
# poll the screen they have open as the page does: half the outlet list, half one outlet's detail, every 3 s; one
# poll in 20 of a detail is that outlet's chart (`/hourly`). The outlets priced on a three-band tariff, and the
# viewed one has hourly rollups from the start of the month (what month-to-date and standby read). Meanwhile
# the outlets (Benchmarks/OwnerAppLoad/outlets.c: `outletd simulate`'s readings from a bare socket, a quarter of
# its CPU) publish INGEST_RATE readings/s, QoS 1, and outletd stores them. Before ingest starts, every detail
# owner's page loads its detail once (closed loop; the time is printed): pages open a while. Each level begins
# once ingest is steady (at most SETTLE_MAX s): a level that overloads the machine leaves a backlog, and the next
# would otherwise be measured while outletd catches up on it.
# A level of R requests/s is R × 3 owners polling every 3 s (above OWNERS / 3, the owners poll more often), sent
# open loop at that fixed rate by Benchmarks/OwnerAppLoad/loadgen.c over CONNECTIONS keep-alive connections; a
# request's latency runs from when it was due. Levels double from START_RATE until one fails (p99 of the mix ≥
# 100 ms, or an error, or under 98 % answered, or ingest under 90 % of INGEST_RATE meanwhile; when the
# first fails, they halve until one passes), then two
# bisections; the capacity is the highest level passed.
# CPU per request: that of the app's PostgreSQL backends (application_name outletd-app-*) over the requests
# answered, and the cores outletd used in all (ingest included: on the same threads, it cannot be told apart). So
# outletd's own share is measured once more with ingest stopped: the mix at the capacity found, outletd's CPU less
# its idle rate, over the requests answered. Last, the
# listener's cheapest route (GET /app.css, no database), closed loop on 64 connections: the HTTP ceiling here.
# Then the same owners with the live stream instead of polling (GET /api/v1/live, server-sent events): at each of
# STREAM_LEVELS, N owners hold it open (Benchmarks/OwnerAppLoad/streams.c, opened STREAM_OPEN_RATE a second, each
# event timed from the read it carries to its arrival) while their pages' other requests go on: each detail
# owner's detail (figures and cost) and chart once a minute, N / 60 requests/s. A level passes when the events'
# and the requests' p99 are under 100 ms, every stream is served, at least 90 % of the events due arrive and
# ingest is at least 90 % of INGEST_RATE. Ingest, per second during the level: the PUBLISHes the broker took
# (mosquitto's $SYS counters) and the readings outletd stored, each at least 90 % (stored alone would count a
# backlog left by the level before); between them, the messages outletd received: which stage fell behind.
#
# Knobs: OWNERS (6000), INGEST_RATE (20000), START_RATE (250), MAX_RATE (8000), LEVELS (a list of rates instead
# of the search), LEVEL_SECONDS (15), BASE_SECONDS (10), SETTLE_MAX (60), CONNECTIONS (256), CONFIG (release),
# BENCH_DAEMON (another outletd binary to serve the app and ingest, e.g. an older build), STREAM_LEVELS ("750 1500
# 3000 OWNERS"), STREAM_OPEN_RATE (1000), PUBLISHER (c, or outletd: `outletd simulate` publishes instead);
# LOADGEN_SLOW_MS (each request slower than this is printed with its wall-clock time, to line up with outletd's and
# PostgreSQL's logs).
set -euo pipefail
cd "$(dirname "$0")/.."
owners=${OWNERS:-6000}
ingest_rate=${INGEST_RATE:-20000}
start_rate=${START_RATE:-250}
max_rate=${MAX_RATE:-8000}
level_seconds=${LEVEL_SECONDS:-15}
base_seconds=${BASE_SECONDS:-10}
settle_max=${SETTLE_MAX:-60}
connections=${CONNECTIONS:-256}
config=${CONFIG:-release}
per_owner=3
outlets=$(( owners * per_owner ))
started=$(date +%s)

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
daemon=${BENCH_DAEMON:-$bin/outletd}
loadgen=.build/owner-app-loadgen
cc -O2 -Wall -o "$loadgen" Benchmarks/OwnerAppLoad/loadgen.c
streams=.build/owner-app-streams
cc -O2 -Wall -o "$streams" Benchmarks/OwnerAppLoad/streams.c
publisher=${PUBLISHER:-c}
[ "$publisher" = c ] || [ "$publisher" = outletd ] || { echo "owner-app-load: PUBLISHER is c or outletd" >&2; exit 2; }
outlets_publisher=.build/owner-app-outlets
cc -O2 -Wall -o "$outlets_publisher" Benchmarks/OwnerAppLoad/outlets.c -lm

export STACK_PG_DURABLE=1
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack owner-app "$outlets"
require_durable
app_port=$(free_port) metrics_port=$(free_port)
export OUTLETD_APP_LISTEN=127.0.0.1:$app_port OUTLETD_HTTP_LISTEN=127.0.0.1:$metrics_port OUTLETD_INSTANCE_ID=bench
# Where ingest falls behind, when it does: the PUBLISHes the broker took (the outlets') and the messages outletd
# received, beside the readings stored. `took` prints mosquitto's uptime and PUBLISH count as of its last $SYS
# update (each second): `took_rate BEFORE AFTER` divides the count's growth by the uptime's, so both ends fall on
# the broker's ticks.
took() {
    mosquitto_sub -h 127.0.0.1 -p "$OUTLETD_MQTT_PORT" -v -C 2 -W 5 \
        -t '$SYS/broker/uptime' -t '$SYS/broker/publish/messages/received' \
        | awk '/uptime/ {u = $2} /received/ {c = $2} END {print u, c}'
}
took_rate() {
    local u0 c0 u1 c1
    read -r u0 c0 <<<"$1"
    read -r u1 c1 <<<"$2"
    calc "round(($c1 - $c0) / max($u1 - $u0, 1))"
}
received() { curl -sf "127.0.0.1:$metrics_port/metrics" | awk '/^outletd_messages_received_total/ {print $2}'; }

echo "== owners' app: $owners owners × $per_owner outlets, sessions, a tariff, hourly rollups since the month began" >&2
t0=$(now)
width=$(( ${#outlets} > 4 ? ${#outlets} : 4 ))
month=$(date -u +%Y-%m)
cat >"$dir/branca.yaml" <<YAML
currency: BRL
time_zone: America/Fortaleza
valid_from: $month-01
price_per_kwh: 0.62
bands:
  - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:00", to: "21:00", price_per_kwh: 1.38}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "17:00", to: "18:00", price_per_kwh: 0.89}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "21:00", to: "22:00", price_per_kwh: 0.89}
monthly_adders_per_kwh: {"$month": 0.01885}
YAML
"$bin/outletd" tariff set branca --file "$dir/branca.yaml" >/dev/null
"$bin/outletd" tariff assign branca --default >/dev/null
sql "INSERT INTO app_users (name, password_hash)
     SELECT 'owner-' || i, '\$2b\$12\$not.a.password.hash.for.the.load.benchmark.only....'
     FROM generate_series(1, $owners) i ORDER BY i"
sql "INSERT INTO app_sessions (user_id, token_hash, expires_at)
     SELECT u.id, sha256(convert_to('bench-session-' || u.id, 'UTF8')), now() + interval '1 day' FROM app_users u"
sql "UPDATE devices d SET owner_id = u.id, name = 'outlet ' || d.code, claimed_at = now()
     FROM app_users u, generate_series(1, $per_owner) k
     WHERE d.code = 'sim-' || lpad(($per_owner * (substr(u.name, 7)::int - 1) + k)::text, $width, '0')"
# The viewed outlet (each owner's first): an hour's rollup for every hour of the month so far, 60 W at the least.
sql "INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
         power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
         last_power_watts, last_at)
     SELECT d.id, h, 360, 36000, 360000, 3600, 60, 140, h, 100, 100, h
     FROM app_users u
     JOIN devices d ON d.code = 'sim-' || lpad(($per_owner * (substr(u.name, 7)::int - 1) + 1)::text, $width, '0'),
          generate_series(date_trunc('month', now()), date_trunc('hour', now()) - interval '1 hour',
                          interval '1 hour') h"
sql "VACUUM ANALYZE"
owned=$(sql "SELECT count(*) FROM devices WHERE owner_id IS NOT NULL")
[ "$owned" = "$outlets" ] || { echo "owner-app-load: $owned outlets owned, expected $outlets" >&2; exit 1; }
hours=$(sql "SELECT count(*) FROM power_rollups_hourly_stored")
echo "   $hours hourly rows, in $(calc "round($(now) - $t0)") s" >&2

# The mix, in the order the owners' polls come: owner i (1…) looks at the list when i is odd, else at its first
# outlet's detail; every 20th round a detail owner loads the chart instead. `targets RATE` writes 20 rounds of
# the first min(3 × RATE, OWNERS) owners.
targets() {
    python3 - "$1" "$owners" "$per_owner" "$width" >"$dir/targets" <<'PY'
import sys
rate, owners, per_owner, width = (int(a) for a in sys.argv[1:])
active = min(3 * rate, owners)
for round_ in range(20):
    for i in range(1, active + 1):
        token = f"bench-session-{i}"
        code = "sim-" + str(per_owner * (i - 1) + 1).zfill(width)
        if i % 2:
            print(f"list\t/api/v1/outlets\t{token}")
        elif round_ == i % 20:
            print(f"hourly\t/api/v1/outlets/{code}/hourly\t{token}")
        else:
            print(f"detail\t/api/v1/outlets/{code}\t{token}")
PY
}

start_outletd
wait_subscribed
for _ in $(seq 1 100); do curl -sf -o /dev/null "127.0.0.1:$app_port/app.css" && break; sleep 0.1; done
# Pages that have been open a while (polled or streamed): each detail owner's page loaded its detail once (the
# month before today and the standby priced and kept, as they are an hour), closed loop on 4 connections, all
# answered before the levels (the time it takes is what pricing every page afresh costs, as after a restart), and
# before ingest starts: with ingest on, the readings that waited meanwhile would still be caught up on during the
# first levels.
detail_owners=$(python3 - "$owners" "$per_owner" "$width" "$dir/warm-targets" <<'PY'
import sys
owners, per_owner, width, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(path, "w") as targets:
    for i in range(2, owners + 1, 2):
        code = "sim-" + str(per_owner * (i - 1) + 1).zfill(width)
        targets.write(f"detail\t/api/v1/outlets/{code}\tbench-session-{i}\n")
print(owners // 2)
PY
)
echo "== warm-up: each of the $detail_owners detail owners' pages loads its detail once" >&2
t0=$(now)
warm=$("$loadgen" 127.0.0.1 "$app_port" 0 0 4 "$dir/warm-targets")
read -r _ _ _ warm_count _ warm_errors _ warm_p50 _ warm_p99 _ _ < <(grep '^total' <<<"$warm")
[ "$warm_count" = "$detail_owners" ] && [ "$warm_errors" = 0 ] \
    || { echo "owner-app-load: the warm-up failed" >&2; echo "$warm" >&2; exit 1; }
warm_line="$detail_owners details priced afresh in $(calc "round($(now) - $t0, 1)") s (p50 $warm_p50 ms, p99 $warm_p99 ms, closed loop on 4 connections)"
echo "   $warm_line" >&2
if [ "$publisher" = outletd ]; then
    "$bin/outletd" simulate --outlets "$outlets" --interval "$(calc "$outlets / $ingest_rate")" --count 0 \
        >"$dir/simulate.log" 2>&1 &
else
    "$outlets_publisher" 127.0.0.1 "$OUTLETD_MQTT_PORT" "$outlets" "$ingest_rate" sim- "$width" 2000 \
        >"$dir/simulate.log" 2>&1 &
fi
publisher_pid=$!
pids+=("$publisher_pid")
# settle: waits until ingest is steady, at most SETTLE_MAX s: in two 2-s windows in a row, outletd received at
# most 5 % more messages than INGEST_RATE (it is not draining a queue the broker held for it), and the oldest
# reading in its spool not yet stored had waited under 1 s (`outletd_spool_oldest_record_age_seconds`: its writer
# is not behind). At the start, the outlets' first readings open their rollups, slower than the readings after;
# after a level that overloaded the machine, both queues grew. (Readings stored per window cannot tell: a writer
# falling behind stores less than the rate too.) Sets `settled` (the seconds it took; -1: not steady within
# SETTLE_MAX s) and `last_window` (the last window's rate and spool age, for the message).
spool_age() {
    curl -sf "127.0.0.1:$metrics_port/metrics" \
        | awk '$1 == "outletd_spool_oldest_record_age_seconds" {v = $2} END {print (v == "" || v == "NaN") ? 0 : v}'
}
settle() {
    local t_settle steady=0 r_prev r_now t_prev t_now age rate
    t_settle=$(now) t_prev=$t_settle r_prev=$(received) last_window="no window measured"
    while (( steady < 2 )) && [ "$(calc "int($(now) - $t_settle < $settle_max)")" = 1 ]; do
        sleep 2
        # The window is measured, not assumed: the checks themselves take a while on a loaded machine.
        r_now=$(received) t_now=$(now) age=$(spool_age)
        rate=$(calc "round(($r_now - $r_prev) / ($t_now - $t_prev))")
        last_window="received $rate/s, spool's oldest $(calc "round($age, 2)") s"
        if [ "$(calc "int($rate <= 1.05 * $ingest_rate and $age < 1)")" = 1 ]; then
            steady=$(( steady + 1 ))
        else
            steady=0
        fi
        r_prev=$r_now t_prev=$t_now
    done
    if (( steady == 2 )); then settled=$(calc "round($(now) - $t_settle)"); else settled=-1; fi
}
# before_level NAME: settles before a level; a level that began while ingest was still catching up is named in
# `unsteady` (printed under the tables).
unsteady=()
before_level() {
    settle
    if (( settled < 0 )); then
        unsteady+=("$1")
        echo "   ingest not steady after $settle_max s ($last_window): the level begins while outletd catches up" >&2
    elif (( settled > 4 )); then
        echo "   ingest steady after $settled s" >&2
    fi
}
settle
if (( settled >= 0 )); then
    echo "   ingest steady after $settled s" >&2
else
    echo "   ingest not steady after $settle_max s ($last_window): still catching up" >&2
fi
# The statistics as autovacuum keeps them once outlets report: the VACUUM ANALYZE above saw no `rollup_tails`
# (ingest makes an outlet's row), and the app's statements, prepared and run during the warm-up, kept plans for an
# empty table until autovacuum analysed it (within a minute): meanwhile a detail read ~1,900 pages, not 27.
sql "ANALYZE" >/dev/null

# app_backends: the PIDs of the app's PostgreSQL connections.
app_backends() { sql "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'outletd-app-%'"; }
ticks_of() { local sum=0 t; for pid in "$@"; do t=$(cpu_ticks "$pid" 2>/dev/null) && sum=$(( sum + t )); done; echo "$sum"; }
hz=$(getconf CLK_TCK)

echo "== ingest alone at $ingest_rate readings/s for $base_seconds s (outletd's CPU without the app)" >&2
mosquitto_pid=$(cat "$dir/mosquitto/pid")
o0=$(cpu_ticks "$outletd_pid") s0=$(cpu_ticks "$publisher_pid") m0=$(cpu_ticks "$mosquitto_pid") g0=$(pg_cpu_ticks)
i0=$(inserted) t0=$(now)
sleep "$base_seconds"
base_seconds_measured=$(calc "$(now) - $t0")
base_cpu_rate=$(calc "($(cpu_ticks "$outletd_pid") - $o0) / $hz / $base_seconds_measured")
cores_of() { calc "round(($1 - $2) / $hz / $base_seconds_measured, 2)"; }
base_others="publisher $(cores_of "$(cpu_ticks "$publisher_pid")" "$s0"), mosquitto $(cores_of "$(cpu_ticks "$mosquitto_pid")" "$m0"), PostgreSQL $(cores_of "$(pg_cpu_ticks)" "$g0")"
base_stored=$(calc "round(($(inserted) - $i0) / $base_seconds_measured)")
echo "   stored $base_stored readings/s; outletd $(calc "round($base_cpu_rate, 2)") cores; $base_others" >&2

# level RATE: one level of the mix. Appends its row to `rows` and sets `passed` (0/1). While ingest is on
# (ingest_on=1), a level passes only if the broker took and outletd stored at least 90 % of INGEST_RATE during it.
rows=() idle_cpu_rate= ingest_on=1
level() {
    local rate=$1 o0 p0 t0 i0 b0 r0 elapsed out backends served p99 errors answered cpu_o cpu_p cores_o stored
    targets "$rate"
    (( ingest_on == 0 )) || before_level "$rate requests/s"
    mapfile -t backends < <(app_backends)
    b0=$(took) r0=$(received)
    o0=$(cpu_ticks "$outletd_pid") p0=$(ticks_of "${backends[@]}") i0=$(inserted) t0=$(now)
    out=$("$loadgen" 127.0.0.1 "$app_port" "$rate" "$level_seconds" "$connections" "$dir/targets")
    elapsed=$(calc "$(now) - $t0")
    local readings took_rate received_rate
    readings=$(( $(inserted) - i0 ))
    took_rate=$(took_rate "$b0" "$(took)") received_rate=$(calc "round(($(received) - $r0) / $elapsed)")
    local outletd_seconds
    outletd_seconds=$(calc "($(cpu_ticks "$outletd_pid") - $o0) / $hz")
    cores_o=$(calc "round($outletd_seconds / $elapsed, 2)")
    cpu_p=$(calc "($(ticks_of "${backends[@]}") - $p0) / $hz")
    stored=$(calc "round($readings / $elapsed)")
    read -r _ _ _ answered _ errors _ _ _ p99 _ _ < <(grep '^total' <<<"$out")
    read -r _ _ _ answered _ seconds _ < <(grep '^sent' <<<"$out")
    local gen_cpu route_cols="" r
    gen_cpu=$(awk '/^cpu_s/ {print $2}' <<<"$out")
    for r in list detail hourly; do
        route_cols+=$(awk -v r="$r" '$1 == "route" && $2 == r {printf "%7s/%-7s", $8, $10}' <<<"$out")
        [ -n "$(awk -v r="$r" '$1 == "route" && $2 == r' <<<"$out")" ] || route_cols+=$(printf '%15s' -)
    done
    errors=$(awk '/^total/ {print $6}' <<<"$out")
    cpu_o=-
    [ -z "$idle_cpu_rate" ] \
        || cpu_o=$(calc "round(($outletd_seconds - $idle_cpu_rate * $elapsed) / max($answered, 1) * 1000, 3)")
    served=$(calc "round($answered / $seconds)")
    passed=$(calc "int($p99 < 100 and $errors == 0 and $answered >= 0.98 * $rate * $level_seconds
                        and (not $ingest_on or min($took_rate, $stored) >= 0.9 * $ingest_rate))")
    rows+=("$(printf '%6s %7s %s %8s %10s %8s %7s %7s %7s %7s %8s  %s' "$rate" "$served" "$route_cols" "$p99" \
        "$cpu_o" "$(calc "round($cpu_p / $answered * 1000, 3)")" \
        "$cores_o" "$(calc "round($gen_cpu / $seconds, 2)")" "$took_rate" "$received_rate" "$stored" \
        "$([ "$passed" = 1 ] && echo pass || echo FAIL)")")
    echo "   ${rows[-1]}" >&2
    [ "$errors" = 0 ] || [ "$rate" != "$first_rate" ] \
        || { echo "owner-app-load: $errors errors at the first level" >&2; grep . <<<"$out" >&2; exit 1; }
}

capacity=0
if [ -n "${LEVELS:-}" ]; then
    read -ra levels <<<"$LEVELS"
    first_rate=${levels[0]}
    for rate in "${levels[@]}"; do
        echo "== the mix at $rate requests/s for $level_seconds s" >&2
        level "$rate"
        [ "$passed" = 1 ] && (( rate > capacity )) && capacity=$rate
    done
else
    first_rate=$start_rate rate=$start_rate failed=0
    while (( rate <= max_rate )); do
        echo "== the mix at $rate requests/s for $level_seconds s" >&2
        level "$rate"
        if [ "$passed" = 1 ]; then capacity=$rate; rate=$(( rate * 2 )); else failed=$rate; break; fi
    done
    # The first level failed: halve until one passes (down to 5 requests/s), then bisect above it.
    while (( capacity == 0 && failed > 5 )); do
        rate=$(( failed / 2 ))
        echo "== the mix at $rate requests/s for $level_seconds s" >&2
        level "$rate"
        if [ "$passed" = 1 ]; then capacity=$rate; else failed=$rate; fi
    done
    if (( failed > 0 )); then
        for _ in 1 2; do
            rate=$(( (capacity + failed) / 2 ))
            (( rate > capacity && rate < failed )) || break
            echo "== the mix at $rate requests/s for $level_seconds s" >&2
            level "$rate"
            if [ "$passed" = 1 ]; then capacity=$rate; else failed=$rate; fi
        done
    fi
fi

# stream_level N: N owners hold the live stream (GET /api/v1/live) open instead of polling, while the page's
# remaining requests go on: each detail owner (every other) loads the detail (figures and cost) and the chart
# once a minute each, N / 60 requests/s. Appends its row to `stream_rows` and sets `passed`.
stream_rows=() stream_capacity=0
stream_level() {
    local n=$1 rate o0 p0 i0 t0 b0 r0 elapsed out streamed backends open_seconds
    rate=$(calc "max(1, round($n / 60))")
    before_level "$n streams"
    python3 - "$n" "$per_owner" "$width" "$dir" <<'PY'
import sys
n, per_owner, width, directory = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(f"{directory}/stream-tokens", "w") as tokens, open(f"{directory}/stream-targets", "w") as targets:
    for i in range(1, n + 1):
        tokens.write(f"bench-session-{i}\n")
        if i % 2 == 0:
            code = "sim-" + str(per_owner * (i - 1) + 1).zfill(width)
            route, path = ("detail", f"/api/v1/outlets/{code}") if i % 4 == 0 else ("hourly", f"/api/v1/outlets/{code}/hourly")
            targets.write(f"{route}\t{path}\tbench-session-{i}\n")
PY
    open_seconds=$(calc "$n / $stream_open_rate + 2")
    "$streams" 127.0.0.1 "$app_port" "$level_seconds" "$stream_open_rate" "$dir/stream-tokens" >"$dir/streams.out" &
    local streams_pid=$!
    sleep "$open_seconds"
    mapfile -t backends < <(app_backends)
    b0=$(took) r0=$(received)
    o0=$(cpu_ticks "$outletd_pid") p0=$(ticks_of "${backends[@]}") i0=$(inserted) t0=$(now)
    out=$("$loadgen" 127.0.0.1 "$app_port" "$rate" "$level_seconds" "$connections" "$dir/stream-targets")
    elapsed=$(calc "$(now) - $t0")
    local cores_o cores_p stored took_rate received_rate
    took_rate=$(took_rate "$b0" "$(took)") received_rate=$(calc "round(($(received) - $r0) / $elapsed)")
    cores_o=$(calc "round(($(cpu_ticks "$outletd_pid") - $o0) / $hz / $elapsed, 2)")
    cores_p=$(calc "round(($(ticks_of "${backends[@]}") - $p0) / $hz / $elapsed, 2)")
    stored=$(calc "round(($(inserted) - $i0) / $elapsed)")
    wait "$streams_pid" || { echo "owner-app-load: the stream client failed" >&2; cat "$dir/streams.out" >&2; exit 1; }
    streamed=$(cat "$dir/streams.out")
    local opened refused events per_s d50 d99 ended req_p50 req_p99 errors answered seconds
    read -r _ opened _ refused < <(grep '^opened' <<<"$streamed")
    read -r _ events _ per_s _ d50 _ d99 _ _ < <(grep '^events' <<<"$streamed")
    ended=$(awk '/^ended/ {print $2}' <<<"$streamed")
    read -r _ _ _ _ _ errors _ req_p50 _ req_p99 _ _ < <(grep '^total' <<<"$out")
    read -r _ _ _ answered _ seconds _ < <(grep '^sent' <<<"$out")
    passed=$(calc "int($d99 < 100 and $req_p99 < 100 and $refused == 0 and $ended == 0 and $errors == 0
                        and $per_s >= 0.9 * $n / $live_interval and $answered >= 0.98 * $rate * $level_seconds
                        and min($took_rate, $stored) >= 0.9 * $ingest_rate)")
    local route_p99
    route_p99="$(awk '$1 == "route" && $2 == "detail" {print $10}' <<<"$out")/$(awk '$1 == "route" && $2 == "hourly" {print $10}' <<<"$out")"
    stream_rows+=("$(printf '%6s %8s %7s %9s %13s %8s %13s %15s %8s %7s %7s %7s %7s %8s  %s' "$n" "$(( n / 3 ))" \
        "$opened" "$per_s" "$d50/$d99" "$(calc "round($answered / $seconds)")" "$req_p50/$req_p99" "$route_p99" \
        "$errors" "$cores_o" "$cores_p" "$took_rate" "$received_rate" "$stored" \
        "$([ "$passed" = 1 ] && echo pass || echo FAIL)")")
    echo "   ${stream_rows[-1]}" >&2
    [ "$passed" = 1 ] && (( n > stream_capacity )) && stream_capacity=$n
    sleep 5  # the streams just closed are noticed at their next write
}
stream_open_rate=${STREAM_OPEN_RATE:-1000}
live_interval=3
read -ra stream_levels <<<"${STREAM_LEVELS:-750 1500 3000 $owners}"
for n in "${stream_levels[@]}"; do
    (( n <= owners )) || continue
    echo "== live streams: $n owners hold the stream open for $level_seconds s, their pages' other requests go on" >&2
    stream_level "$n"
done

kill -TERM "$publisher_pid"
wait "$publisher_pid" || { echo "owner-app-load: the outlets' publisher failed (see $dir/simulate.log)" >&2; exit 1; }
ingest_on=0
sleep 3
o0=$(cpu_ticks "$outletd_pid") t0=$(now)
sleep 5
idle_cpu_rate=$(calc "($(cpu_ticks "$outletd_pid") - $o0) / $hz / ($(now) - $t0)")
quiet_rate=$(( capacity > 0 ? capacity : first_rate ))
echo "== ingest stopped: the mix at $quiet_rate requests/s for $level_seconds s (outletd's CPU per request)" >&2
rows_with_ingest=("${rows[@]}")
level "$quiet_rate"
quiet_row=${rows[-1]}
rows=("${rows_with_ingest[@]}")

echo "== the cheapest route: GET /app.css, closed loop, 64 connections, 10 s" >&2
printf 'static\t/app.css\t-\n' >"$dir/static-targets"
ceiling=$("$loadgen" 127.0.0.1 "$app_port" 0 10 64 "$dir/static-targets")
read -r _ _ _ ceiling_count _ _ _ ceiling_p50 _ ceiling_p99 _ _ < <(grep '^total' <<<"$ceiling")
read -r _ _ _ _ _ ceiling_seconds _ < <(grep '^sent' <<<"$ceiling")
ceiling_cpu=$(awk '/^cpu_s/ {print $2}' <<<"$ceiling")

stop_outletd

echo
echo "owners' app under load: $owners owners × $per_owner outlets, ingest at $ingest_rate readings/s, open loop on" \
     "$connections connections, $level_seconds s a level"
echo "(latencies: ms from when each request was due; outletd ms (ingest stopped only), PG ms: CPU ms per request" \
     "answered of outletd and of its app's PostgreSQL backends; outletd, loadgen: cores used in all; took, recv, stored:" \
     "per second, PUBLISHes the broker took, messages outletd received, readings stored. Ingest alone: outletd" \
     "$(calc "round($base_cpu_rate, 2)") cores ($base_others), stored $base_stored readings/s)"
printf '%6s %7s %15s%15s%15s %8s %10s %8s %7s %7s %7s %7s %8s  %s\n' "asked" "served" "list p50/p99" "detail p50/p99" \
    "hourly p50/p99" "all p99" "outletd ms" "PG ms" "outletd" "loadgen" "took/s" "recv/s" "stored/s" ""
printf '%s\n' "${rows[@]}" | sort -n
echo "ingest stopped:"
echo "$quiet_row"
echo "capacity (the mix, p99 < 100 ms, no errors, took and stored ≥ 90 % of $ingest_rate readings/s): $capacity requests/s"
echo "cheapest route (GET /app.css, closed loop, 64 connections): $(calc "round($ceiling_count / $ceiling_seconds)")" \
     "requests/s, p50 $ceiling_p50 ms, p99 $ceiling_p99 ms, loadgen $(calc "round($ceiling_cpu / $ceiling_seconds, 2)") cores"
echo
echo "live streams instead of polling (GET /api/v1/live, read every $live_interval s; the detail's figures and chart once a" \
     "minute each). delay: ms from the read an event carries to its arrival; as polled: the requests/s these owners" \
     "would poll; requests: what the pages still ask; outletd, PG: cores (the app's backends); took, recv, stored as above"
printf '%6s %8s %7s %9s %13s %8s %13s %15s %8s %7s %7s %7s %7s %8s  %s\n' "owners" "as polled" "streams" "events/s" \
    "delay p50/p99" "req/s" "req p50/p99" "p99 det/hourly" "errors" "outletd" "PG" "took/s" "recv/s" "stored/s" ""
printf '%s\n' "${stream_rows[@]}"
echo "warm-up: $warm_line"
(( ${#unsteady[@]} == 0 )) \
    || echo "began while ingest was still catching up ($settle_max s waited): $(IFS=,; echo "${unsteady[*]}" | sed 's/,/, /g')"
echo "owners served with streams (delay and requests p99 < 100 ms, none refused, took and stored ≥ 90 %):" \
     "$stream_capacity, against" \
     "$(( capacity * 3 )) polling ($capacity requests/s)"
echo "owner-app-load: $(( $(date +%s) - started )) s"
