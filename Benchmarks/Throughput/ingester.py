"""The ingesters a user would write first, for Benchmarks/throughput.sh; not part of outletd.

paho-mqtt + psycopg: reads outletd's native telemetry payloads from <prefix>/<code>/telemetry at QoS 1 and
stores each reading in outletd's `samples_stored` table (in its compact columns, as outletd writes them), either with one INSERT (one commit) per message, or
--batched: COPY every 1,000 rows or 100 ms, whichever comes first. No registry cache beyond a dict of
codes, no rollups, no spool.

    python ingester.py DATABASE_URL MQTT_HOST MQTT_PORT PREFIX --client-id ID [--batched] [--subscribe-only]

The session is persistent (clean session off) under --client-id, so the broker queues readings while the
ingester is away: --subscribe-only creates the session and its subscription, then disconnects; the next
run drains what was queued meanwhile (the backlog method).
"""

import argparse
import json
import math
import signal
import sys
import time
from datetime import datetime, timedelta, timezone

import paho.mqtt.client as mqtt
import psycopg

parser = argparse.ArgumentParser()
parser.add_argument("database_url")
parser.add_argument("host")
parser.add_argument("port", type=int)
parser.add_argument("prefix")
parser.add_argument("--client-id", required=True)
parser.add_argument("--batched", action="store_true")
parser.add_argument("--subscribe-only", action="store_true")
arguments = parser.parse_args()
database_url, host, port, prefix = arguments.database_url, arguments.host, arguments.port, arguments.prefix
batched = arguments.batched

connection = psycopg.connect(database_url, autocommit=not batched)
device_ids = dict(connection.execute("SELECT code, id FROM devices").fetchall())
if batched:
    connection.commit()

# samples_stored's columns (sql/0024_compact_samples.sql), encoded as outletd encodes them (StoredSample.swift).
COLUMNS = "measured_at, received_at_wide, device_time, seq_wide, voltage_exact, current_exact, power_exact, " \
          "power_factor_exact, energy_exact, device_id, received_delay_us, seq, voltage_centivolts, " \
          "current_milliamperes, power_centiwatts, energy_milliwatt_hours, power_factor_thousandths"
INSERT = f"INSERT INTO samples_stored ({COLUMNS}) VALUES ({', '.join(['%s'] * 17)})"
INT32 = 2**31 - 1
MINUS_INFINITY = "-infinity"
pending = []
last_flush = time.monotonic()


def row_of(message):
    code = message.topic.split("/")[-2]
    device_id = device_ids.get(code)
    if device_id is None:
        return None
    body = json.loads(message.payload)
    received = datetime.now(timezone.utc)
    device_time = datetime.fromtimestamp(body["ts"] / 1000, timezone.utc) if "ts" in body else None
    measured = device_time or received
    return stored_row(device_id, measured, received, device_time, body.get("voltage"), body.get("current"),
                      body["power"], body.get("pf"), body.get("energy_wh"), body.get("seq"))


def scaled(value, scale, limit=INT32):
    """value × scale as a whole number, when it divides back to value exactly; else None."""
    if value is None:
        return None
    value = float(value)
    product = value * scale
    if not abs(product) <= limit:
        return None
    whole = round(product)
    if whole / scale != value or (value == 0 and math.copysign(1, value) < 0):
        return None
    return whole


def stored_row(device_id, measured, received, device_time, voltage, current, power, pf, energy, seq):
    keep_received = device_time == measured or received != measured
    delay = (received - measured) // timedelta(microseconds=1)
    short_delay = delay if keep_received and -INT32 - 1 <= delay <= INT32 else None
    values = [(voltage, scaled(voltage, 100)), (current, scaled(current, 1000)), (power, scaled(power, 100)),
              (pf, scaled(pf, 1000, 32767)), (energy, scaled(energy, 1000))]
    short_seq = seq if seq is not None and -INT32 - 1 <= seq <= INT32 else None
    if device_time is not None and device_time != measured:
        stored_device_time = device_time
    elif device_time is None and keep_received:
        stored_device_time = MINUS_INFINITY
    else:
        stored_device_time = None
    return (measured, received if keep_received and short_delay is None else None, stored_device_time,
            seq if short_seq is None else None, *[value if small is None else None for value, small in values],
            device_id, short_delay, short_seq, values[0][1], values[1][1], values[2][1], values[4][1], values[3][1])


def flush():
    global pending, last_flush
    last_flush = time.monotonic()
    if not pending:
        return
    try:
        with connection.cursor() as cursor:
            with cursor.copy(f"COPY samples_stored ({COLUMNS}) FROM STDIN") as copy:
                for row in pending:
                    copy.write_row(row)
        connection.commit()
    except psycopg.errors.UniqueViolation:
        # After a reconnect the broker redelivers what was not acknowledged: those rows go in one by one.
        connection.rollback()
        with connection.cursor() as cursor:
            cursor.executemany(INSERT + " ON CONFLICT DO NOTHING", pending)
        connection.commit()
    pending = []


def on_message(client, userdata, message):
    row = row_of(message)
    if row is None:
        return
    if batched:
        pending.append(row)
        if len(pending) >= 1000:
            flush()
    else:
        connection.execute(INSERT, row)


subscribed = False


def on_connect(client, userdata, flags, reason_code, properties):
    client.subscribe(f"{prefix}/+/telemetry", qos=1)


def on_subscribe(client, userdata, mid, reason_codes, properties):
    global subscribed
    subscribed = True


def on_disconnect(client, userdata, flags, reason_code, properties):
    if reason_code != 0:
        print(f"ingester: disconnected ({reason_code}); reconnecting", file=sys.stderr)


running = True


def stop(signum, frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=arguments.client_id, clean_session=False)
client.max_inflight_messages_set(100)
client.on_connect = on_connect
client.on_subscribe = on_subscribe
client.on_message = on_message
client.on_disconnect = on_disconnect
client.connect(host, port)
if arguments.subscribe_only:
    deadline = time.monotonic() + 30
    while not subscribed and time.monotonic() < deadline:
        client.loop(timeout=0.05)
    client.disconnect()
    sys.exit(0 if subscribed else 1)
while running:
    # loop() does not reconnect (loop_forever would); the persistent session resumes where it was.
    if client.loop(timeout=0.02) == mqtt.MQTT_ERR_NO_CONN:
        try:
            client.reconnect()
        except OSError:
            time.sleep(0.1)
    if batched and time.monotonic() - last_flush >= 0.1:
        flush()
if batched:
    flush()
client.disconnect()
