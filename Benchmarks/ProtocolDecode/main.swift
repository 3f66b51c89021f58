// protocol-decode-bench: decode cost per message of each protocol, for docs/PROTOCOLS.md. Not a test.
//
//   swift build -c release --product protocol-decode-bench
//   .build/release/protocol-decode-bench [--messages 200000] [--rounds 5]
//
// Decodes the documented payload of each protocol `messages` times per round and prints the median
// nanoseconds per message over the rounds (the pure decoder only: no MQTT, spool or database).
import Foundation
import Protocols
import Telemetry

func option(_ name: String, _ fallback: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return Int(arguments[index + 1]) ?? fallback
}

let messages = option("--messages", 200_000)
let rounds = option("--rounds", 5)
let receivedAt = Date()
let limits = ValidationLimits()

let native = Array(#"{"voltage":227.1,"current":0.412,"power":93.5,"pf":0.98,"energy_wh":1234.5,"seq":17}"#.utf8)
let tasmota = Array(
    #"{"Time":"2018-02-15T17:37:10","ENERGY":{"TotalStartTime":"2018-11-14T18:39:40","Total":6.294,"Yesterday":5.340,"Today":0.954,"Period":217,"Power":2635,"ApparentPower":2650,"ReactivePower":282,"Factor":0.99,"Voltage":227,"Current":11.661}}"#
        .utf8)
let gen1Power = Array("20.58".utf8)
let gen2Status = Array(
    #"{"id":0,"source":"switch","output":false,"apower":0,"voltage":238.215,"current":0,"aenergy":{"total":0.134,"by_minute":[0,0,0],"minute_ts":1632600459},"temperature":{"tC":49.5,"tF":121.1}}"#
        .utf8)
let gen2Notify = Array(
    #"{"src":"shellyplusplugs-80646fd20608","dst":"x/events","method":"NotifyStatus","params":{"ts":1714564805.25,"switch:0":{"id":0,"apower":12.5}}}"#
        .utf8)

/// Runs `decode` `messages` times per round; returns the median ns per message. `decode` returns the number of
/// readings, summed so that the work cannot be optimised away.
func measure(_ name: String, _ decode: () -> Int) {
    var perMessage: [Double] = []
    var sink = 0
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        let elapsed = clock.measure {
            for _ in 0..<messages { sink &+= decode() }
        }
        let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        perMessage.append(nanoseconds / Double(messages))
    }
    let sorted = perMessage.sorted()
    let rendered = sorted.map { String(format: "%.0f", $0) }.joined(separator: " ")
    print(
        "\(name.padding(toLength: 38, withPad: " ", startingAt: 0)) \(String(format: "%7.0f", sorted[sorted.count / 2])) ns/message  (rounds: \(rendered); readings \(sink))"
    )
}

print("protocol-decode-bench: \(messages) messages × \(rounds) rounds, median ns per message")
measure("native telemetry") {
    NativeProtocol.decodeTelemetry(native, receivedAt: receivedAt, limits: limits).readings.count
}
measure("tasmota SENSOR") {
    TasmotaProtocol.decodeSensor(tasmota, receivedAt: receivedAt, limits: limits).readings.count
}
measure("shelly-gen1 relay/0/power") {
    ShellyGen1Protocol.reading(powerPayload: gen1Power, energyWattMinutes: 600, receivedAt: receivedAt, limits: limits)
        .readings.count
}
var last = ShellyGen2Protocol.MeterStatus()
measure("shelly-gen2 status/switch:0") {
    guard
        case .success(let updates) = ShellyGen2Protocol.updates(
            gen2Status, kind: .status(component: "switch:0"), limits: limits)
    else { return 0 }
    last = last.overlaid(with: updates[0].fields)
    return ShellyGen2Protocol.reading(last, deviceTime: nil, receivedAt: receivedAt, limits: limits).readings.count
}
measure("shelly-gen2 events/rpc NotifyStatus") {
    guard case .success(let updates) = ShellyGen2Protocol.updates(gen2Notify, kind: .events, limits: limits) else {
        return 0
    }
    last = last.overlaid(with: updates[0].fields)
    return ShellyGen2Protocol.reading(last, deviceTime: updates[0].deviceTime, receivedAt: receivedAt, limits: limits)
        .readings.count
}
// Zigbee2MQTT: the Tuya TS011F_plug_1 state of Zigbee2MQTTProtocolTests, with the cached-values overlay.
let zigbeeState = Array(
    #"{"current":0.05,"energy":1.63,"linkquality":156,"power":10,"power_outage_memory":"restore","state":"ON","voltage":231}"#
        .utf8)
var zigbeeMeter = Zigbee2MQTTProtocol.Meter()
measure("zigbee2mqtt state (TS011F_plug_1)") {
    guard case .success(let members) = Zigbee2MQTTProtocol.members(zigbeeState, limits: limits) else { return 0 }
    zigbeeMeter = Zigbee2MQTTProtocol.Meter().overlaid(
        with: Zigbee2MQTTProtocol.meterUpdate(members, endpoint: "", deviceMeter: true))
    _ = Zigbee2MQTTProtocol.stateReport(members, endpoint: "")
    return Zigbee2MQTTProtocol.reading(zigbeeMeter, receivedAt: receivedAt, limits: limits).readings.count
}
// ESPHome: one sensor value (`96.1` on `<prefix>/sensor/power/state`…), its role, and its share of a cycle of five
// (current, voltage, power, power factor, energy: the CSE7766 of the Athom plug and the Sonoff S31).
let esphomeValues = ["0.42", "229.8", "96.1", "0.99", "1234"].map { Array($0.utf8) }
let esphomeMap = ESPHomeProtocol.SensorMap()
var cycles = ESPHomeCycles<Int>()
var esphomeCount = 0
let roles: [ESPHomeProtocol.SensorRole] = [.current, .voltage, .power, .powerFactor, .energy]
let objectIDs = ["current", "voltage", "power", "power_factor", "energy"]
measure("esphome sensor value + cycle (1 of 5)") {
    esphomeCount &+= 1
    let slot = esphomeCount % 5
    guard case .success(let value?) = ESPHomeProtocol.value(esphomeValues[slot]),
        let role = esphomeMap.role(of: objectIDs[slot])?.role, role == roles[slot]
    else { return 0 }
    let at = receivedAt.addingTimeInterval(Double(esphomeCount / 5))
    return cycles.add(value, role: role, of: 1, at: at).reduce(0) { count, completed in
        count
            + ESPHomeProtocol.reading(completed.values, receivedAt: completed.receivedAt, limits: limits).readings.count
    }
}
