import Foundation
import Protocols
import Telemetry
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
@testable import WritePath

/// Routing and classification of Tasmota and Shelly messages, without broker or database.
@Suite struct ForeignReadingsTests {
    static func registry() -> DeviceRegistry {
        let registry = DeviceRegistry()
        registry.replaceAll([
            "tas-1": RegisteredDevice(
                id: 1, enabled: true, protocolName: "tasmota",
                address: ProtocolAddress(outletProtocol: .tasmota, deviceTopic: "pow1", channel: 1)),
            "tas-2": RegisteredDevice(
                id: 2, enabled: true, protocolName: "tasmota",
                address: ProtocolAddress(outletProtocol: .tasmota, deviceTopic: "pow1", channel: 2)),
            "plug-s": RegisteredDevice(
                id: 3, enabled: true, protocolName: "shelly-gen1",
                address: ProtocolAddress(outletProtocol: .shellyGen1, deviceTopic: "shellyplug-s-1", channel: 0)),
            "plus": RegisteredDevice(
                id: 4, enabled: true, protocolName: "shelly-gen2",
                address: ProtocolAddress(outletProtocol: .shellyGen2, deviceTopic: "home/plus", channel: 0)),
            "off": RegisteredDevice(
                id: 5, enabled: false, protocolName: "shelly-gen1",
                address: ProtocolAddress(outletProtocol: .shellyGen1, deviceTopic: "disabled-1", channel: 0)),
        ])
        return registry
    }

    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func classifier(_ registry: DeviceRegistry) -> MessageClassifier {
        var configuration = OutletdConfiguration()
        configuration.protocols.tasmotaFullTopics = "%prefix%/%topic%/,emoncms/factory/%topic%/%prefix%/"
        return MessageClassifier(
            topicPrefix: "outlets", limits: ValidationLimits(),
            foreign: ForeignReadings(router: ProtocolRouter(configuration), registry: registry))
    }

    func classify(_ classifier: MessageClassifier, _ topic: String, _ payload: String, at offset: Double = 0)
        -> ClassifiedMessage
    {
        classifier.classify(
            RawMessage(topic: topic, payload: Array(payload.utf8), receivedAt: now.addingTimeInterval(offset)),
            lookup: { _ in nil })
    }

