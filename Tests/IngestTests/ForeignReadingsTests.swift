import Foundation
import Telemetry
import Testing

@testable import Ingest

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

    @Test func gen1EnergyIsAttachedToTheNextPower() {
        let classifier = classifier(Self.registry())
        #expect(
            classify(classifier, "shellies/shellyplug-s-1/relay/0/power", "5").samples.first?.reading.energyWattHours
                == nil)
        #expect(classify(classifier, "shellies/shellyplug-s-1/relay/0/energy", "120").samples.isEmpty)
        let reading = classify(classifier, "shellies/shellyplug-s-1/relay/0/power", "7.5").samples.first?.reading
        #expect(reading?.powerWatts == 7.5 && reading?.energyWattHours == 2 && reading?.voltageVolts == nil)
        // A reboot resets the counter: stored as reported (the rollups read a decrease as a reset).
        _ = classify(classifier, "shellies/shellyplug-s-1/relay/0/energy", "0")
        #expect(
            classify(classifier, "shellies/shellyplug-s-1/relay/0/power", "7.5").samples.first?.reading.energyWattHours
                == 0)
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
        #expect(router.route("outletd/a/shelly/rpc") == .shellyGen2Reply)
        #expect(router.route("tasmota/discovery/A4CF12ABC123/config") == .tasmotaDiscovery)
        let gen2 = router.route("plus/status/switch:0")
        #expect(gen2?.carriesReadings == true && gen2?.carriesState == true)
        #expect(router.isUnreadForeignTopic("plus/status/sys"))
        #expect(router.isUnreadForeignTopic("stat/pow1/STATUS"))
        #expect(!router.isUnreadForeignTopic("outlets/x/telemetry"))
        #expect(router.subscriptions.contains("tele/+/SENSOR") && router.subscriptions.contains("outletd/a/shelly/rpc"))
    }
}
