import Foundation
import MQTT
import Postgres
import Protocols
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage

/// A scripted Tasmota or Shelly device: answers the commands outletd publishes the way that firmware does.
final class ScriptedDevice: Sendable {
    private let client: MQTTClient
    /// Every command payload received, in order.
    let received: Locked<[String]>

    /// - Parameters:
    ///   - commandFilter: the topic the device listens on.
    ///   - answer: what it publishes for a command payload (topic, payload) — nothing when empty.
    init(commandFilter: String, answer: @escaping @Sendable (String, String) -> [(String, String)]) throws {
        let received = Locked<[String]>([])
        let box = Locked<MQTTClient?>(nil)
        var configuration = try MQTTConfiguration(
            url: TestStack.shared().mqttURL, clientID: TestStack.uniqueName("device-"))
        configuration.cleanStart = true
        configuration.sessionExpiryInterval = 0
        let client = try MQTTClient(configuration: configuration) { message in
            let text = String(decoding: message.payload, as: UTF8.self)
            received.value.append(text)
            for (topic, payload) in answer(message.topic, text) {
                _ = try? box.value?.publish(topic, payload: Array(payload.utf8), qos: 1)
            }
        }
        box.value = client
        client.setSubscriptions([(filter: commandFilter, qos: 1)])
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(10)) else {
            throw HarnessError("scripted device did not connect")
        }
        self.client = client
        self.received = received
    }

    func stop() { client.stop() }
}

/// Tasmota and Shelly outlets end to end: fake devices publish their firmware's payload shapes through real
/// mosquitto; samples, state and availability land in PostgreSQL; a command round trip is confirmed.
@Suite(.serialized)
struct ForeignDeviceTests {
    static func setup() throws -> (
        url: String, configuration: OutletdConfiguration, store: (DeviceStore.NewDevice) throws -> Void
    ) {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.commands.sweepIntervalMilliseconds = 50
        let add: (DeviceStore.NewDevice) throws -> Void = { device in
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            try DeviceStore(connection: connection).add(device)
        }
        return (url, configuration, add)
    }

