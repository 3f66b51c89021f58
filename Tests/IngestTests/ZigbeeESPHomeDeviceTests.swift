import Foundation
import MQTT
import Postgres
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import Daemon
@testable import Ingest
@testable import Storage

/// Zigbee2MQTT and ESPHome end to end: a scripted bridge and scripted nodes publish their payload shapes (the ones
/// of `Zigbee2MQTTProtocolTests` and `ESPHomeProtocolTests`) through real mosquitto; samples, state, availability
/// and pending outlets land in PostgreSQL; a command round trip is confirmed by the device's next state.
@Suite(.serialized)
struct ZigbeeESPHomeDeviceTests {
    @Test func zigbee2mqttStatesCacheAvailabilityPendingAndCommands() async throws {
        let (url, baseConfiguration, add) = try ForeignDeviceTests.setup()
        var configuration = baseConfiguration
        let base = TestStack.uniqueName("z2m")
        configuration.protocols.zigbee2mqttBaseTopic = base
        try add(.init(code: "kettle", outletProtocol: .zigbee2mqtt, protocolTopic: "kitchen/kettle"))
        try add(.init(code: "strip-l1", outletProtocol: .zigbee2mqtt, protocolTopic: "desk strip", endpoint: "l1"))
        try add(.init(code: "strip-l2", outletProtocol: .zigbee2mqtt, protocolTopic: "desk strip", endpoint: "l2"))
        // The bridge: a `…/set` is answered with the device's whole cached state (cache_state: true).
        let states = Locked<[String: [String: String]]>([
            "kitchen/kettle": ["state": "ON"], "desk strip": ["state_l1": "ON", "state_l2": "ON"],
        ])
        let bridge = try ScriptedDevice(commandFilter: "\(base)/#") { topic, payload in
            guard topic.hasSuffix("/set"),
                case .object(let request)? = try? JSONParser.parse(Array(payload.utf8))
            else { return [] }
            let name = String(topic.dropFirst(base.count + 1).dropLast(4))
            let cached = states.withValue { all -> [String: String] in
                for (key, value) in request {
                    if case .string(let word) = value { all[name, default: [:]][key] = word }
                }
                return all[name] ?? [:]
            }
            let fields = cached.sorted { $0.key < $1.key }.map { #""\#($0.key)":"\#($0.value)""# }
            return [
                (
                    "\(base)/\(name)",
                    #"{"current":0.05,"energy":1.63,"linkquality":150,"power":10,\#(fields.joined(separator: ",")),"voltage":231}"#
                )
            ]
        }
        defer { bridge.stop() }
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            func publish(_ topic: String, _ payload: String, retain: Bool = false) async throws {
                try await publisher.publishAcknowledged(topic, payload: Array(payload.utf8), retain: retain)
            }
            try await publish("\(base)/kitchen/kettle/availability", #"{"state":"online"}"#, retain: true)
            try await publish("\(base)/desk strip/availability", "online", retain: true)
            // Tuya TS011F_plug_1, then the same cached values with only the state changed, then a new power.
            try await publish(
                "\(base)/kitchen/kettle",
                #"{"current":0.05,"energy":1.63,"linkquality":156,"power":10,"power_outage_memory":"restore","state":"ON","voltage":231}"#
            )
            try await publish(
                "\(base)/kitchen/kettle",
                #"{"current":0.05,"energy":1.63,"linkquality":150,"power":10,"power_outage_memory":"restore","state":"ON","voltage":231}"#
            )
            try await publish("\(base)/kitchen/kettle/power", "10")  // output: attribute_and_json
            // Tuya TS011F_4: one meter, two sockets.
            try await publish(
                "\(base)/desk strip",
                #"{"child_lock":"UNLOCK","current":0.42,"energy":12.5,"indicator_mode":"off/on","linkquality":102,"power":96.1,"power_outage_memory":"on","state_l1":"ON","state_l2":"OFF","voltage":229.8}"#
            )
            // Everything else under the base topic: never a rejection.
            try await publish(
                "\(base)/hall/temperature", #"{"battery":90,"humidity":40.5,"linkquality":60,"temperature":21.5}"#)
            try await publish("\(base)/bridge/state", #"{"state":"online"}"#, retain: true)
            try await publish("\(base)/bridge/devices", Zigbee2MQTTProtocolTestsPayload.bridgeDevices, retain: true)
            try await Harness.waitUntil(timeout: 10, "two samples, states and pending") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 2
                    && Harness.scalar(
                        url,
                        "SELECT string_agg(code || ':' || reported_state || ':' || online, ',' ORDER BY code) FROM devices"
                    )
                        == "kettle:on:true,strip-l1:on:true,strip-l2:off:true"
                    && Harness.count(
                        url, "SELECT count(*) FROM pending_devices WHERE suggested_protocol = 'zigbee2mqtt'") == 1
            }
            #expect(
                try Harness.scalar(
                    url,
                    """
                    SELECT string_agg(d.code || ':' || s.power_watts || ':' || s.voltage_volts || ':' || s.energy_wh, ','
                                      ORDER BY d.code)
                    FROM samples s JOIN devices d ON d.id = s.device_id
                    """) == "kettle:10:231:1630,strip-l1:96.1:229.8:12500")
            // The kettle's second message repeated the cache: not a new measurement.
            #expect(service.metrics.snapshot().ignored[.cachedValues] == 1)
            #expect(service.metrics.snapshot().ignored[.attributeTopic] == 1)
            #expect(service.metrics.snapshot().ignored[.notAnOutlet] == 1)
            _ = try Harness.scalar(url, "SELECT request_switch('strip-l2', true, 'test')")
            try await Harness.waitUntil(timeout: 10, "command confirmed") {
                try Harness.scalar(url, "SELECT status FROM commands") == "confirmed"
            }
            _ = try Harness.scalar(url, "SELECT request_switch('kettle', false, 'test')")
            try await Harness.waitUntil(timeout: 10, "second command confirmed") {
                try Harness.scalar(url, "SELECT string_agg(status, ',' ORDER BY id) FROM commands")
                    == "confirmed,confirmed"
            }
            for topic in ["kitchen/kettle/availability", "desk strip/availability", "bridge/state", "bridge/devices"] {
                try await publish("\(base)/\(topic)", "", retain: true)
            }
        }
        #expect(bridge.received.value.contains(#"{"state_l2":"ON"}"#))
        #expect(bridge.received.value.contains(#"{"state":"OFF"}"#))
        #expect(try Harness.scalar(url, "SELECT reported_state FROM devices WHERE code = 'kettle'") == "off")
        #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
        #expect(
            try Harness.scalar(url, "SELECT suggested_topic FROM pending_devices WHERE code = 'kitchen-kettle2'")
                == "kitchen/kettle2")
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let approved = try DeviceStore(connection: connection).approve("kitchen-kettle2")
        #expect(approved.map(\.protocolTopic) == ["kitchen/kettle2"] && approved.map(\.protocolName) == ["zigbee2mqtt"])
    }

