import Foundation
import MQTT
import Observability
import Postgres
import Protocols
import ServiceTestSupport
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

            // Renamed as the owners' app and the demo rename (an UPDATE of the name): announced again at once,
            // not at the next full load (registry.refresh_interval_seconds, 300 s here).
            _ = try Harness.scalar(url, "UPDATE devices SET name = 'Pantry fridge' WHERE code = 'kitchen-1'")
            try await Harness.waitUntil(timeout: 5, "the new name in kitchen-1's configs") {
                try kitchen.allSatisfy {
                    (try Self.object(watcher.payload($0))["device"] as? [String: Any])?["name"] as? String
                        == "Pantry fridge"
                }
            }
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

            // Home Assistant's switch publishes its `payload_on` to the command topic: a command with outletd's
            // lifecycle whose row says Home Assistant asked.
            let results = try Watcher(url: configuration.mqtt.url, filter: "\(prefix)/kitchen-1/set/result")
            defer { results.client.stop() }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            let payloadOn = try #require(try Self.object(watcher.payload(kitchen[0]))["payload_on"] as? String)
            try await publisher.publishAcknowledged(commandTopic, payload: Array(payloadOn.utf8))
            try await Harness.waitUntil(timeout: 10, "a result of the switch request") {
                results.payload("\(prefix)/kitchen-1/set/result") != nil
            }
            try Self.checkResult(results.payload("\(prefix)/kitchen-1/set/result"))
            #expect(
                try Harness.scalar(
                    url,
                    """
                    SELECT c.source || ' ' || coalesce(c.requested_by, '-') || ' ' || c.requested FROM commands c
                    JOIN devices d ON d.id = c.device_id WHERE d.code = 'kitchen-1'
                    """) == "mqtt home-assistant on")

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

    /// Home Assistant shows what outletd stores. The configs outletd publishes on a real broker, their templates
    /// rendered by Home Assistant's template engine (scripts/ha-render-templates) over the last message each
    /// sensor's topic carried, equal the newest reading outletd stored of each outlet (native: one reading, then
    /// buffered readings in an array; Tasmota; Shelly Gen1 and Gen2), and Home Assistant logs no warning.
    @Test(.enabled(if: jinjaAvailable)) func homeAssistantShowsTheStoredReadings() async throws {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        let haPrefix = "\(TestStack.uniqueName("ha"))/homeassistant"
        configuration.homeAssistant.discovery = true
        configuration.homeAssistant.prefix = haPrefix
        let prefix = configuration.mqtt.topicPrefix
        let tasmotaTopic = TestStack.uniqueName("taz")
        let gen1ID = TestStack.uniqueName("shellyplug-s-")
        let gen2Prefix = TestStack.uniqueName("shellyplusplugs-")
        try Self.store(url) {
            _ = try $0.add(.init(code: "nat-1", name: "Desk"))
            _ = try $0.add(.init(code: "taz-1", outletProtocol: .tasmota, protocolTopic: tasmotaTopic, channel: 1))
            _ = try $0.add(.init(code: "gen1-1", outletProtocol: .shellyGen1, protocolTopic: gen1ID, channel: 0))
            _ = try $0.add(.init(code: "gen2-1", outletProtocol: .shellyGen2, protocolTopic: gen2Prefix, channel: 0))
        }
        let codes = ["nat-1", "taz-1", "gen1-1", "gen2-1"]
        let discovery = HomeAssistantDiscovery(discoveryPrefix: haPrefix, topicPrefix: prefix, version: "x")
        // What the outlets send, in order: a native reading, then three it buffered while offline (an array).
        let messages: [(topic: String, payload: String)] = [
            ("\(prefix)/nat-1/telemetry", #"{"voltage":229.5,"current":0.3,"energy_wh":1000}"#),
            (
                "\(prefix)/nat-1/telemetry",
                #"[{"voltage":230,"current":0.5,"power":100,"energy_wh":1500},{"voltage":231,"current":0.45},"#
                    + #"{"voltage":"231.5","current":0.4,"power":"92.4","energy_wh":1510.5}]"#
            ),
            (
                "tele/\(tasmotaTopic)/SENSOR",
                #"{"Time":"2026-11-25T10:00:00","ENERGY":{"Total":1.234,"Power":20,"Voltage":230,"Current":0.1}}"#
            ),
            ("shellies/\(gen1ID)/relay/0/energy", "600"),
            ("shellies/\(gen1ID)/relay/0/power", "20.58"),
            (
                "\(gen2Prefix)/status/switch:0",
                #"{"id":0,"source":"init","output":true,"apower":8.9,"voltage":237.5,"current":0.068,"#
                    + #""aenergy":{"total":6.532,"by_minute":[45.3,48.2,50.1],"minute_ts":1654511700}}"#
            ),
        ]
        try await Harness.withService(configuration) { _ in
            let watcher = try Watcher(url: configuration.mqtt.url, filter: "\(haPrefix)/#")
            defer { watcher.client.stop() }
            let topics = try codes.map { discovery.topics(code: try #require(DeviceCode($0))) }
            try await Harness.waitUntil(timeout: 10, "the configs of the four outlets") {
                topics.allSatisfy { outlet in [0, 1, 4].allSatisfy { watcher.payload(outlet[$0])?.isEmpty == false } }
            }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            for message in messages {
                try await publisher.publishAcknowledged(message.topic, payload: Array(message.payload.utf8))
            }
            try await Harness.waitUntil(timeout: 10, "the readings stored (native 4, the others 1 each)") {
                try Harness.scalar(
                    url,
                    """
                    SELECT string_agg(d.code || ':' || (SELECT count(*) FROM samples s WHERE s.device_id = d.id), ','
                        ORDER BY d.code) FROM devices d
                    """) == "gen1-1:1,gen2-1:1,nat-1:4,taz-1:1"
            }
            // Each sensor's template over the last message on its topic, against the newest stored reading.
            var items: [(template: String, payload: String)] = []
            var expected: [(what: String, stored: Double?)] = []
            for (code, outletTopics) in zip(codes, topics) {
                let columns = try Harness.scalar(
                    url,
                    """
                    SELECT concat_ws('|', coalesce(power_watts::text, '-'), coalesce(voltage_volts::text, '-'),
                        coalesce(current_amperes::text, '-'), coalesce(energy_wh::text, '-'))
                    FROM samples s JOIN devices d ON d.id = s.device_id WHERE d.code = '\(code)'
                    ORDER BY measured_at DESC LIMIT 1
                    """
                ).split(separator: "|").map { Double($0) }
                for (index, topic) in outletTopics.enumerated().dropFirst() {
                    guard let payload = watcher.payload(topic), !payload.isEmpty else { continue }
                    let config = try Self.object(payload)
                    let template = try #require(config["value_template"] as? String)
                    let stateTopic = try #require(config["state_topic"] as? String)
                    guard let message = messages.last(where: { $0.topic == stateTopic }) else { continue }
                    #expect(config["expire_after"] as? Int ?? 0 >= 90, "\(topic)")
                    items.append((template, message.payload))
                    expected.append(("\(code) \(config["name"] as? String ?? "?")", columns[index - 1]))
                }
            }
            #expect(items.count == 14, "4 sensors of native, Tasmota and Gen2, 2 of Gen1")
            // Home Assistant takes every config (device_class outlet, expire_after, the device's sw_version).
            let configs = try topics.joined().compactMap { topic -> (component: String, config: [String: Any])? in
                guard let payload = watcher.payload(topic), !payload.isEmpty else { return nil }
                return (topic.contains("/switch/") ? "switch" : "sensor", try Self.object(payload))
            }
            #expect(configs.count == 18)
            for (config, errors) in zip(configs, try Self.schemaErrors(configs)) {
                #expect(errors.isEmpty, "\(config.config["unique_id"] ?? "?"): \(errors)")
            }
            let rendered = try Self.renderAsHomeAssistant(items)
            for ((what, stored), result) in zip(expected, rendered) {
                #expect(result.warnings.isEmpty, "\(what): \(result.warnings)")
                let shown = try #require(result.value.flatMap { Double($0) }, "\(what) shows \(result.value ?? "nil")")
                // A Gen1 plug's energy is not stored with its power reading: Home Assistant shows the counter.
                let want = stored ?? (what == "gen1-1 Energy" ? 10 : .nan)
                #expect(abs(shown - want) <= 1e-9 * max(1, abs(want)), "\(what): shown \(shown), stored \(want)")
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
        #expect(device["sw_version"] as? String == BuildInfo.current.version, "outletd's version")
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
        /// The sensors' `expire_after`: three of the protocol's default report intervals.
        var expireAfterSeconds: Int {
            switch outlet.outletProtocol {
            case .tasmota: 900
            case .shellyGen1: 90
            default: 180
            }
        }
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
                    HomeAssistantDiscovery.nativeReading
                        + "{% set p = r.get('power') | float(none) %}{% set v = r.get('voltage') | float(none) %}"
                        + "{% set c = r.get('current') | float(none) %}{{ p if p is not none else "
                        + "('' if v is none or c is none else v * c) }}"
                ),
                "voltage": ("outlets/plug_7/telemetry", HomeAssistantDiscovery.nativeTemplate("voltage")),
                "current": ("outlets/plug_7/telemetry", HomeAssistantDiscovery.nativeTemplate("current")),
                "energy": ("outlets/plug_7/telemetry", HomeAssistantDiscovery.nativeTemplate("energy_wh")),
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
        // Home Assistant's switch names itself in the command it sends (the command row's requested_by).
        #expect(switchConfig["payload_on"] as? String == #"{"requested_by":"home-assistant","state":"on"}"#)
        #expect(switchConfig["payload_off"] as? String == #"{"requested_by":"home-assistant","state":"off"}"#)
        #expect(switchConfig["device_class"] as? String == "outlet")
        #expect(switchConfig["expire_after"] == nil, "a switch has no expiry; its availability says it")
        #expect(switchConfig["state_topic"] as? String == expected.state.topic)
        #expect(switchConfig["state_on"] as? String == expected.state.on)
        #expect(switchConfig["state_off"] as? String == expected.state.off)
        #expect(switchConfig["value_template"] as? String == expected.state.template)
        let device = try #require(switchConfig["device"] as? [String: Any])
        #expect(device["model"] as? String == expected.model)
        #expect(device["sw_version"] as? String == "1.0", "outletd's version")
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
            // Three report intervals of the protocol without a message: unavailable.
            #expect(config["expire_after"] as? Int == expected.expireAfterSeconds, "\(key)")
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
        process.arguments = [python, "-c", "import jinja2"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// The Python that renders: `OUTLETD_HA_PYTHON` (one with another Home Assistant release, or `python3` for
    /// jinja2 alone), else .build/ha-venv's, with Home Assistant installed (scripts/ha-venv), else python3.
    static let python: String = {
        if let chosen = ProcessInfo.processInfo.environment["OUTLETD_HA_PYTHON"], !chosen.isEmpty { return chosen }
        let venv = "\(TestStack.packageRoot)/.build/ha-venv/bin/python3"
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : "python3"
    }()

    /// One rendered template and what Home Assistant logged meanwhile (warnings, errors).
    struct Rendered: Equatable {
        var value: String?
        var warnings: [String]
    }

    /// Renders each template over its MQTT payload as Home Assistant does (`value`, and `value_json` when it is
    /// JSON): scripts/ha-render-templates, with Home Assistant's own template engine when .build/ha-venv has it,
    /// else jinja2 under its rules.
    static func renderAsHomeAssistant(_ items: [(template: String, payload: String)]) throws -> [Rendered] {
        let results = try runRenderer(items.map { ["template": $0.template, "payload": $0.payload] })
        return results.map { Rendered(value: $0["rendered"] as? String, warnings: $0["warnings"] as? [String] ?? []) }
    }

    /// What Home Assistant's MQTT discovery schema says of each config (`component`: switch or sensor): the
    /// reasons it would refuse it, none when it takes it (or when Home Assistant is not installed).
    static func schemaErrors(_ configs: [(component: String, config: [String: Any])]) throws -> [[String]] {
        try runRenderer(configs.map { ["component": $0.component, "config": $0.config] }, arguments: ["--configs"])
            .map { $0["errors"] as? [String] ?? ["no answer"] }
    }

    /// Runs scripts/ha-render-templates over `request`; returns its results.
    static func runRenderer(_ request: [[String: Any]], arguments: [String] = []) throws -> [[String: Any]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, "\(TestStack.packageRoot)/scripts/ha-render-templates"] + arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let answer = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let results = try #require(answer["results"] as? [[String: Any]])
        print("\(arguments) \(results.count) items with \(answer["renderer"] as? String ?? "no Home Assistant")")
        return results
    }

    /// The rendered values, each expected to render without a warning.
    static func render(_ items: [(template: String, payload: String)]) throws -> [String] {
        let rendered = try renderAsHomeAssistant(items)
        for (item, result) in zip(items, rendered) {
            #expect(result.warnings.isEmpty, "\(item.payload) → \(result.warnings)")
        }
        return rendered.map { $0.value ?? "<error>" }
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

    /// A native outlet's buffered readings: an array, oldest first.
    static let buffered =
        #"[{"voltage":230,"current":0.5,"power":100,"energy_wh":1500,"seq":1},"#
        + #"{"voltage":"231","current":0.4,"power":"92.4","energy_wh":1510,"seq":2}]"#

    /// The Shelly and native templates, rendered by Home Assistant's rules over each firmware's payloads, with no
    /// warning in its log; a native outlet's buffered readings (an array) show the newest.
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
            (native[1], #"{"voltage":230,"current":0.5,"power":null}"#, "115.0"),
            (native[4], #"{"power":1,"energy_wh":42}"#, "42.0"), (native[2], #"{"voltage":" 227.1"}"#, "227.1"),
            // Buffered readings, oldest first: Home Assistant shows the newest.
            (native[1], Self.buffered, "92.4"), (native[2], Self.buffered, "231.0"), (native[3], Self.buffered, "0.4"),
            (native[4], Self.buffered, "1510.0"),
            // What a sensor cannot show renders nothing, which Home Assistant ignores (the state stays).
            (native[4], #"[{"voltage":230,"current":1,"energy_wh":10},{"voltage":230,"current":1}]"#, ""),
            (native[1], #"{"voltage":230}"#, ""), (native[2], "[]", ""), (native[2], "[1,2]", ""),
            (native[2], "not json", ""), (native[2], #""text""#, ""), (native[2], #"{"voltage":"high"}"#, ""),
        ]
        let rendered = try Self.render(cases.map { (try #require($0.0), $0.1) })
        #expect(rendered == cases.map(\.2))
    }
}
