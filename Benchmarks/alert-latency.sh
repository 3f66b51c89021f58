#!/usr/bin/env bash
# Alerts at scale, end to end (docs/ALERTS.md, "Scale and cost"): OUTLETS outlets (10,000) report every INTERVAL s
# (10) over MQTT into `outletd run`, each watched by its owner's offline rule, the owner opted into a webhook (a local
# receiver that records each request's arrival); after SETTLE s, SILENT (100) of them go quiet at once (their
# publisher is stopped). Prints how many offline alerts were delivered and how often each (exactly once: SILENT
# incidents, one `alert.opened` each, none for an outlet still reporting), each delivery's latency after its
# condition was met (the outlet's last reading + `after`) at p50/p99/max beside the bound 2 × INTERVAL + 30 s,
# ingest's stored rate before the silence and while the alerts are raised, and the rounds' wall time and
# PostgreSQL's CPU per round over the whole run (outletd's /metrics; PostgreSQL's CPU is all of it, ingest's too).
# Durable PostgreSQL (fsync and synchronous_commit on); about 4 minutes.
#
#   Benchmarks/alert-latency.sh        OUTLETS (10000), SILENT (100), INTERVAL (10), SETTLE (60), CONFIG (release)
set -euo pipefail
cd "$(dirname "$0")/.."
outlets=${OUTLETS:-10000}
silent=${SILENT:-100}
interval=${INTERVAL:-10}
settle=${SETTLE:-60}
config=${CONFIG:-release}
live=$(( outlets - silent ))

swift build -c "$config" --product outletd >/dev/null
bin=$(swift build -c "$config" --show-bin-path)
daemon=$bin/outletd
publisher=.build/owner-app-outlets
cc -O2 -Wall -o "$publisher" Benchmarks/OwnerAppLoad/outlets.c -lm

export STACK_PG_DURABLE=1
# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_outletd_stack alert-latency 0
require_durable
hz=$(getconf CLK_TCK)
metrics_port=$(free_port)
receiver_port=$(free_port)
export OUTLETD_INSTANCE_ID=bench OUTLETD_HTTP_LISTEN=127.0.0.1:$metrics_port OUTLETD_ALERTS_INTERVAL_SECONDS=$interval \
    OUTLETD_ALERTS_WEBHOOK_ALLOW_PRIVATE=true OUTLETD_ALERTS_MAX_MESSAGES_PER_HOUR=100000

# The receiver: one line per request, "arrival (s since 1970) webhook-id body", answered 204.
python3 -c 'import http.server, sys, time
out = open(sys.argv[2], "a", buffering=1)
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        out.write("%.6f %s %s\n" % (time.time(), self.headers.get("webhook-id"), body.decode()))
        self.send_response(204); self.end_headers()
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()' \
    "$receiver_port" "$dir/hooks.log" &
pids+=("$!")

printf 'bench-password-1\n' | "$daemon" user add owner --password-stdin >/dev/null
sql "INSERT INTO devices (code, name, owner_id)
     SELECT p || lpad(i::text, 5, '0'), 'alert bench', (SELECT id FROM app_users WHERE name = 'owner')
     FROM (VALUES ('live-', $live), ('gone-', $silent)) v (p, n), generate_series(1, n) i"
sql "INSERT INTO alert_channels (app_user_id, kind, target, secret)
     VALUES ((SELECT id FROM app_users WHERE name = 'owner'), 'webhook', 'http://127.0.0.1:$receiver_port/hook',
             'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')"
"$daemon" alert set offline --owner owner >/dev/null

echo "== $outlets outlets every $interval s ($live + $silent), $settle s to settle" >&2
start_outletd
wait_subscribed
"$publisher" 127.0.0.1 "$OUTLETD_MQTT_PORT" "$live" "$(calc "$live / $interval")" live- 5 2000 >"$dir/live.log" 2>&1 &
live_pid=$!
pids+=("$live_pid")
"$publisher" 127.0.0.1 "$OUTLETD_MQTT_PORT" "$silent" "$(calc "$silent / $interval")" gone- 5 2000 \
    >"$dir/gone.log" 2>&1 &
gone_pid=$!
pids+=("$gone_pid")
sleep "$settle"
[ "$(sql "SELECT count(*) FROM alert_incidents")" = 0 ] \
    || { echo "alert-latency: incidents opened before the silence" >&2; exit 1; }

