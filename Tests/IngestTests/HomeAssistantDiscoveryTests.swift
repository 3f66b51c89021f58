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
        do {
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            let store = DeviceStore(connection: connection)
            _ = try store.add(.init(code: "kitchen-1", name: "Kitchen fridge"))
            _ = try store.add(.init(code: "hall-2", enabled: false))
            _ = try store.add(.init(code: "taz-3", outletProtocol: .tasmota, protocolTopic: "taz3"))
        }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: haPrefix, topicPrefix: prefix, version: "x")
        let kitchen = discovery.topics(code: try #require(DeviceCode("kitchen-1")))
        let hall = discovery.topics(code: try #require(DeviceCode("hall-2")))
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
            // A disabled outlet and an outlet of another protocol are not announced.
            #expect(hall.allSatisfy { watcher.payload($0)?.isEmpty ?? true })
            #expect(
                !watcher.latest.value.keys.contains { $0.contains("taz-3") && watcher.payload($0)?.isEmpty == false })

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

            // Disabled: every config cleared (an empty retained message), and a new subscriber gets none.
            try Self.store(url) { try $0.setEnabled("kitchen-1", false) }
            try await Harness.waitUntil(timeout: 10, "kitchen-1 cleared") {
                kitchen.allSatisfy { watcher.payload($0) == "" }
            }
            let late = try Watcher(url: configuration.mqtt.url, filter: "\(haPrefix)/#")
            defer { late.client.stop() }
            try await Task.sleep(for: .seconds(1))
            #expect(late.latest.value.keys.allSatisfy { !$0.contains("kitchen-1") && !$0.contains("gone-9") })

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
}
