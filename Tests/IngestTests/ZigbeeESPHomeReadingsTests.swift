import Foundation
import Protocols
import Telemetry
import Testing

@testable import Commands
@testable import Config
@testable import Ingest
@testable import Routing
@testable import Storage
@testable import WritePath

/// Routing and classification of Zigbee2MQTT and ESPHome messages, without broker or database.
@Suite struct ZigbeeESPHomeReadingsTests {
    static func registry() -> DeviceRegistry {
        let registry = DeviceRegistry()
        func device(
            _ id: Int32, _ outletProtocol: OutletProtocol, _ topic: String, endpoint: String = "",
            enabled: Bool = true, map: String? = nil
        ) -> RegisteredDevice {
            RegisteredDevice(
                id: id, enabled: enabled, protocolName: outletProtocol.rawValue,
                address: ProtocolAddress(
                    outletProtocol: outletProtocol, deviceTopic: topic, channel: 0, endpoint: endpoint),
                sensorMap: map.flatMap { try? ESPHomeProtocol.SensorMap.parse($0).get() } ?? ESPHomeProtocol.SensorMap()
            )
        }
        registry.replaceAll([
            "kettle": device(1, .zigbee2mqtt, "kitchen/kettle"),
            "strip-l1": device(2, .zigbee2mqtt, "desk strip", endpoint: "l1"),
            "strip-l2": device(3, .zigbee2mqtt, "desk strip", endpoint: "l2"),
            "gone": device(4, .zigbee2mqtt, "old plug", enabled: false),
            "athom": device(5, .esphome, "athom-smart-plug-v2", map: "energy=total_energy:kWh"),
            "s31": device(6, .esphome, "sonoff_s31"),
        ])
        return registry
    }

    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func classifier() -> MessageClassifier {
        MessageClassifier(
            topicPrefix: "outlets", limits: ValidationLimits(),
            foreign: ForeignReadings(router: ProtocolRouter(OutletdConfiguration()), registry: Self.registry()))
    }

    func classify(_ classifier: MessageClassifier, _ topic: String, _ payload: String, at offset: Double = 0)
        -> ClassifiedMessage
    {
        classifier.classify(
            RawMessage(topic: topic, payload: Array(payload.utf8), receivedAt: now.addingTimeInterval(offset)),
            lookup: { _ in nil })
    }