    @Test func tasmotaTwoRelaysReadingsStateAndCommand() async throws {
        let (url, configuration, add) = try Self.setup()
        let topic = TestStack.uniqueName("tasmota_")
        try add(.init(code: "tas-1", outletProtocol: .tasmota, protocolTopic: topic, channel: 1))
        try add(.init(code: "tas-2", outletProtocol: .tasmota, protocolTopic: topic, channel: 2))
        // A FullTopic that is not configured: subscribed because a registered outlet uses it.
        let pattern = "\(TestStack.uniqueName("emoncms"))/factory/%topic%/%prefix%/"
        let otherTopic = TestStack.uniqueName("pow")
        try add(.init(code: "tas-emon", outletProtocol: .tasmota, protocolTopic: otherTopic, fullTopic: pattern))
        // Two relays, one meter (its Power a number): the meter's reading is relay 1's.
        let dualTopic = TestStack.uniqueName("dual_")
        try add(.init(code: "dual-1", outletProtocol: .tasmota, protocolTopic: dualTopic, channel: 1))
        try add(.init(code: "dual-2", outletProtocol: .tasmota, protocolTopic: dualTopic, channel: 2))
        let device = try ScriptedDevice(commandFilter: "cmnd/\(topic)/+") { commandTopic, payload in
            let relay = commandTopic.split(separator: "/").last.map(String.init) ?? "POWER"
            guard !payload.isEmpty else { return [] }
            return [("stat/\(topic)/RESULT", #"{"\#(relay)":"\#(payload)"}"#), ("stat/\(topic)/\(relay)", payload)]
        }
        defer { device.stop() }
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            // Tasmota's own empty POWER query on connect is not a command (outletd does not even read cmnd/).
            try await publisher.publishAcknowledged("cmnd/\(topic)/POWER", payload: [])
            try await publisher.publishAcknowledged("tele/\(topic)/LWT", payload: Array("Online".utf8), retain: true)
            try await publisher.publishAcknowledged(
                "tele/\(topic)/SENSOR",
                payload: Array(
                    #"{"Time":"2018-02-15T17:37:10","ENERGY":{"Total":3.5,"Power":[10,"20"],"Current":[0.05,null],"Voltage":230}}"#
                        .utf8))
            try await publisher.publishAcknowledged(
                "tele/\(topic)/STATE", payload: Array(#"{"POWER1":"OFF","POWER2":"ON"}"#.utf8))
            let emoncms = TasmotaProtocol.topic(fullTopic: pattern, prefix: "tele", deviceTopic: otherTopic, suffix: "")
            try await publisher.publishAcknowledged(
                emoncms + "SENSOR", payload: Array(#"{"ENERGY":{"Power":"7","Total":0.5}}"#.utf8))
            try await publisher.publishAcknowledged(
                TasmotaProtocol.topic(fullTopic: pattern, prefix: "stat", deviceTopic: otherTopic, suffix: "POWER"),
                payload: Array("ON".utf8))
            try await publisher.publishAcknowledged(
                "tele/\(dualTopic)/SENSOR",
                payload: Array(
                    #"{"Time":"2024-05-01T12:00:00","ENERGY":{"TotalStartTime":"2024-01-01T00:00:00","Total":2.5,"Yesterday":1,"Today":0.5,"Period":3,"Power":45,"ApparentPower":50,"ReactivePower":20,"Factor":0.9,"Voltage":229,"Current":0.2}}"#
                        .utf8))
            // A sensor that is no meter, on the same device: no reading, no rejection.
            try await publisher.publishAcknowledged(
                "tele/\(dualTopic)/SENSOR",
                payload: Array(#"{"Time":"2024-05-01T12:00:05","DS18B20":{"Temperature":23.5},"TempUnit":"C"}"#.utf8))
            try await Harness.waitUntil(timeout: 10, "four samples and state") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 4
                    && Harness.scalar(
                        url,
                        "SELECT string_agg(reported_state, ',' ORDER BY code) FROM devices WHERE code LIKE 'tas-%'")
                        == "off,on,on"
            }
            #expect(
                try Harness.scalar(
                    url,
                    "SELECT d.code, s.power_watts, s.energy_wh FROM samples s JOIN devices d ON d.id = s.device_id WHERE d.code LIKE 'dual-%'"
                ) == "dual-1|45|2500")
            #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
            #expect(service.metrics.snapshot().ignored[.noMeter] == 1)
            #expect(
                try Harness.scalar(
                    url,
                    "SELECT s.power_watts, s.energy_wh FROM samples s JOIN devices d ON d.id = s.device_id WHERE code = 'tas-emon'"
                )
                    == "7|500")
            #expect(
                try Harness.scalar(
                    url,
                    """
                    SELECT string_agg(d.code || ':' || s.power_watts || ':' || coalesce(s.current_amperes::text, '-')
                        || ':' || s.voltage_volts || ':' || coalesce(s.energy_wh::text, '-'), ',' ORDER BY d.code)
                    FROM samples s JOIN devices d ON d.id = s.device_id WHERE d.code IN ('tas-1', 'tas-2')
                    """) == "tas-1:10:0.05:230:-,tas-2:20:-:230:-")
            #expect(
                try Harness.scalar(url, "SELECT bool_and(online) FROM devices WHERE code IN ('tas-1', 'tas-2')") == "t")
            _ = try Harness.scalar(url, "SELECT request_switch('tas-2', false, 'test')")
            try await Harness.waitUntil(timeout: 10, "command confirmed") {
                try Harness.scalar(url, "SELECT status FROM commands") == "confirmed"
            }
        }
        #expect(device.received.value.contains("OFF"))
        #expect(try Harness.scalar(url, "SELECT reported_state FROM devices WHERE code = 'tas-2'") == "off")
        #expect(try Harness.count(url, "SELECT count(*) FROM commands") == 1)
    }

    @Test func discoveryFillsPendingDevicesAndApproveRegistersInOneStep() async throws {
        let (url, configuration, _) = try Self.setup()
        let topic = TestStack.uniqueName("tasmota_")
        let mac = TestStack.uniqueName("A4CF")
        let shellyID = TestStack.uniqueName("shellyplug-s-")
        let discovery =
            #"{"t":"\#(topic)","ft":"%prefix%/%topic%/","state":["OFF","ON","TOGGLE","HOLD"],"rl":[1,1,0,0],"md":"Sonoff Dual R2"}"#
        try await Harness.withService(configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged(
                "tasmota/discovery/\(mac)/config", payload: Array(discovery.utf8), retain: true)
            try await publisher.publishAcknowledged(
                "shellies/announce", payload: Array(#"{"id":"\#(shellyID)","model":"SHPLG-S"}"#.utf8))
            try await Harness.waitUntil(timeout: 10, "two pending devices") {
                try Harness.count(url, "SELECT count(*) FROM pending_devices WHERE suggested_protocol IS NOT NULL") == 2
            }
            // Clear the retained discovery message again (the broker is shared by the tests).
            try await publisher.publishAcknowledged("tasmota/discovery/\(mac)/config", payload: [], retain: true)
        }
        #expect(
            try Harness.scalar(
                url,
                "SELECT suggested_protocol, suggested_topic, suggested_channels FROM pending_devices WHERE code = '\(topic)'"
            )
                == "tasmota|\(topic)|{1,2}")
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try DeviceStore(connection: connection).approve(topic)
        try DeviceStore(connection: connection).approve(shellyID)
        #expect(
            try Harness.scalar(
                url, "SELECT string_agg(code || ':' || protocol || ':' || channel, ',' ORDER BY code) FROM devices")
                == "\(shellyID):shelly-gen1:0,\(topic):tasmota:1,\(topic)-2:tasmota:2")
        #expect(try Harness.count(url, "SELECT count(*) FROM pending_devices") == 0)
    }

    @Test func shellyGen1PowerEnergyStateAndCommand() async throws {
        let (url, configuration, add) = try Self.setup()
        let id = TestStack.uniqueName("shellyplug-s-")
        try add(.init(code: "plug-s", outletProtocol: .shellyGen1, protocolTopic: id))
        let device = try ScriptedDevice(commandFilter: "shellies/\(id)/relay/0/command") { _, payload in
            [("shellies/\(id)/relay/0", payload)]
        }
        defer { device.stop() }
        try await Harness.withService(configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("shellies/\(id)/online", payload: Array("true".utf8))
            try await publisher.publishAcknowledged("shellies/\(id)/relay/0", payload: Array("on".utf8))
            // Two polls in the firmware's order: power, then the counter (watt-minutes) of the same poll.
            for (power, energy) in [("20.58", "600"), ("21", "630")] {
                try await publisher.publishAcknowledged("shellies/\(id)/relay/0/power", payload: Array(power.utf8))
                try await publisher.publishAcknowledged("shellies/\(id)/relay/0/energy", payload: Array(energy.utf8))
            }
            try await Harness.waitUntil(timeout: 10, "two samples and state") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 2
                    && Harness.scalar(url, "SELECT reported_state, online FROM devices") == "on|t"
            }
            #expect(
                try Harness.scalar(
                    url,
                    """
                    SELECT string_agg(power_watts || ':' || energy_wh || ':' || (voltage_volts IS NULL)
                                      || ':' || (current_amperes IS NULL), ',' ORDER BY measured_at)
                    FROM samples
                    """) == "20.58:10:true:true,21:10.5:true:true")
            #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
            _ = try Harness.scalar(url, "SELECT request_switch('plug-s', false, 'test')")
            try await Harness.waitUntil(timeout: 10, "command confirmed") {
                try Harness.scalar(url, "SELECT status FROM commands") == "confirmed"
            }
        }
        #expect(device.received.value == ["off"])
    }