# round_totals: the rounds' count and summed wall time so far (/metrics), then PostgreSQL's CPU ticks.
round_totals() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '
        /^outletd_alert_round_seconds_count/ { n += $2 } /^outletd_alert_round_seconds_sum/ { s += $2 }
        END { printf "%d %f", n, s }'
    echo " $(pg_cpu_ticks)"
}
i0=$(inserted) t0=$(now)
sleep 30
i1=$(inserted) t1=$(now)
read -r r0 w0 g0 < <(round_totals)
echo "== $silent outlets go silent; waiting for their alerts" >&2
kill "$gone_pid"
wait "$gone_pid" 2>/dev/null || true
deadline=$(( SECONDS + 60 + 3 * interval + 2 * interval + 30 + 60 ))
until [ "$(grep -c '"alert.opened"' "$dir/hooks.log" 2>/dev/null || true)" -ge "$silent" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "alert-latency: not every alert arrived (see $dir)" >&2; break; }
    sleep 1
done
sleep "$interval"  # a late duplicate would arrive now
i2=$(inserted) t2=$(now)
read -r r1 w1 g1 < <(round_totals)
kill -0 "$live_pid" || { echo "alert-latency: the publisher stopped (see $dir/live.log)" >&2; exit 1; }

# Each incident's condition time (the outlet's last reading + after) and its outlet.
sql "SELECT i.id, extract(epoch FROM i.condition_since), d.code, extract(epoch FROM t.last_measured_at)
     FROM alert_incidents i JOIN devices d ON d.id = i.device_id
     LEFT JOIN device_power_totals t ON t.device_id = i.device_id" | tr '|' ' ' >"$dir/incidents.txt"
read -r delivered distinct_ids once wrong p50 p99 worst silence_p99 < <(python3 -c 'import json, statistics, sys
incidents = {int(f[0]): (float(f[1]), f[2], float(f[3] or 0)) for f in (l.split() for l in open(sys.argv[1]))}
arrivals, ids, per_incident = [], set(), {}
for line in open(sys.argv[2]):
    at, hook_id, body = line.split(" ", 2)
    event = json.loads(body)
    event = event.get("event", event)
    if event.get("type") != "alert.opened":
        continue
    ids.add(hook_id)
    per_incident.setdefault(int(event["incident"]), []).append(float(at))
wrong = sum(1 for i in incidents.values() if not i[1].startswith("gone-"))
latency = sorted(min(ts) - incidents[i][0] for i, ts in per_incident.items() if i in incidents)
silence = sorted(min(ts) - incidents[i][2] for i, ts in per_incident.items() if i in incidents)
q = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
print(sum(len(ts) for ts in per_incident.values()), len(ids), sum(1 for ts in per_incident.values() if len(ts) == 1),
      wrong, "%.1f" % q(latency, 0.5), "%.1f" % q(latency, 0.99), "%.1f" % (latency[-1] if latency else float("nan")),
      "%.1f" % q(silence, 0.99))' "$dir/incidents.txt" "$dir/hooks.log")
kill "$live_pid"
stop_outletd

bound=$(( 2 * interval + 30 ))
row() { printf '%-66s %s\n' "$1" "$2"; }
echo
row "alerts at scale ($outlets outlets every $interval s, $silent go silent)" ""
row "offline alerts delivered (requests), distinct webhook-ids" "$delivered, $distinct_ids (expected $silent)"
row "incidents delivered once; incidents of outlets still reporting" "$once of $silent; $wrong"
row "delivery after the condition was met: p50 / p99 / max (s)" "$p50 / $p99 / $worst (bound 2 × $interval + 30 = $bound)"
row "delivery after the outlet's last reading, p99 (s; after included)" "$silence_p99"
row "ingest stored/s: before the silence, while the alerts are raised" \
    "$(calc "round(($i1 - $i0) / ($t1 - $t0))"), $(calc "round(($i2 - $i1) / ($t2 - $t1))") (asked $(calc "round($outlets / $interval)"), then $(calc "round($live / $interval)"))"
rounds=$(( r1 - r0 ))
[ "$rounds" -gt 0 ] || { echo "alert-latency: no round ran while the alerts were raised" >&2; exit 1; }
row "rounds while the alerts are raised: count, wall ms a round" "$rounds, $(calc "round(($w1 - $w0) / $rounds * 1000, 1)")"
row "PostgreSQL CPU ms a round interval (ingest's and the rounds')" \
    "$(calc "round(($g1 - $g0) / $hz / $rounds * 1000, 1)")"
[ "$delivered" = "$silent" ] && [ "$once" = "$silent" ] && [ "$wrong" = 0 ] \
    || { echo "alert-latency: not exactly once (see $dir)" >&2; exit 1; }
