import Foundation
import MQTT
import Postgres
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Storage
@testable import Telemetry

/// The retained Home Assistant discovery configs, read back from a real mosquitto while outlets are registered,
/// disabled, enabled and removed.
@Suite(.serialized) struct HomeAssistantDiscoveryTests {
    /// The latest payload of every topic under a filter, and whether the broker sent it as retained.
    final class Watcher: Sendable {
        let client: MQTTClient
        let latest = Locked<[String: (payload: String, retained: Bool)]>([:])

        init(url: String, filter: String) throws {
            let latest = self.latest
            var configuration = try MQTTConfiguration(url: url, clientID: TestStack.uniqueName("ha-"))
            configuration.cleanStart = true
            configuration.sessionExpiryInterval = 0
            client = try MQTTClient(configuration: configuration) { message in
                latest.withValue {
                    $0[message.topic] = (String(decoding: message.payload, as: UTF8.self), message.retain)
                }
            }
            client.setSubscriptions([(filter: filter, qos: 1)])
            try client.start()
        }

        func payload(_ topic: String) -> String? { latest.value[topic]?.payload }
    }

    static func object(_ text: String?) throws -> [String: Any] {
        let text = try #require(text)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func announcesEnabledOutletsAndClearsDisabledAndRemovedOnes() async throws {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        let haPrefix = "\(TestStack.uniqueName("ha"))/homeassistant"
        configuration.homeAssistant.discovery = true
        configuration.homeAssistant.prefix = haPrefix
        let prefix = configuration.mqtt.topicPrefix
        let tasmotaTopic = TestStack.uniqueName("taz")
        let shellyID = TestStack.uniqueName("shellyplug-s-")
        do {
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            let store = DeviceStore(connection: connection)
            _ = try store.add(.init(code: "kitchen-1", name: "Kitchen fridge"))
            _ = try store.add(.init(code: "hall-2", enabled: false))
            _ = try store.add(.init(code: "taz-3", outletProtocol: .tasmota, protocolTopic: tasmotaTopic))
            _ = try store.add(
                .init(code: "shelly-4", name: "Lamp", outletProtocol: .shellyGen1, protocolTopic: shellyID, channel: 0))
        }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: haPrefix, topicPrefix: prefix, version: "x")
        let kitchen = discovery.topics(code: try #require(DeviceCode("kitchen-1")))
        let hall = discovery.topics(code: try #require(DeviceCode("hall-2")))
        let tasmota = discovery.topics(code: try #require(DeviceCode("taz-3")))
        let shelly = discovery.topics(code: try #require(DeviceCode("shelly-4")))
        // An outlet announced by an earlier run and removed while outletd was stopped.
        let gone = try discovery.announce(code: try #require(DeviceCode("gone-9")), name: "")
        do {
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            for message in gone {
                try await publisher.publishAcknowledged(message.topic, payload: message.payload, retain: true)
            }
        }

        try await Harness.withService(configuration) { _ in
            let watcher = try Watcher(url: configuration.mqtt.url, filter: "\(haPrefix)/#")
            defer { watcher.client.stop() }
            try await Harness.waitUntil(timeout: 10, "the five configs of kitchen-1") {
                kitchen.allSatisfy { watcher.payload($0)?.isEmpty == false }
            }
            // A subscriber that comes later gets them from the broker: retained.
            let later = try Watcher(url: configuration.mqtt.url, filter: "\(haPrefix)/#")
            defer { later.client.stop() }
            try await Harness.waitUntil(timeout: 10, "the retained configs of kitchen-1") {
                kitchen.allSatisfy { later.payload($0)?.isEmpty == false }
            }
            #expect(kitchen.allSatisfy { later.latest.value[$0]?.retained == true })
            try await Harness.waitUntil(timeout: 10, "the configs of the removed gone-9 cleared") {
                gone.allSatisfy { watcher.payload($0.topic) == nil || watcher.payload($0.topic) == "" }
            }
            #expect(kitchen[0] == "\(haPrefix)/switch/outletd/kitchen-1/config")

            let commandTopic = try Self.checkConfigs(watcher, kitchen, prefix: prefix)
            // A disabled outlet is not announced.
            #expect(hall.allSatisfy { watcher.payload($0)?.isEmpty ?? true })

            // Tasmota and Shelly outlets are announced with their firmware's own topics; the Gen1 plug has no
            // voltage or current sensors.
            try await Harness.waitUntil(timeout: 10, "the configs of taz-3 and shelly-4") {
                tasmota.allSatisfy { watcher.payload($0)?.isEmpty == false }
                    && [0, 1, 4].allSatisfy { watcher.payload(shelly[$0])?.isEmpty == false }
            }
            #expect([2, 3].allSatisfy { watcher.payload(shelly[$0])?.isEmpty ?? true })
            try Self.checkForeignConfigs(
                watcher, tasmota: tasmota, shelly: shelly, prefix: prefix, tasmotaTopic: tasmotaTopic,
                shellyID: shellyID)

            // Home Assistant's switch publishes to the command topic: a command with outletd's lifecycle.
            let results = try Watcher(url: configuration.mqtt.url, filter: "\(prefix)/kitchen-1/set/result")
            defer { results.client.stop() }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged(
                commandTopic, payload: Array("on".utf8))
            try await Harness.waitUntil(timeout: 10, "a result of the switch request") {
                results.payload("\(prefix)/kitchen-1/set/result") != nil
            }
            try Self.checkResult(results.payload("\(prefix)/kitchen-1/set/result"))

            // The same `set` switches the Tasmota outlet: outletd sends Tasmota's own command.
            let tasmotaCommands = try Watcher(url: configuration.mqtt.url, filter: "cmnd/\(tasmotaTopic)/+")
            defer { tasmotaCommands.client.stop() }
            try await publisher.publishAcknowledged(
                "tele/\(tasmotaTopic)/LWT", payload: Array("Online".utf8), retain: true)
            try await publisher.publishAcknowledged("\(prefix)/taz-3/set", payload: Array("on".utf8))
            try await Harness.waitUntil(timeout: 10, "the Tasmota command") {
                tasmotaCommands.payload("cmnd/\(tasmotaTopic)/POWER1") == "ON"
            }
            try await publisher.publishAcknowledged("tele/\(tasmotaTopic)/LWT", payload: [], retain: true)

            // Disabled: every config cleared (an empty retained message), and a new subscriber gets none.
            try Self.store(url) {
                try $0.setEnabled("kitchen-1", false)
                try $0.setEnabled("taz-3", false)
                _ = try $0.remove("shelly-4")
            }
            try await Harness.waitUntil(timeout: 10, "kitchen-1, taz-3 and shelly-4 cleared") {
                (kitchen + tasmota).allSatisfy { watcher.payload($0) == "" }
                    && shelly.allSatisfy { watcher.payload($0) == "" || watcher.payload($0) == nil }
            }
            let late = try Watcher(url: configuration.mqtt.url, filter: "\(haPrefix)/#")
            defer { late.client.stop() }
            try await Task.sleep(for: .seconds(1))
            #expect(
                late.latest.value.keys.allSatisfy { topic in
                    ["kitchen-1", "gone-9", "taz-3", "shelly-4"].allSatisfy { !topic.contains($0) }
                })

            // Enabled again: announced again; removed: cleared.
            try Self.store(url) { try $0.setEnabled("kitchen-1", true) }
            try await Harness.waitUntil(timeout: 10, "kitchen-1 announced again") {
                kitchen.allSatisfy { watcher.payload($0)?.isEmpty == false }
            }
            try Self.store(url) { _ = try $0.remove("kitchen-1") }
            try await Harness.waitUntil(timeout: 10, "kitchen-1 cleared after removal") {
                kitchen.allSatisfy { watcher.payload($0) == "" }
            }
        }
    }

    /// Checks kitchen-1's switch and sensor configs; returns the switch's command topic.
    static func checkConfigs(_ watcher: Watcher, _ kitchen: [String], prefix: String) throws -> String {
        let switchConfig = try object(watcher.payload(kitchen[0]))
        #expect(switchConfig["command_topic"] as? String == "\(prefix)/kitchen-1/set")
        #expect(switchConfig["state_topic"] as? String == "\(prefix)/kitchen-1/state")
        #expect(switchConfig["availability_topic"] as? String == "\(prefix)/kitchen-1/availability")
        #expect(switchConfig["unique_id"] as? String == "outletd_kitchen-1_switch")
        let device = try #require(switchConfig["device"] as? [String: Any])
        #expect(device["name"] as? String == "Kitchen fridge")
        #expect(device["identifiers"] as? [String] == ["outletd_kitchen-1"])

        var units: [String: String] = [:]
        for topic in kitchen.dropFirst() {
            let sensor = try object(watcher.payload(topic))
            #expect(sensor["state_topic"] as? String == "\(prefix)/kitchen-1/telemetry")
            #expect((sensor["device"] as? [String: Any])?["identifiers"] as? [String] == ["outletd_kitchen-1"])
            units[sensor["device_class"] as? String ?? "?"] = sensor["unit_of_measurement"] as? String
        }
        #expect(units == ["power": "W", "voltage": "V", "current": "A", "energy": "Wh"])
        return try #require(switchConfig["command_topic"] as? String)
    }

    /// Checks the Tasmota and Shelly Gen1 outlets' configs: outletd's `set`, the firmware's state and sensors.
    static func checkForeignConfigs(
        _ watcher: Watcher, tasmota: [String], shelly: [String], prefix: String, tasmotaTopic: String,
        shellyID: String
    ) throws {
        let tasmotaSwitch = try object(watcher.payload(tasmota[0]))
        #expect(tasmotaSwitch["command_topic"] as? String == "\(prefix)/taz-3/set")
        #expect(tasmotaSwitch["state_topic"] as? String == "stat/\(tasmotaTopic)/POWER")
        #expect(tasmotaSwitch["state_on"] as? String == "ON")
        #expect(tasmotaSwitch["availability_topic"] as? String == "tele/\(tasmotaTopic)/LWT")
        #expect(tasmotaSwitch["payload_available"] as? String == "Online")
        #expect((tasmotaSwitch["device"] as? [String: Any])?["model"] as? String == "Tasmota")
        for topic in tasmota.dropFirst() {
            #expect(try object(watcher.payload(topic))["state_topic"] as? String == "tele/\(tasmotaTopic)/SENSOR")
        }
        let shellySwitch = try object(watcher.payload(shelly[0]))
        #expect(shellySwitch["command_topic"] as? String == "\(prefix)/shelly-4/set")
        #expect(shellySwitch["state_topic"] as? String == "shellies/\(shellyID)/relay/0")
        #expect(shellySwitch["availability_topic"] as? String == "shellies/\(shellyID)/online")
        #expect(shellySwitch["payload_available"] as? String == "true")
        #expect((shellySwitch["device"] as? [String: Any])?["name"] as? String == "Lamp")
        #expect(
            try object(watcher.payload(shelly[1]))["state_topic"] as? String == "shellies/\(shellyID)/relay/0/power")
        let energy = try object(watcher.payload(shelly[4]))
        #expect(energy["state_topic"] as? String == "shellies/\(shellyID)/relay/0/energy")
        #expect(energy["unit_of_measurement"] as? String == "Wh")
    }

    /// accepted, then sent (no outlet answers here): a command with an id, never a rejection.
    static func checkResult(_ payload: String?) throws {
        let result = try object(payload)
        #expect(["accepted", "sent", "timed_out"].contains(result["result"] as? String ?? ""), "\(result)")
        #expect(result["command_id"] is Int)
        #expect(result["state"] as? String == "on")
    }

    static func store(_ url: String, _ body: (DeviceStore) throws -> Void) throws {
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try body(DeviceStore(connection: connection))
    }

    @Test func configsAreValidJSONWithRoundedSensors() throws {
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", topicPrefix: "outlets", version: "1.0")
        let messages = try discovery.announce(code: try #require(DeviceCode("plug_7")), name: "")
        #expect(messages.count == 5)
        let precision = try messages.dropFirst().map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any])
        }.map { ($0["unit_of_measurement"] as? String ?? "", $0["suggested_display_precision"] as? Int ?? -1) }
        #expect(precision.map(\.0) == ["W", "V", "A", "Wh"])
        #expect(precision.map(\.1) == [1, 1, 2, 0])
        let switchConfig = try #require(
            try JSONSerialization.jsonObject(with: Data(messages[0].payload)) as? [String: Any])
        #expect((switchConfig["device"] as? [String: Any])?["name"] as? String == "plug_7", "the code when unnamed")
        #expect((switchConfig["origin"] as? [String: Any])?["sw_version"] as? String == "1.0")
        #expect(discovery.clear(code: try #require(DeviceCode("plug_7"))).allSatisfy { $0.payload.isEmpty })
        // Each config topic names its outlet; other topics name none.
        #expect(messages.allSatisfy { discovery.code(ofTopic: $0.topic)?.rawValue == "plug_7" })
        #expect(discovery.code(ofTopic: "homeassistant/sensor/outletd/plug_7_humidity/config") == nil)
        #expect(discovery.code(ofTopic: "homeassistant/switch/other/plug_7/config") == nil)
        #expect(discovery.code(ofTopic: "elsewhere/switch/outletd/plug_7/config") == nil)
    }

    /// One outlet of one protocol and what its configs must say.
    struct ProtocolCase: Sendable, CustomTestStringConvertible {
        var outlet: HomeAssistantDiscovery.Outlet
        var state: (topic: String, on: String, off: String, template: String?)
        var availability: (topic: String, online: String, offline: String)
        /// State topic and template per sensor key; a key left out is not published (empty retained config).
        var sensors: [String: (topic: String, template: String)]
        var model: String
        var testDescription: String { "\(outlet.outletProtocol.rawValue) channel \(outlet.channel)" }
    }

    static let tasmotaOne =
        "{% set e = value_json.ENERGY if value_json.ENERGY is defined else {} %}"
        + "{% set per_relay = e.Power is sequence and e.Power is not string %}{% set x = e.KEY %}"
        + "{% if x is sequence and x is not string %}{% set x = x[INDEX] if x | length >= CHANNEL else none %}"
        + "{% elif not (MINE) %}{% set x = none %}{% endif %}{{ none if x is not defined or x is none else (x | float"

    static func tasmota(_ key: String, channel: Int, mine: String, factor: String = "") -> String {
        tasmotaOne.replacingOccurrences(of: "KEY", with: key).replacingOccurrences(of: "INDEX", with: "\(channel - 1)")
            .replacingOccurrences(of: "CHANNEL", with: "\(channel)").replacingOccurrences(of: "MINE", with: mine)
            + "\(factor)) }}"
    }

    static let protocolCases: [ProtocolCase] = [
        ProtocolCase(
            outlet: .init(name: "Desk"),
            state: ("outlets/plug_7/state", "on", "off", "{{ value_json.state if value_json is defined else value }}"),
            availability: ("outlets/plug_7/availability", "online", "offline"),
            sensors: [
                "power": (
                    "outlets/plug_7/telemetry",
                    "{{ value_json.power if value_json.power is defined else (value_json.voltage * value_json.current) }}"
                ),
                "voltage": ("outlets/plug_7/telemetry", "{{ value_json.voltage }}"),
                "current": ("outlets/plug_7/telemetry", "{{ value_json.current }}"),
                "energy": ("outlets/plug_7/telemetry", "{{ value_json.energy_wh }}"),
            ], model: "smart outlet (outletd native protocol)"),
        // One relay: `POWER`, every scalar is this relay's.
        ProtocolCase(
            outlet: .init(name: "Desk", outletProtocol: .tasmota, deviceTopic: "desk", channel: 1, relays: [1]),
            state: ("stat/desk/POWER", "ON", "OFF", nil), availability: ("tele/desk/LWT", "Online", "Offline"),
            sensors: [
                "power": ("tele/desk/SENSOR", tasmota("Power", channel: 1, mine: "true")),
                "voltage": (
                    "tele/desk/SENSOR", tasmota("Voltage", channel: 1, mine: "not per_relay or e.Power | length >= 1")
                ),
                "current": ("tele/desk/SENSOR", tasmota("Current", channel: 1, mine: "true")),
                "energy": ("tele/desk/SENSOR", tasmota("Total", channel: 1, mine: "true", factor: " * 1000")),
            ], model: "Tasmota"),
        // Relay 2 of two, a custom FullTopic and ON/OFF words: `POWER2`; a scalar (one meter) is relay 1's.
        ProtocolCase(
            outlet: .init(
                name: "", outletProtocol: .tasmota, deviceTopic: "strip", channel: 2,
                fullTopic: "home/%topic%/%prefix%/", stateWords: .init(on: "An", off: "Aus"), relays: [1, 2]),
            state: ("home/strip/stat/POWER2", "An", "Aus", nil),
            availability: ("home/strip/tele/LWT", "Online", "Offline"),
            sensors: [
                "power": ("home/strip/tele/SENSOR", tasmota("Power", channel: 2, mine: "false")),
                "voltage": (
                    "home/strip/tele/SENSOR",
                    tasmota("Voltage", channel: 2, mine: "per_relay and e.Power | length >= 2")
                ),
                "current": ("home/strip/tele/SENSOR", tasmota("Current", channel: 2, mine: "false")),
                "energy": ("home/strip/tele/SENSOR", tasmota("Total", channel: 2, mine: "false", factor: " * 1000")),
            ], model: "Tasmota"),
        // Relay 1 of two: `POWER1`; a scalar is its own unless `Power` is an array (then not attributed).
        ProtocolCase(
            outlet: .init(name: "", outletProtocol: .tasmota, deviceTopic: "strip", channel: 1, relays: [1, 2]),
            state: ("stat/strip/POWER1", "ON", "OFF", nil), availability: ("tele/strip/LWT", "Online", "Offline"),
            sensors: [
                "power": ("tele/strip/SENSOR", tasmota("Power", channel: 1, mine: "not per_relay")),
                "voltage": (
                    "tele/strip/SENSOR", tasmota("Voltage", channel: 1, mine: "not per_relay or e.Power | length >= 1")
                ),
                "current": ("tele/strip/SENSOR", tasmota("Current", channel: 1, mine: "not per_relay")),
                "energy": ("tele/strip/SENSOR", tasmota("Total", channel: 1, mine: "not per_relay", factor: " * 1000")),
            ], model: "Tasmota"),
        ProtocolCase(
            outlet: .init(name: "Lamp", outletProtocol: .shellyGen1, deviceTopic: "shellyplug-s-C45BBE", channel: 0),
            state: (
                "shellies/shellyplug-s-C45BBE/relay/0", "on", "off", "{{ 'off' if value == 'overpower' else value }}"
            ),
            availability: ("shellies/shellyplug-s-C45BBE/online", "true", "false"),
            sensors: [
                "power": ("shellies/shellyplug-s-C45BBE/relay/0/power", "{{ value }}"),
                "energy": ("shellies/shellyplug-s-C45BBE/relay/0/energy", "{{ (value | float / 60) | round(2) }}"),
            ], model: "Shelly Gen1"),
        ProtocolCase(
            outlet: .init(
                name: "Heater", outletProtocol: .shellyGen2, deviceTopic: "home/shellyplus1pm-a8032ab", channel: 1),
            state: (
                "home/shellyplus1pm-a8032ab/status/switch:1", "on", "off", "{{ 'on' if value_json.output else 'off' }}"
            ),
            availability: ("home/shellyplus1pm-a8032ab/online", "true", "false"),
            sensors: [
                "power": ("home/shellyplus1pm-a8032ab/status/switch:1", "{{ value_json.apower }}"),
                "voltage": ("home/shellyplus1pm-a8032ab/status/switch:1", "{{ value_json.voltage }}"),
                "current": ("home/shellyplus1pm-a8032ab/status/switch:1", "{{ value_json.current }}"),
                "energy": ("home/shellyplus1pm-a8032ab/status/switch:1", "{{ value_json.aenergy.total }}"),
            ], model: "Shelly Gen2/3"),
    ]

    /// Every protocol: the switch commands through outletd's own `set`, its state, the sensors and the
    /// availability where the firmware publishes them; a sensor the firmware lacks is an empty config.
    @Test(arguments: protocolCases) func configsFollowEachFirmwaresTopics(_ expected: ProtocolCase) throws {
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", topicPrefix: "outlets", version: "1.0")
        let code = try #require(DeviceCode("plug_7"))
        let messages = try discovery.announce(code: code, outlet: expected.outlet)
        #expect(messages.map(\.topic) == discovery.topics(code: code))
        #expect(messages.allSatisfy { discovery.code(ofTopic: $0.topic) == code })
        let switchConfig = try Self.object(String(decoding: messages[0].payload, as: UTF8.self))
        #expect(switchConfig["command_topic"] as? String == "outlets/plug_7/set")
        #expect(switchConfig["payload_on"] as? String == "on")
        #expect(switchConfig["payload_off"] as? String == "off")
        #expect(switchConfig["state_topic"] as? String == expected.state.topic)
        #expect(switchConfig["state_on"] as? String == expected.state.on)
        #expect(switchConfig["state_off"] as? String == expected.state.off)
        #expect(switchConfig["value_template"] as? String == expected.state.template)
        let device = try #require(switchConfig["device"] as? [String: Any])
        #expect(device["model"] as? String == expected.model)
        #expect(device["name"] as? String == (expected.outlet.name.isEmpty ? "plug_7" : expected.outlet.name))
        for (message, key) in zip(messages.dropFirst(), ["power", "voltage", "current", "energy"]) {
            guard let sensor = expected.sensors[key] else {
                #expect(message.payload.isEmpty, "\(key) is not published by this firmware")
                continue
            }
            let config = try Self.object(String(decoding: message.payload, as: UTF8.self))
            #expect(config["state_topic"] as? String == sensor.topic, "\(key)")
            #expect(config["value_template"] as? String == sensor.template, "\(key)")
            #expect(
                config["unit_of_measurement"] as? String
                    == ["power": "W", "voltage": "V", "current": "A", "energy": "Wh"][key])
            #expect(config["unique_id"] as? String == "outletd_plug_7_\(key)")
        }
        for config in try messages.filter({ !$0.payload.isEmpty }).map({
            try Self.object(String(decoding: $0.payload, as: UTF8.self))
        }) {
            #expect(config["availability_topic"] as? String == expected.availability.topic)
            #expect(config["payload_available"] as? String == expected.availability.online)
            #expect(config["payload_not_available"] as? String == expected.availability.offline)
        }
        // Clearing empties every topic any protocol could have used for the code.
        #expect(discovery.clear(code: code).map(\.topic) == discovery.topics(code: code))
        #expect(discovery.clear(code: code).allSatisfy { $0.payload.isEmpty })
    }

    /// The configured Tasmota prefixes and Shelly Gen1 prefix are used, like the router's.
    @Test func configuredPrefixesAreUsed() throws {
        let discovery = HomeAssistantDiscovery(
            discoveryPrefix: "ha", topicPrefix: "site/outlets/", version: "1",
            tasmotaPrefixes: .init(command: "c", status: "s", telemetry: "t"), shellyGen1Prefix: "gen1")
        let code = try #require(DeviceCode("a"))
        let tasmota = try discovery.announce(
            code: code, outlet: .init(name: "", outletProtocol: .tasmota, deviceTopic: "x", channel: 3))
        let switchConfig = try Self.object(String(decoding: tasmota[0].payload, as: UTF8.self))
        #expect(switchConfig["state_topic"] as? String == "s/x/POWER3")
        #expect(switchConfig["availability_topic"] as? String == "t/x/LWT")
        #expect(switchConfig["command_topic"] as? String == "site/outlets/a/set")
        let gen1 = try discovery.announce(
            code: code, outlet: .init(name: "", outletProtocol: .shellyGen1, deviceTopic: "y", channel: 1))
        #expect(
            try Self.object(String(decoding: gen1[0].payload, as: UTF8.self))["state_topic"] as? String
                == "gen1/y/relay/1")
        #expect(tasmota[0].topic == "ha/switch/outletd/a/config")
    }

    /// Whether python3 with jinja2 (Home Assistant's template engine) is here to render the templates.
    static let jinjaAvailable: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import jinja2"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// Renders each template over its MQTT payload (`value`, and `value_json` when it is JSON) with jinja2.
    static func render(_ items: [(template: String, payload: String)]) throws -> [String] {
        let script = """
            import jinja2, json, sys
            env = jinja2.Environment()
            out = []
            for item in json.load(sys.stdin):
                variables = {"value": item["payload"]}
                try:
                    variables["value_json"] = json.loads(item["payload"])
                except ValueError:
                    pass  # like Home Assistant: value_json is undefined
                out.append(env.from_string(item["template"]).render(**variables))
            json.dump(out, sys.stdout)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let request = items.map { ["template": $0.template, "payload": $0.payload] }
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String])
    }

    /// The Tasmota templates, rendered by jinja2, give what outletd's own decoder stores for each relay of a
    /// `SENSOR` (one relay, several relays with one meter, a meter per relay, no meter).
    @Test(.enabled(if: jinjaAvailable)) func tasmotaTemplatesReadWhatOutletdStores() throws {
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", topicPrefix: "outlets", version: "1")
        let code = try #require(DeviceCode("t"))
        let payloads = [
            #"{"Time":"2026-11-25T10:00:00","ENERGY":{"Total":1.234,"Power":20,"Voltage":230,"Current":0.1}}"#,
            #"{"ENERGY":{"Total":3.5,"Power":[10,20],"Voltage":231,"Current":[0.05,0.1]}}"#,
            #"{"ENERGY":{"Total":[1.5,2.5],"Power":[" 10",20],"Voltage":[229,231],"Current":0.3}}"#,
            #"{"ENERGY":{"Total":2,"Power":40,"Voltage":232,"Current":0.2}}"#,
            #"{"AM2301":{"Temperature":21.5,"Humidity":40}}"#,
        ]
        let limits = ValidationLimits()
        for relays in [[1], [1, 2], [2, 3]] {
            for channel in relays {
                let outlet = HomeAssistantDiscovery.Outlet(
                    name: "", outletProtocol: .tasmota, deviceTopic: "t", channel: channel, relays: relays)
                let templates = try discovery.announce(code: code, outlet: outlet).dropFirst().map {
                    try #require(
                        try Self.object(String(decoding: $0.payload, as: UTF8.self))["value_template"] as? String)
                }
                let rendered = try Self.render(payloads.flatMap { payload in templates.map { ($0, payload) } })
                for (index, payload) in payloads.enumerated() {
                    let decoded = TasmotaProtocol.decodeSensor(
                        Array(payload.utf8), channel: channel, channelCount: relays.count, meterChannel: relays.min(),
                        receivedAt: Date(), limits: limits)
                    let reading = decoded.readings.first
                    let stored: [Double?] = [
                        reading?.powerWatts, reading?.voltageVolts, reading?.currentAmperes, reading?.energyWattHours,
                    ]
                    let shown = rendered[(index * 4)..<(index * 4 + 4)].map { Double($0) }
                    #expect(
                        shown == stored,
                        "relay \(channel) of \(relays), \(payload): \(Array(rendered[(index * 4)..<(index * 4 + 4)]))")
                }
            }
        }
    }

    /// The Shelly and native templates, rendered by jinja2 over each firmware's payloads.
    @Test(.enabled(if: jinjaAvailable)) func shellyAndNativeTemplatesRender() throws {
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", topicPrefix: "outlets", version: "1")
        let code = try #require(DeviceCode("s"))
        func templates(_ outlet: HomeAssistantDiscovery.Outlet) throws -> [String?] {
            try discovery.announce(code: code, outlet: outlet).map {
                $0.payload.isEmpty
                    ? nil : try Self.object(String(decoding: $0.payload, as: UTF8.self))["value_template"] as? String
            }
        }
        let gen1 = try templates(.init(name: "", outletProtocol: .shellyGen1, deviceTopic: "p", channel: 0))
        let gen2 = try templates(.init(name: "", outletProtocol: .shellyGen2, deviceTopic: "p", channel: 0))
        let native = try templates(.init(name: ""))
        #expect(gen1[2] == nil && gen1[3] == nil, "a Gen1 plug has no voltage or current")
        let status =
            #"{"id":0,"source":"init","output":true,"apower":8.9,"voltage":237.5,"current":0.068,"aenergy":{"total":6.532,"by_minute":[45.3,48.2,50.1],"minute_ts":1654511700},"temperature":{"tC":23.5}}"#
        let cases: [(String?, String, String)] = [
            (gen1[0], "on", "on"), (gen1[0], "off", "off"), (gen1[0], "overpower", "off"),
            (gen1[1], "20.58", "20.58"), (gen1[4], "600", "10.0"), (gen1[4], "50", "0.83"),
            (gen2[0], status, "on"), (gen2[0], #"{"id":0,"output":false}"#, "off"), (gen2[1], status, "8.9"),
            (gen2[2], status, "237.5"), (gen2[3], status, "0.068"), (gen2[4], status, "6.532"),
            (native[0], "on", "on"), (native[0], #"{"state":"off"}"#, "off"),
            (native[1], #"{"voltage":230,"current":0.5}"#, "115.0"), (native[1], #"{"power":12.5}"#, "12.5"),
            (native[4], #"{"power":1,"energy_wh":42}"#, "42"),
        ]
        let rendered = try Self.render(cases.map { (try #require($0.0), $0.1) })
        #expect(rendered == cases.map(\.2))
    }
}
