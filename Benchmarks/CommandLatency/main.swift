// Command latency benchmark (not a test): the time from an operator's publish on <prefix>/<code>/set to the
// arrival of outletd's command on <prefix>/<code>/command, measured in one process with one monotonic clock.
// The outlet obeys (publishes its state naming the command), so every command is confirmed.
//
// Environment: OUTLETD_MQTT_URL, OUTLETD_MQTT_TOPIC_PREFIX (default "outlets"). The outlet `bench-1` must be
// registered. Arguments: [requests (default 500)] [milliseconds between requests (default 20)].
// Run it through Benchmarks/command-latency.sh, which starts everything.
import Foundation
import MQTT
import Protocols
import Telemetry

/// Lock-guarded measurements shared with the MQTT callback thread.
final class Measurements: @unchecked Sendable {
    private let lock = NSLock()
    private var sentAt: [Int: ContinuousClock.Instant] = [:]
    private var latencies: [Duration] = []
    private var commandsSeen = 0

    func sent(_ sequence: Int, at instant: ContinuousClock.Instant) {
        lock.lock()
        sentAt[sequence] = instant
        lock.unlock()
    }

    /// The n-th command received answers the n-th request (requests are spaced well apart).
    func commandReceived(at instant: ContinuousClock.Instant) {
        lock.lock()
        if let start = sentAt[commandsSeen] { latencies.append(start.duration(to: instant)) }
        commandsSeen += 1
        lock.unlock()
    }

    var snapshot: (received: Int, latencies: [Duration]) {
        lock.lock()
        defer { lock.unlock() }
        return (commandsSeen, latencies)
    }
}

let environment = ProcessInfo.processInfo.environment
let url = environment["OUTLETD_MQTT_URL"] ?? "mqtt://127.0.0.1:1883"
let prefix = environment["OUTLETD_MQTT_TOPIC_PREFIX"] ?? "outlets"
let arguments = CommandLine.arguments.dropFirst()
let requests = arguments.first.flatMap(Int.init) ?? 500
let spacingMilliseconds = arguments.dropFirst().first.flatMap(Int.init) ?? 20
let code = "bench-1"
let clock = ContinuousClock()
let measurements = Measurements()
let stateTopic = "\(prefix)/\(code)/state"

final class ClientBox: @unchecked Sendable {
    var client: MQTTClient?
}
let outletBox = ClientBox()
var outletConfiguration = try MQTTConfiguration(url: url, clientID: "bench-outlet-\(getpid())")
outletConfiguration.cleanStart = true
outletConfiguration.sessionExpiryInterval = 0
let outlet = try MQTTClient(configuration: outletConfiguration) { message in
    let now = clock.now
    guard let command = NativeProtocol.decodeCommand(message.payload) else { return }
    measurements.commandReceived(at: now)
    let payload = #"{"state":"\#(command.state.rawValue)","command_id":\#(command.id)}"#
    _ = try? outletBox.client?.publish(stateTopic, payload: Array(payload.utf8), qos: 1, retain: true)
}
outletBox.client = outlet
outlet.setSubscriptions([(filter: "\(prefix)/\(code)/command", qos: 1)])
try outlet.start()
var operatorConfiguration = try MQTTConfiguration(url: url, clientID: "bench-operator-\(getpid())")
operatorConfiguration.cleanStart = true
operatorConfiguration.sessionExpiryInterval = 0
let operatorClient = try MQTTClient(configuration: operatorConfiguration) { _ in }
try operatorClient.start()
guard outlet.waitUntilConnectedBlocking(timeout: .seconds(10)),
    operatorClient.waitUntilConnectedBlocking(timeout: .seconds(10))
else {
    FileHandle.standardError.write(Data("cannot connect to \(url)\n".utf8))
    exit(1)
}
Thread.sleep(forTimeInterval: 0.5)  // let the SUBACK arrive

for sequence in 0..<requests {
    measurements.sent(sequence, at: clock.now)
    try operatorClient.publish("\(prefix)/\(code)/set", payload: Array((sequence % 2 == 0 ? "on" : "off").utf8))
    Thread.sleep(forTimeInterval: Double(spacingMilliseconds) / 1_000)
}
Thread.sleep(forTimeInterval: 1)
let (received, latencies) = measurements.snapshot
let milliseconds = latencies.map { Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1e3 }
    .sorted()
func percentile(_ p: Double) -> String {
    guard !milliseconds.isEmpty else { return "n/a" }
    let index = min(milliseconds.count - 1, Int((p / 100 * Double(milliseconds.count)).rounded(.up)) - 1)
    return String(format: "%.2f", milliseconds[max(0, index)])
}
print(
    "requests \(requests), commands received \(received), p50 \(percentile(50)) ms, p90 \(percentile(90)) ms, "
        + "p99 \(percentile(99)) ms, max \(percentile(100)) ms")
operatorClient.stop()
outlet.stop()