    @Test func esphomeDiscoveryPendingApproveCyclesAndCommands() async throws {
        let (url, baseConfiguration, add) = try ForeignDeviceTests.setup()
        var configuration = baseConfiguration
        let discovery = TestStack.uniqueName("ha")
        configuration.homeAssistant.prefix = discovery
        let prefix = TestStack.uniqueName("athom-smart-plug-v2-")
        let node = "\(prefix)-abcdef"
        // A Sonoff S31 registered by hand: no discovery, the usual ids with the node name in front, its only switch.
        let s31 = TestStack.uniqueName("sonoff_s31_")
        try add(.init(code: "s31", outletProtocol: .esphome, protocolTopic: s31))
        let athomNode = try ScriptedDevice(commandFilter: "\(prefix)/switch/+/command") { topic, payload in
            [(topic.replacingOccurrences(of: "/command", with: "/state"), payload)]
        }
        defer { athomNode.stop() }
        let s31Node = try ScriptedDevice(commandFilter: "\(s31)/switch/+/command") { topic, payload in
            [(topic.replacingOccurrences(of: "/command", with: "/state"), payload)]
        }
        defer { s31Node.stop() }
        let configs = ESPHomePayloads.athomConfigs(prefix: prefix)
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            func publish(_ topic: String, _ payload: String, retain: Bool = false) async throws {
                try await publisher.publishAcknowledged(topic, payload: Array(payload.utf8), retain: retain)
            }
            for (component, objectID, payload) in configs {
                try await publish("\(discovery)/\(component)/\(node)/\(objectID)/config", payload, retain: true)
            }
            try await Harness.waitUntil(timeout: 10, "the node pending") {
                try Harness.scalar(url, "SELECT suggested_sensor_map FROM pending_devices WHERE code = '\(node)'")
                    == "power=power,voltage=voltage,current=current,energy=total_energy:kWh,switch=switch"
            }
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            try DeviceStore(connection: connection).approve(node)
            #expect(
                try Harness.scalar(url, "SELECT discovered_sensor_map FROM devices WHERE code = '\(node)'")
                    == "power=power,voltage=voltage,current=current,energy=total_energy:kWh,switch=switch")
            // The running daemon reloads the new outlet on its NOTIFY (within a second).
            try await Task.sleep(for: .milliseconds(1_500))
            try await publish("\(prefix)/status", "online", retain: true)
            try await publish("\(prefix)/switch/switch/state", "ON", retain: true)
            // One CSE7766 update cycle of the Athom plug, one value per topic.
            for (objectID, value) in [
                ("current", "0.42"), ("voltage", "229.8"), ("power", "96.1"), ("energy", "0.012"),
                ("apparent_power", "97.0"), ("power_factor", "0.99"), ("total_energy", "1.234"),
                ("total_daily_energy", "0.345"), ("wifi_signal_db", "-61"),
            ] {
                try await publish("\(prefix)/sensor/\(objectID)/state", value)
            }
            // The S31: its cycle, its switch, its status.
            try await publish("\(s31)/status", "online")
            try await publish("\(s31)/switch/sonoff_s31_relay/state", "ON")
            for (objectID, value) in [
                ("sonoff_s31_current", "0.10"), ("sonoff_s31_voltage", "121.30"), ("sonoff_s31_power", "12.10"),
                ("sonoff_s31_energy", "250.00"), ("sonoff_s31_daily_energy", "30.00"),
                ("sonoff_s31_power_factor", "nan"),
            ] {
                try await publish("\(s31)/sensor/\(objectID)/state", value)
            }
            try await Harness.waitUntil(timeout: 10, "two samples, states") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 2
                    && Harness.scalar(
                        url, "SELECT string_agg(reported_state || ':' || online, ',' ORDER BY code) FROM devices")
                        == "on:true,on:true"
            }
            #expect(
                try Harness.scalar(
                    url,
                    """
                    SELECT string_agg(s.power_watts || ':' || s.voltage_volts || ':' || s.current_amperes || ':'
                                      || coalesce(s.power_factor::text, '-') || ':' || s.energy_wh, ',' ORDER BY d.code)
                    FROM samples s JOIN devices d ON d.id = s.device_id
                    """) == "96.1:229.8:0.42:0.99:1234,12.1:121.3:0.1:-:250")
            #expect(service.metrics.snapshot().ignored[.noMeter, default: 0] >= 4)
            _ = try Harness.scalar(url, "SELECT request_switch('\(node)', false, 'test')")
            _ = try Harness.scalar(url, "SELECT request_switch('s31', false, 'test')")
            try await Harness.waitUntil(timeout: 10, "commands confirmed") {
                try Harness.scalar(url, "SELECT string_agg(status, ',') FROM commands") == "confirmed,confirmed"
            }
            // The S31 announces itself after all (long keys): once its configs settle, its registered outlet has
            // what they say of its sensors.
            for (objectID, deviceClass, unit, stateClass) in [
                ("sonoff_s31_power", "power", "W", "measurement"),
                ("sonoff_s31_energy", "energy", "Wh", "total_increasing"),
                ("sonoff_s31_daily_energy", "energy", "Wh", "total_increasing"),
            ] {
                try await publish(
                    "\(discovery)/sensor/sonoff_s31/\(objectID)/config",
                    #"{"device_class":"\#(deviceClass)","unit_of_measurement":"\#(unit)","state_class":"\#(stateClass)","name":"\#(objectID)","state_topic":"\#(s31)/sensor/\#(objectID)/state","unique_id":"ESPsensor\#(objectID)","device":{"identifiers":"a4cf12c0ffee","name":"sonoff_s31","sw_version":"2024.4.0 (config hash 0x1a2b3c4d)"}}"#
                )
            }
            try await Harness.waitUntil(timeout: 10, "the S31's discovered sensors") {
                try Harness.scalar(url, "SELECT discovered_sensor_map FROM devices WHERE code = 's31'")
                    == "power=sonoff_s31_power,energy=sonoff_s31_energy"
            }
            for (component, objectID, _) in configs {
                try await publish("\(discovery)/\(component)/\(node)/\(objectID)/config", "", retain: true)
            }
            try await publish("\(prefix)/status", "", retain: true)
            try await publish("\(prefix)/switch/switch/state", "", retain: true)
        }
        #expect(athomNode.received.value == ["OFF"] && s31Node.received.value == ["OFF"])
        #expect(try Harness.scalar(url, "SELECT string_agg(reported_state, ',') FROM devices") == "off,off")
        #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
    }
}

