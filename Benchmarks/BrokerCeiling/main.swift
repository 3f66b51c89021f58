// The broker's delivery ceiling (stage B of Benchmarks/throughput.sh; not a test): outletd's own MQTT layer
// (`MQTTClient`: its network loop, buffered reads and gathered PUBACKs) with everything after it cut off. It
// connects as outletd does (MQTT v5, clean start off, the session expiry, keepalive and receive maximum of
// outletd's configuration, read from the same OUTLETD_* environment), subscribes to the native telemetry
// filter at QoS 1, and acknowledges and discards every message, so what limits its drain is the broker.
//
//   broker-ceiling CLIENT_ID --subscribe-only     makes the persistent session and its subscription, then leaves
//   broker-ceiling CLIENT_ID COUNT TIMEOUT_S      drains COUNT messages (fails after TIMEOUT_S seconds)
//
// A drain prints one line: `received=N bytes=B last=EPOCH cpu=SECONDS`: messages and payload bytes received,
// when the last one arrived (epoch seconds) and the process's CPU (user + system, every thread) at the end.
import Config
import Foundation
import MQTT
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("broker-ceiling: \(message)\n".utf8))
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 || arguments.count == 3, let clientID = arguments.first else {
    fail("usage: broker-ceiling CLIENT_ID --subscribe-only | broker-ceiling CLIENT_ID COUNT TIMEOUT_S")
}
let subscribeOnly = arguments[1] == "--subscribe-only"
let count = subscribeOnly ? 0 : Int(arguments[1]) ?? 0
let timeout = arguments.count == 3 ? Int(arguments[2]) ?? 0 : 60
guard subscribeOnly || (count > 0 && timeout > 0) else { fail("COUNT and TIMEOUT_S must be positive numbers") }

let settings: OutletdConfiguration
do {
    settings = try ConfigurationLoader().load(file: nil, environment: ProcessInfo.processInfo.environment)
} catch {
    fail("\(error)")
}
// The session as outletd's MQTTIntake asks for it.
var configuration: MQTTConfiguration
do {
    configuration = try MQTTConfiguration(url: settings.mqtt.url, clientID: clientID)
} catch {
    fail(error.message)
}
configuration.cleanStart = false
configuration.sessionExpiryInterval = UInt32(clamping: settings.mqtt.sessionExpirySeconds)
configuration.keepAliveSeconds = settings.mqtt.keepAliveSeconds
configuration.reconnectDelayMin = settings.mqtt.reconnectDelayMinSeconds
configuration.reconnectDelayMax = settings.mqtt.reconnectDelayMaxSeconds
configuration.receiveMaximum = settings.mqtt.receiveMaximum

/// What the network thread counted; `done` is signalled when the COUNT-th message arrived.
final class Tally: Sendable {
    let messages = Atomic<Int>(0)
    let bytes = Atomic<Int>(0)
    let notQoS1 = Atomic<Int>(0)
    let lastArrival = Mutex<Double>(0)
    let done = DispatchSemaphore(value: 0)
}
let tally = Tally()
let target = count
let client: MQTTClient
do {
    client = try MQTTClient(configuration: configuration) { message in
        // Acknowledged after this returns (libmosquitto queues the PUBACK; the network loop writes a read's
        // PUBACKs together), as for outletd; nothing is kept.
        if message.qos != 1 { tally.notQoS1.add(1, ordering: .relaxed) }
        tally.bytes.add(message.payload.count, ordering: .relaxed)
        let seen = tally.messages.add(1, ordering: .relaxed).newValue
        if seen == target {
            tally.lastArrival.withLock { $0 = Date().timeIntervalSince1970 }
            tally.done.signal()
        }
    }
} catch {
    fail(error.message)
}
client.setSubscriptions([(filter: "\(settings.mqtt.topicPrefix)/+/telemetry", qos: 1)])
do {
    try client.start()
} catch {
    fail(error.message)
}
guard client.waitUntilConnectedBlocking(timeout: .seconds(10)) else {
    fail("not connected to \(configuration.redactedURL) after 10 s")
}

if subscribeOnly {
    // The connect callback queued the SUBSCRIBE before this PUBLISH; the broker handles a connection's packets
    // in order, so once this is acknowledged the subscription is in place.
    do {
        try client.publish("bench/broker-ceiling/\(clientID)", payload: [], qos: 1)
    } catch {
        fail(error.message)
    }
    guard client.waitUntilAcknowledged(atLeast: 1, timeout: .seconds(10)) >= 1 else {
        fail("the broker did not acknowledge the subscription's marker in 10 s")
    }
    client.stop()
    exit(0)
}

guard tally.done.wait(timeout: .now() + .seconds(timeout)) == .success else {
    fail("\(tally.messages.load(ordering: .relaxed)) of \(count) messages after \(timeout) s")
}
client.stop()
guard tally.notQoS1.load(ordering: .relaxed) == 0 else {
    fail("\(tally.notQoS1.load(ordering: .relaxed)) messages arrived at a QoS other than 1")
}
var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
let cpu =
    Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
let last = tally.lastArrival.withLock { $0 }
print(
    "received=\(tally.messages.load(ordering: .relaxed)) bytes=\(tally.bytes.load(ordering: .relaxed))"
        + " last=\(String(format: "%.6f", last)) cpu=\(String(format: "%.3f", cpu))")