    @Test func routesAndTagsRoundTrip() throws {
        let router = TopicRouter(nativePrefix: "outlets", protocols: ProtocolRouter(OutletdConfiguration()))
        let cases: [(String, MessageRoute)] = [
            ("zigbee2mqtt/kitchen/kettle", .foreign(.zigbee2mqtt(.message(path: "kitchen/kettle")))),
            ("zigbee2mqtt/kitchen/kettle/availability", .foreign(.zigbee2mqtt(.availability(name: "kitchen/kettle")))),
            ("zigbee2mqtt/bridge/devices", .foreign(.zigbee2mqtt(.bridgeDevices))),
            ("zigbee2mqtt/bridge/logging", .unread),
            ("zigbee2mqtt/kitchen/kettle/set", .unread),
            (
                "sonoff_s31/sensor/sonoff_s31_power/state",
                .foreign(.esphome(prefix: "sonoff_s31", kind: .sensor(objectID: "sonoff_s31_power")))
            ),
            (
                "sonoff_s31/switch/sonoff_s31_relay/state",
                .foreign(.esphome(prefix: "sonoff_s31", kind: .switchState(objectID: "sonoff_s31_relay")))
            ),
            ("sonoff_s31/status", .foreign(.esphome(prefix: "sonoff_s31", kind: .status))),
            (
                "homeassistant/sensor/sonoff_s31/sonoff_s31_power/config",
                .foreign(.esphomeDiscovery(component: "sensor", node: "sonoff_s31", objectID: "sonoff_s31_power"))
            ),
        ]
        for (topic, expected) in cases {
            let route = router.route(topic)
            #expect(route == expected, "\(topic)")
            #expect(MessageRoute(tag: route.tag) == route, "\(topic)")
        }
        #expect(
            router.route("zigbee2mqtt/kitchen/kettle").goesToSpool
                && router.route("zigbee2mqtt/kitchen/kettle").goesToRelay)
        #expect(!router.route("sonoff_s31/status").goesToSpool && router.route("sonoff_s31/status").goesToRelay)
        #expect(router.route("sonoff_s31/sensor/power/state").goesToSpool)
        #expect(!router.route("sonoff_s31/sensor/power/state").goesToRelay)
    }

    /// `cache_state: true`: every message repeats the cached values; only a change is a new sample.
    @Test func zigbeeCachedValuesAreStoredOnce() {
        let classifier = classifier()
        let topic = "zigbee2mqtt/kitchen/kettle"
        let first = classify(
            classifier, topic, #"{"current":0.05,"energy":1.63,"power":10,"state":"ON","voltage":231}"#)
        #expect(first.samples.map(\.reading.powerWatts) == [10] && first.samples.first?.deviceID == 1)
        // The state changes; the cache repeats the same meter values.
        let repeat1 = classify(
            classifier, topic, #"{"current":0.05,"energy":1.63,"power":10,"state":"OFF","voltage":231}"#, at: 1)
        #expect(repeat1.samples.isEmpty && repeat1.rejections.isEmpty && repeat1.ignored == [.cachedValues])
        // The power then drops: a new sample, with the cached voltage and counter.
        let dropped = classify(classifier, topic, #"{"power":0,"state":"OFF"}"#, at: 2)
        #expect(dropped.samples.map(\.reading.powerWatts) == [0])
        #expect(
            dropped.samples.first?.reading.voltageVolts == 231
                && dropped.samples.first?.reading.energyWattHours == 1_630)
        #expect(classify(classifier, topic, #"{"linkquality":40}"#, at: 3).ignored == [.noReading])
    }

    @Test func zigbeeTwoSocketsOneMeter() {
        let result = classify(
            classifier(), "zigbee2mqtt/desk strip",
            #"{"current":0.42,"energy":12.5,"power":96.1,"state_l1":"ON","state_l2":"OFF","voltage":229.8}"#)
        #expect(result.samples.map(\.deviceID) == [2] && result.rejections.isEmpty)
    }

    @Test func everythingElseUnderTheBaseTopicIsIgnoredByKind() {
        let classifier = classifier()
        let cases: [(String, String, IgnoredKind)] = [
            (
                "zigbee2mqtt/hall/temperature", #"{"temperature":21.5,"humidity":40,"battery":90,"linkquality":60}"#,
                .notAnOutlet
            ),
            ("zigbee2mqtt/kitchen/kettle/power", "10", .attributeTopic),
            ("zigbee2mqtt/kitchen/kettle/state", "ON", .attributeTopic),
            ("some-node/sensor/temperature/state", "21.5", .notAnOutlet),
            ("sonoff_s31/sensor/sonoff_s31_wifi_signal/state", "-61", .noMeter),
            ("sonoff_s31/sensor/sonoff_s31_daily_energy/state", "120.5", .noMeter),
            ("sonoff_s31/sensor/sonoff_s31_power/state", "nan", .noReading),
            ("athom-smart-plug-v2/sensor/energy/state", "0.012", .noMeter),
        ]
        for (topic, payload, kind) in cases {
            let result = classify(classifier, topic, payload)
            #expect(result.samples.isEmpty && result.rejections.isEmpty, "\(topic)")
            #expect(result.ignored == [kind], "\(topic): \(result.ignored)")
        }
        let disabled = classify(classifier, "zigbee2mqtt/old plug", #"{"power":3}"#)
        #expect(disabled.rejections.map(\.reason) == [.disabledDevice])
        #expect(classify(classifier, "zigbee2mqtt/kitchen/kettle", "{").rejections.map(\.reason) == [.malformedJSON])
        #expect(
            classify(classifier, "sonoff_s31/sensor/sonoff_s31_power/state", "-3").rejections.map(\.reason) == [
                .outOfRange
            ])
    }

    /// The Athom plug's sensors by their usual ids, its counter from the registered map (kWh → Wh).
    @Test func esphomeCycleIsOneSample() {
        let classifier = classifier()
        let prefix = "athom-smart-plug-v2/sensor"
        for (objectID, value, offset) in [
            ("current", "0.42", 0.0), ("voltage", "229.8", 0.001), ("power", "96.1", 0.002),
            ("power_factor", "0.99", 0.003), ("total_energy", "1.234", 0.004),
        ] {
            let result = classify(classifier, "\(prefix)/\(objectID)/state", value, at: offset)
            #expect(result.samples.isEmpty && result.rejections.isEmpty && result.ignored.isEmpty, "\(objectID)")
        }
        #expect(classifier.isHolding)
        let released = classifier.releaseHeld()
        let reading = released.samples.first?.reading
        #expect(released.samples.map(\.deviceID) == [5])
        #expect(reading?.powerWatts == 96.1 && reading?.voltageVolts == 229.8 && reading?.currentAmperes == 0.42)
        #expect(reading?.powerFactor == 0.99 && reading?.energyWattHours == 1_234 && reading?.measuredAt == now)
        #expect(!classifier.isHolding)
    }

    /// Zigbee2MQTT and ESPHome announce themselves to Home Assistant: outletd announces nothing for them (no
    /// duplicate entities) and empties whatever it had published for the code.
    @Test func outletdsHomeAssistantDiscoveryStaysOffForDevicesThatAnnounceThemselves() throws {
        var records: [String: DeviceRecord] = [:]
        for (code, outletProtocol) in [("kettle", "zigbee2mqtt"), ("s31", "esphome"), ("pow1", "tasmota")] {
            records[code] = DeviceRecord(
                id: 1, code: code, name: code, description: "", owner: nil, protocolName: outletProtocol,
                enabled: true, createdAt: nil, protocolTopic: code, channel: outletProtocol == "tasmota" ? 1 : 0)
        }
        let wanted = DiscoveryPublisher.wanted(records)
        #expect(wanted["kettle"] == .some(nil) && wanted["s31"] == .some(nil))
        #expect(wanted["pow1"]??.outletProtocol == .tasmota)
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", topicPrefix: "outlets", version: "t")
        let code = try #require(DeviceCode("s31"))
        let messages = try discovery.announce(
            code: code, outlet: HomeAssistantDiscovery.Outlet(name: "s31", outletProtocol: .esphome, deviceTopic: "s31")
        )
        #expect(messages == discovery.clear(code: code) && messages.allSatisfy(\.payload.isEmpty))
    }
}