    @Test func tasmotaSensorOfTwoRelaysUnderEitherFullTopic() {
        let classifier = classifier(Self.registry())
        for topic in ["tele/pow1/SENSOR", "emoncms/factory/pow1/tele/SENSOR"] {
            let result = classify(classifier, topic, #"{"ENERGY":{"Power":[10,20],"Voltage":230}}"#)
            #expect(result.samples.map(\.deviceID) == [1, 2])
            #expect(result.samples.map(\.reading.powerWatts) == [10, 20])
            #expect(result.rejections.isEmpty)
        }
    }

    @Test func unknownForeignTopicIsAPendingCode() {
        let result = classify(classifier(Self.registry()), "tele/tasmota_ABC123/SENSOR", #"{"ENERGY":{"Power":1}}"#)
        #expect(result.samples.isEmpty && result.rejections.map(\.reason) == [.unknownDevice])
        #expect(result.unknownCode == "tasmota_ABC123")
        let disabled = classify(classifier(Self.registry()), "shellies/disabled-1/relay/0/power", "5")
        #expect(disabled.samples.isEmpty && disabled.rejections.map(\.reason) == [.unknownDevice])
    }

    /// A Gen1 poll publishes `relay/0/power` then `relay/0/energy`: the sample waits for its own poll's counter.
    @Test func gen1SampleCarriesItsOwnPollsCounter() {
        let classifier = classifier(Self.registry())
        let topic = "shellies/shellyplug-s-1/relay/0"
        let opened = classify(classifier, "\(topic)/power", "5")
        #expect(opened.samples.isEmpty && opened.rejections.isEmpty && opened.ignored.isEmpty)
        #expect(classifier.isHolding)
        let first = classify(classifier, "\(topic)/energy", "120", at: 0.001).samples.map(\.reading)
        #expect(first.map(\.powerWatts) == [5] && first.map(\.energyWattHours) == [2])
        #expect(first.first?.measuredAt == now && first.first?.voltageVolts == nil)
        #expect(!classifier.isHolding)
        // A reboot resets the counter: stored as reported (the rollups read a large decrease as a reset).
        _ = classify(classifier, "\(topic)/power", "7.5", at: 30)
        let second = classify(classifier, "\(topic)/energy", "0", at: 30.001).samples.map(\.reading)
        #expect(second.map(\.powerWatts) == [7.5] && second.map(\.energyWattHours) == [0])
        // A power whose energy never comes is stored without, once a message a window later is read.
        _ = classify(classifier, "\(topic)/power", "9", at: 60)
        let later = classify(classifier, "tele/pow1/SENSOR", #"{"ENERGY":{"Power":[1,2]}}"#, at: 62)
        #expect(later.samples.map(\.deviceID) == [3, 1, 2])
        #expect(later.samples.first?.reading.energyWattHours == nil)
        // An energy alone (its power lost) is no reading, and no rejection either.
        _ = classify(classifier, "\(topic)/energy", "200", at: 90)
        let released = classifier.releaseHeld()
        #expect(released.samples.isEmpty && released.rejections.isEmpty && released.ignored == [.energyOnly])
        // Bad values are refused at once, with the outlet's code.
        #expect(classify(classifier, "\(topic)/power", "-3", at: 120).rejections.map(\.reason) == [.outOfRange])
        #expect(classify(classifier, "\(topic)/energy", "abc", at: 120).rejections.map(\.reason) == [.wrongType])
        #expect(!classifier.isHolding)
    }

    /// What real firmwares send that carries no reading is ignored by kind, never rejected.
    @Test func messagesWithoutAReadingAreIgnoredByKindNotRejected() {
        let classifier = classifier(Self.registry())
        let cases: [(String, String, IgnoredKind)] = [
            ("tele/pow1/SENSOR", #"{"Time":"2024-05-01T12:00:00","AM2301":{"Temperature":21.4}}"#, .noMeter),
            ("home/plus/events/rpc", #"{"method":"NotifyEvent","params":{"ts":1,"events":[]}}"#, .noReading),
            ("home/plus/events/rpc", #"{"method":"NotifyStatus","params":{"ts":1,"sys":{"uptime":5}}}"#, .noReading),
            ("home/plus/status/switch:1", #"{"id":1,"apower":3}"#, .unregisteredChannel),
            ("shellies/shellyplug-s-1/relay/1/power", "4", .unregisteredChannel),
        ]
        for (topic, payload, kind) in cases {
            let result = classify(classifier, topic, payload)
            #expect(result.samples.isEmpty && result.rejections.isEmpty, "\(topic)")
            #expect(result.ignored == [kind], "\(topic): \(result.ignored)")
        }
    }

    /// Tasmota with several relays and one meter: the meter's reading is the lowest registered relay's.
    @Test func tasmotaOneMeterForTwoRelaysBelongsToRelayOne() {
        let result = classify(
            classifier(Self.registry()), "tele/pow1/SENSOR", #"{"ENERGY":{"Total":1.25,"Power":40,"Voltage":229}}"#)
        #expect(result.rejections.isEmpty && result.ignored.isEmpty)
        #expect(result.samples.map(\.deviceID) == [1])
        #expect(result.samples.first?.reading.energyWattHours == 1_250)
    }

    /// Gen2's once-a-minute `aenergy` update of a channel whose power is not known yet: the counter waits in
    /// the overlay for the channel's next sample; with the power known, it is a sample at the update's time.
    @Test func gen2EnergyOnlyUpdateIsNeverARejection() {
        let classifier = classifier(Self.registry())
        let energyOnly =
            #"{"method":"NotifyStatus","params":{"ts":1800000000,"switch:0":{"id":0,"aenergy":{"total":1500.5,"by_minute":[0,0,0],"minute_ts":1800000000}}}}"#
        let first = classify(classifier, "home/plus/events/rpc", energyOnly)
        #expect(first.samples.isEmpty && first.rejections.isEmpty && first.ignored == [.energyOnly])
        let power = #"{"method":"NotifyStatus","params":{"ts":1800000005,"switch:0":{"id":0,"apower":0}}}"#
        let sample = classify(classifier, "home/plus/events/rpc", power, at: 5).samples.map(\.reading)
        #expect(sample.map(\.powerWatts) == [0] && sample.map(\.energyWattHours) == [1500.5])
        let nextMinute =
            #"{"method":"NotifyStatus","params":{"ts":1800000060,"switch:0":{"id":0,"aenergy":{"total":1500.5}}}}"#
        let steady = classify(classifier, "home/plus/events/rpc", nextMinute, at: 60)
        #expect(steady.rejections.isEmpty && steady.samples.map(\.reading.energyWattHours) == [1500.5])
        #expect(steady.samples.first?.reading.measuredAt == Date(timeIntervalSince1970: 1_800_000_060))
    }

    @Test func gen2BothPathsAreNotDoubleCounted() {
        let classifier = classifier(Self.registry())
        let full = #"{"id":0,"output":true,"apower":12.5,"voltage":230,"current":0.06,"aenergy":{"total":10}}"#
        #expect(classify(classifier, "home/plus/status/switch:0", full).samples.count == 1)
        let delta = #"{"method":"NotifyStatus","params":{"ts":1800000001,"switch:0":{"apower":12.5}}}"#
        #expect(classify(classifier, "home/plus/events/rpc", delta, at: 1).samples.isEmpty)
        let change = #"{"method":"NotifyStatus","params":{"ts":1800000002,"switch:0":{"apower":20}}}"#
        let changed = classify(classifier, "home/plus/events/rpc", change, at: 2).samples
        #expect(changed.map(\.reading.powerWatts) == [20] && changed.first?.reading.voltageVolts == 230)
        #expect(changed.first?.reading.measuredAt == Date(timeIntervalSince1970: 1_800_000_002))
        // The same values again after the window are a new sample.
        #expect(classify(classifier, "home/plus/status/switch:0", #"{"apower":20}"#, at: 10).samples.count == 1)
        // Output only: a state report, no reading.
        let output = #"{"method":"NotifyStatus","params":{"ts":1800000011,"switch:0":{"output":false}}}"#
        #expect(classify(classifier, "home/plus/events/rpc", output, at: 11).samples.isEmpty)
    }

    @Test func routesByTopic() {
        var configuration = OutletdConfiguration()
        configuration.instanceID = "a"
        let router = ProtocolRouter(configuration)
        #expect(router.route("tele/pow1/SENSOR")?.carriesReadings == true)
        #expect(router.route("stat/pow1/RESULT")?.carriesState == true)
        #expect(router.route("stat/pow1/POWER2")?.carriesState == true)
        #expect(router.route("cmnd/pow1/POWER") == nil)
        #expect(router.route("outletd/a/shelly/plus-1/rpc") == .shellyGen2Reply(devicePrefix: "plus-1"))
        #expect(router.route("outletd/a/shelly/home/plus/rpc") == .shellyGen2Reply(devicePrefix: "home/plus"))
        #expect(router.route("outletd/a/shelly/rpc") == nil)
        #expect(router.shellyGen2ReplyPrefix(for: "plus-1") == "outletd/a/shelly/plus-1")
        #expect(router.route("tasmota/discovery/A4CF12ABC123/config") == .tasmotaDiscovery)
        let gen2 = router.route("plus/status/switch:0")
        #expect(gen2?.carriesReadings == true && gen2?.carriesState == true)
        #expect(router.isUnreadForeignTopic("plus/status/sys"))
        #expect(router.isUnreadForeignTopic("stat/pow1/STATUS"))
        #expect(!router.isUnreadForeignTopic("outlets/x/telemetry"))
        #expect(router.subscriptions.contains("tele/+/SENSOR") && router.subscriptions.contains("outletd/a/shelly/#"))
    }
}

/// A message's route is decided once (the MQTT callback) and travels in its spool record: every kind survives
/// the round trip through the tag, and bytes of another shape are no route.
@Suite struct MessageRouteTests {
    static let routes: [MessageRoute] = [
        .native(.telemetry, code: "kitchen-1"), .native(.set, code: "ç-1"), .native(.availability, code: ""),
        .foreign(.tasmota(.init(prefix: "tele", deviceTopic: "pow1", suffix: "SENSOR"))),
        .foreign(.shellyGen1(id: "shellyplug-s-1", kind: .power(channel: 0))),
        .foreign(.shellyGen1(id: "x", kind: .energy(channel: 2))),
        .foreign(.shellyGen1(id: "x", kind: .relayState(channel: 1))), .foreign(.shellyGen1(id: "x", kind: .online)),
        .foreign(.shellyGen1(id: "", kind: .announce)),
        .foreign(.shellyGen2(prefix: "home/plus", kind: .status(component: "switch:0"))),
        .foreign(.shellyGen2(prefix: "p", kind: .events)), .foreign(.shellyGen2(prefix: "p", kind: .online)),
        .foreign(.shellyGen2Reply(devicePrefix: "home/plus")), .foreign(.tasmotaDiscovery), .unread, .unknown,
    ]

    @Test(arguments: routes)
    func routeRoundTripsThroughItsTag(route: MessageRoute) {
        #expect(MessageRoute(tag: route.tag) == route)
    }

    @Test func otherBytesAreNoRoute() {
        #expect(MessageRoute(tag: []) == nil)
        #expect(MessageRoute(tag: [9]) == nil)
        #expect(MessageRoute(tag: [1, 0]) == nil)
        #expect(MessageRoute(tag: MessageRoute.unread.tag + [0]) == nil)
    }

    @Test func theTopicRouterDecidesTheNativeProtocolFirst() {
        var configuration = OutletdConfiguration()
        configuration.instanceID = "a"
        let router = TopicRouter(nativePrefix: "outlets", protocols: ProtocolRouter(configuration))
        #expect(router.route("outlets/k-1/telemetry") == .native(.telemetry, code: "k-1"))
        #expect(router.route("tele/pow1/SENSOR").goesToSpool)
        #expect(router.route("stat/pow1/STATUS") == .unread)
        #expect(router.route("elsewhere/x") == .unknown)
        let gen2 = router.route("plus/status/switch:0")
        #expect(gen2.goesToSpool && gen2.goesToRelay)
    }
}
