import Foundation
import MQTT
import TestSupport
import Testing

/// The shipped broker ACL (config/mosquitto/outletd.acl) for ESPHome nodes and Zigbee2MQTT: a node speaks only for
/// itself, and only the bridge's user writes the bridge's base topic.
@Suite(.serialized) struct ZigbeeESPHomeBrokerTests {
    @Test func aNodeSpeaksOnlyForItselfAndOnlyTheBridgeWritesItsBaseTopic() async throws {
        let users = [
            "node-a": "na-secret", "node-b": "nb-secret", "zigbee2mqtt": "z-secret", "outletd": "svc-secret",
        ]
        let broker = try BrokerSecurityTests.startSecureBroker(users: users)
        defer { broker.process.killAndWait() }
        try await Harness.waitUntil(timeout: 10, "the secure broker listening") { TLSTests.listening(broker.port) }
        let heardByOutletd = Locked<[String]>([])
        let outletd = try await BrokerSecurityTests.client(
            broker, user: "outletd", password: "svc-secret",
            filters: ["+/sensor/+/state", "+/switch/+/state", "+/status", "zigbee2mqtt/#"], received: heardByOutletd)
        defer { outletd.stop() }
        let heardByB = Locked<[String]>([])
        let nodeB = try await BrokerSecurityTests.client(
            broker, user: "node-b", password: "nb-secret", filters: ["node-b/switch/+/command"], received: heardByB)
        defer { nodeB.stop() }
        let heardByA = Locked<[String]>([])
        let nodeA = try await BrokerSecurityTests.client(
            broker, user: "node-a", password: "na-secret",
            filters: ["node-a/switch/+/command", "node-b/switch/+/command"],
            received: heardByA)
        defer { nodeA.stop() }
        let bridge = try await BrokerSecurityTests.client(broker, user: "zigbee2mqtt", password: "z-secret")
        defer { bridge.stop() }
        try await Task.sleep(for: .milliseconds(300))

        // A node cannot publish another's readings, switch state, status or discovery.
        for topic in [
            "node-b/sensor/power/state", "node-b/switch/relay/state", "node-b/status",
            "homeassistant/sensor/node-b/power/config",
        ] {
            await #expect(throws: MQTTError.self, "\(topic)") {
                try await nodeA.publishAcknowledged(topic, payload: Array("1".utf8))
            }
        }
        // Its own are fine.
        try await nodeA.publishAcknowledged("node-a/sensor/power/state", payload: Array("12.5".utf8))
        try await nodeA.publishAcknowledged("node-a/switch/relay/state", payload: Array("ON".utf8))
        try await nodeA.publishAcknowledged("node-a/status", payload: Array("online".utf8))
        // Nobody but the bridge writes a Zigbee device's state; outletd writes requests only.
        await #expect(throws: MQTTError.self) {
            try await nodeA.publishAcknowledged("zigbee2mqtt/kitchen/kettle", payload: Array(#"{"power":1}"#.utf8))
        }
        await #expect(throws: MQTTError.self) {
            try await outletd.publishAcknowledged("zigbee2mqtt/kitchen/kettle", payload: Array(#"{"power":1}"#.utf8))
        }
        try await bridge.publishAcknowledged("zigbee2mqtt/kitchen/kettle", payload: Array(#"{"power":10}"#.utf8))
        try await outletd.publishAcknowledged(
            "zigbee2mqtt/kitchen/kettle/set", payload: Array(#"{"state":"OFF"}"#.utf8))
        // outletd's command to B reaches B only.
        try await outletd.publishAcknowledged("node-b/switch/relay/command", payload: Array("OFF".utf8))
        try await Harness.waitUntil(timeout: 5, "B's command and the readings") {
            heardByB.value.contains("node-b/switch/relay/command OFF")
                && heardByOutletd.value.contains("zigbee2mqtt/kitchen/kettle {\"power\":10}")
                && heardByOutletd.value.contains("node-a/sensor/power/state 12.5")
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!heardByA.value.contains { $0.hasPrefix("node-b/") })
        #expect(!heardByOutletd.value.contains { $0.hasPrefix("node-b/sensor") || $0.contains("\"power\":1}") })
    }
}