/// `Zigbee2MQTTProtocolTests.bridgeDevices` with one more plug, for the end-to-end test (the test target of the
/// table tests is another module).
enum Zigbee2MQTTProtocolTestsPayload {
    static let bridgeDevices = """
        [{"ieee_address":"0x00124b0024c1a2b3","type":"Coordinator","friendly_name":"Coordinator","definition":null},
         {"ieee_address":"0xa4c1381234567891","type":"Router","friendly_name":"kitchen/kettle2","disabled":false,"definition":{"model":"TS011F_plug_1","vendor":"Tuya","exposes":[{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7}]},{"type":"numeric","name":"power","property":"power","access":5,"unit":"W"},{"type":"numeric","name":"energy","property":"energy","access":5,"unit":"kWh"}]}},
         {"ieee_address":"0xa4c1381234567890","type":"Router","friendly_name":"kitchen/kettle","disabled":false,"definition":{"model":"TS011F_plug_1","vendor":"Tuya","exposes":[{"type":"numeric","name":"power","property":"power","access":5,"unit":"W"}]}},
         {"ieee_address":"0x00158d0001234567","type":"EndDevice","friendly_name":"hall/temperature","definition":{"model":"WSDCGQ11LM","vendor":"Aqara","exposes":[{"type":"numeric","name":"temperature","property":"temperature","access":1}]}}]
        """
}