    @Test func shellyGen2StatusNotifyDeltasRpcCommandAndError() async throws {
        let (url, configuration, add) = try Self.setup()
        let prefix = TestStack.uniqueName("shellyplusplugs-")
        try add(.init(code: "plus", outletProtocol: .shellyGen2, protocolTopic: prefix))
        let replyTopic = "outletd/\(configuration.instanceID)/shelly/\(prefix)/rpc"
        let refuse = Locked(false)
        let device = try ScriptedDevice(commandFilter: "\(prefix)/rpc") { _, payload in
            guard case .object(let request)? = try? JSONParser.parse(Array(payload.utf8)),
                let id = request["id"]?.numberValue(), case .string(let src)? = request["src"],
                case .bool(let on)? = request["params"]?["on"]
            else { return [] }
            guard "\(src)/rpc" == replyTopic else { return [] }
            if refuse.value {
                return [("\(src)/rpc", #"{"id":\#(Int(id)),"error":{"code":-103,"message":"Invalid argument"}}"#)]
            }
            return [
                ("\(src)/rpc", #"{"id":\#(Int(id)),"src":"\#(prefix)","result":{"was_on":\#(!on)}}"#),
                (
                    "\(prefix)/events/rpc",
                    #"{"src":"\#(prefix)","method":"NotifyStatus","params":{"ts":\#(Date().timeIntervalSince1970),"switch:0":{"id":0,"output":\#(on)}}}"#
                ),
            ]
        }
        defer { device.stop() }
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(prefix)/online", payload: Array("true".utf8))
            // The once-a-minute counter update before any power is known: no reading, and no rejection.
            try await publisher.publishAcknowledged(
                "\(prefix)/events/rpc",
                payload: Array(
                    #"{"src":"x","method":"NotifyStatus","params":{"ts":\#(Date().timeIntervalSince1970),"switch:0":{"id":0,"aenergy":{"total":0.1,"by_minute":[0,0,0],"minute_ts":1}}}}"#
                        .utf8))
            let status =
                #"{"id":0,"source":"switch","output":false,"apower":0,"voltage":238.215,"current":0,"aenergy":{"total":0.134,"by_minute":[0,0,0],"minute_ts":1632600459},"temperature":{"tC":49.5,"tF":121.1}}"#
            try await publisher.publishAcknowledged("\(prefix)/status/switch:0", payload: Array(status.utf8))
            try await Harness.waitUntil(timeout: 10, "first sample") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }
            // A delta with only apower, overlaid on the last status: voltage and energy are kept.
            let ts = Date().timeIntervalSince1970
            try await publisher.publishAcknowledged(
                "\(prefix)/events/rpc",
                payload: Array(
                    #"{"src":"x","method":"NotifyStatus","params":{"ts":\#(ts),"switch:0":{"id":0,"apower":12.5}}}"#
                        .utf8))
            // The same values again on the status path: not stored twice.
            let again =
                #"{"id":0,"output":false,"apower":12.5,"voltage":238.215,"current":0,"aenergy":{"total":0.134}}"#
            try await publisher.publishAcknowledged("\(prefix)/status/switch:0", payload: Array(again.utf8))
            try await Harness.waitUntil(timeout: 10, "overlaid sample and state") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 2
                    && Harness.scalar(url, "SELECT reported_state, online FROM devices") == "off|t"
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 2)
            #expect(
                try Harness.scalar(
                    url, "SELECT power_watts, voltage_volts, energy_wh FROM samples ORDER BY measured_at DESC LIMIT 1")
                    == "12.5|238.215|0.134")
            #expect(service.metrics.snapshot().ignored[.energyOnly] == 1)
            _ = try Harness.scalar(url, "SELECT request_switch('plus', true, 'test')")
            try await Harness.waitUntil(timeout: 10, "command confirmed") {
                try Harness.scalar(url, "SELECT status FROM commands") == "confirmed"
            }
            refuse.value = true
            _ = try Harness.scalar(url, "SELECT request_switch('plus', false, 'test')")
            try await Harness.waitUntil(timeout: 10, "command rejected by the device") {
                try Harness.scalar(url, "SELECT status FROM commands ORDER BY id DESC LIMIT 1") == "rejected"
            }
        }
        #expect(
            try Harness.scalar(url, "SELECT reason FROM commands ORDER BY id DESC LIMIT 1")
                == "device_error: device error -103: Invalid argument")
        #expect(try Harness.scalar(url, "SELECT reported_state FROM devices") == "on")
        #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
    }
}
