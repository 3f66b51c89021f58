#!/usr/bin/env bash
# What one owner's costly requests do to every other owner (issue 62): ana's outlet has a year of hourly rollups
# on the tarifa branca; LOOPS (4) loops ask for its detail over the whole year (GET /api/v1/outlets/{code}?from=
# <a year ago>&to=<now>) back to back, while bob asks for his outlet list (GET /api/v1/outlets) once every 20 ms
# for RUN_SECONDS (20). Prints the year-long detail's time alone (median of 20), then bob's p50, p99 and max, and
# what ana's loops got (200s, 429s).
#
#   Benchmarks/owner-fair-share.sh            this tree's debug build
#   BIN=/path/to/outletd Benchmarks/owner-fair-share.sh    another build (its own migrations)
#
# Knobs: LOOPS (4), RUN_SECONDS (20), BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
loops=${LOOPS:-4}
seconds=${RUN_SECONDS:-20}
if [ -z "${BIN:-}" ]; then
    swift build --product outletd >/dev/null
    BIN="$(swift build --show-bin-path)/outletd"
fi

# shellcheck source=Benchmarks/stack.sh
. Benchmarks/stack.sh
bench_stack owner-fair-share
db=$OUTLETD_DATABASE_URL
export OUTLETD_CONFIG= OUTLETD_LOGGING_LEVEL=warning OUTLETD_SPOOL_DIRECTORY=$dir/spool OUTLETD_HTTP_LISTEN=
"$BIN" migrate >/dev/null
"$BIN" device add year-1 >/dev/null
"$BIN" device add bob-1 >/dev/null
"$BIN" device time-zone year-1 America/Fortaleza >/dev/null
cat >"$dir/branca.yaml" <<YAML
currency: BRL
time_zone: America/Fortaleza
valid_from: 2020-01-01
price_per_kwh: 0.62
bands:
  - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:00", to: "21:00", price_per_kwh: 1.38}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "17:00", to: "18:00", price_per_kwh: 0.89}
  - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "21:00", to: "22:00", price_per_kwh: 0.89}
YAML
"$BIN" tariff set branca --file "$dir/branca.yaml" >/dev/null
"$BIN" tariff assign branca --default >/dev/null
echo "ana-password-1" | "$BIN" user add ana --password-stdin >/dev/null
echo "bob-password-2" | "$BIN" user add bob --password-stdin >/dev/null
sql "UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = 'ana') WHERE code = 'year-1'"
sql "UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = 'bob') WHERE code = 'bob-1'"
sql "INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
         power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
         last_power_watts, last_at)
     SELECT d.id, h, 360, 36000, 360000, 3600, 100, 100, h, 100 + (extract(epoch FROM h)::bigint % 7), 100, h
     FROM devices d, generate_series(date_trunc('hour', now()) - interval '366 days',
                                     date_trunc('hour', now()) - interval '1 hour', interval '1 hour') h
     WHERE d.code = 'year-1'"
sql "VACUUM ANALYZE"

app_port=$(free_port)
OUTLETD_APP_LISTEN=127.0.0.1:$app_port "$BIN" run >"$dir/outletd.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
    curl -sf -o /dev/null "127.0.0.1:$app_port/" && break
    sleep 0.2
done

python3 - "$app_port" "$loops" "$seconds" <<'PY'
import http.client, json, statistics, sys, threading, time
from datetime import datetime, timedelta, timezone

port, loops, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def request(method, path, token=None, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    started = time.monotonic()
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data, time.monotonic() - started

def login(name, password):
    status, data, _ = request("POST", "/api/v1/login", body={"username": name, "password": password})
    assert status == 200, (status, data)
    return json.loads(data)["token"]

ana, bob = login("ana", "ana-password-1"), login("bob", "bob-password-2")
now = datetime.now(timezone.utc).replace(microsecond=0)
year = "/api/v1/outlets/year-1?from=%s&to=%s" % (
    (now - timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ"), now.strftime("%Y-%m-%dT%H:%M:%SZ"))
alone = []
for _ in range(20):
    status, data, took = request("GET", year, ana)
    assert status == 200, (status, data)
    alone.append(took * 1000)
print("owner-fair-share: ana's year-long detail alone: median %.1f ms, max %.1f ms (cost %s)"
      % (statistics.median(alone), max(alone), json.loads(data)["cost"]))

stop = threading.Event()
counts = {}
lock = threading.Lock()

def loop():
    while not stop.is_set():
        status, _, _ = request("GET", year, ana)
        with lock:
            counts[status] = counts.get(status, 0) + 1

threads = [threading.Thread(target=loop) for _ in range(loops)]
for thread in threads:
    thread.start()
time.sleep(1)
latencies, statuses = [], {}
end = time.monotonic() + seconds
while time.monotonic() < end:
    status, _, took = request("GET", "/api/v1/outlets", bob)
    statuses[status] = statuses.get(status, 0) + 1
    latencies.append(took * 1000)
    time.sleep(0.02)
stop.set()
for thread in threads:
    thread.join()
latencies.sort()
p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
print("owner-fair-share: bob's GET /api/v1/outlets under %d of ana's loops: %d requests %s, p50 %.1f ms, "
      "p99 %.1f ms, max %.1f ms" % (loops, len(latencies), statuses, statistics.median(latencies), p99,
                                     latencies[-1]))
print("owner-fair-share: ana's loops got %s in %.0f s" % (dict(sorted(counts.items())), seconds + 1))
PY