/// The Athom Smart Plug V2's discovery (athom-smart-plug-v2.yaml, v2.0.8, ESPHome 2024.6.0), under a test prefix.
enum ESPHomePayloads {
    static func athomConfigs(prefix: String) -> [(String, String, String)] {
        func config(_ component: String, _ objectID: String, _ name: String, _ extra: String) -> (
            String, String, String
        ) {
            let topics =
                component == "switch"
                ? #""stat_t":"\#(prefix)/switch/\#(objectID)/state","cmd_t":"\#(prefix)/switch/\#(objectID)/command","#
                : #""stat_t":"\#(prefix)/sensor/\#(objectID)/state","#
            return (
                component, objectID,
                #"{\#(extra)"name":"\#(name)",\#(topics)"avty_t":"\#(prefix)/status","uniq_id":"ESP\#(component)\#(objectID)","dev":{"ids":"a4cf12abcdef","name":"Smart Plug V2","sw":"v2.0.8 (ESPHome 2024.6.0)","mdl":"Athom Plug V2","mf":"China Athom Technology"}}"#
            )
        }
        return [
            config("sensor", "power", "Power", #""dev_cla":"power","unit_of_meas":"W","stat_cla":"measurement","#),
            config(
                "sensor", "voltage", "Voltage", #""dev_cla":"voltage","unit_of_meas":"V","stat_cla":"measurement","#),
            config(
                "sensor", "current", "Current", #""dev_cla":"current","unit_of_meas":"A","stat_cla":"measurement","#),
            config(
                "sensor", "energy", "Energy", #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#
            ),
            config(
                "sensor", "total_energy", "Total Energy",
                #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#),
            config(
                "sensor", "total_daily_energy", "Total Daily Energy",
                #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#),
            config("sensor", "wifi_signal_db", "WiFi Signal dB", #""dev_cla":"signal_strength","unit_of_meas":"dBm","#),
            config("switch", "switch", "Switch", ""),
        ]
    }
}
