import Foundation
import MQTT
import ServiceTestSupport
import TestSupport
import Testing

@testable import Config

/// A reading that reaches a restarted broker before outletd has reconnected. mosquitto restores a persistent
/// session's plain subscriptions from its persistence file, not its shared ones (docs/SCALING.md), so the
/// default (no share group, plain subscriptions) must store it, and a share group loses it: the second case
/// shows that the test really published inside the window.
@Suite(.serialized) struct BrokerRestartTests {
    @Test(arguments: [
        (shareGroup: OutletdConfiguration.defaultShareGroup, stored: true),
        (shareGroup: "restart-group", stored: false),
    ])
    func aReadingPublishedBeforeOutletdReconnectsIsStoredWithoutAGroup(shareGroup: String, stored: Bool)
        async throws
    {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let databaseURL = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: databaseURL)
        configuration.mqtt.url = stack.mqttURL
        configuration.mqtt.shareGroup = shareGroup
        configuration.commands.shareGroup = shareGroup
        // The window: outletd tries again 5 s after it lost the broker.
        configuration.mqtt.reconnectDelayMinSeconds = 5
        configuration.mqtt.reconnectDelayMaxSeconds = 5
        let code = "restart-1"
        try Harness.register([code], databaseURL: databaseURL)
        let topic = "\(configuration.mqtt.topicPrefix)/\(code)/telemetry"
        let before = Date(timeIntervalSince1970: 1_790_000_000)

        try await Harness.withService(configuration) { _ in
            try stack.restartMosquitto(downFor: 0)
            let publisher = try Harness.publisher(on: stack)
            defer { publisher.stop() }
            let restartedAt = Date()
            // Answered with reason 16 ("no matching subscribers") when nothing subscribes: not a failure.
            try await publisher.publishAcknowledged(topic, payload: Payloads.reading(ts: before, seq: 1), qos: 1)
            let published = Date().timeIntervalSince(restartedAt)
            #expect(published < 3, "published \(published) s after the restart: outside the 5 s window")

            // Then one reading per poll until one is stored (outletd is back): by then the first one has
            // been stored too, or never will be (the broker delivers a session's messages in order).
            var seq = 2
            try await Harness.waitUntil(timeout: 30, "a reading published after the restart stored") {
                if try Harness.count(databaseURL, "SELECT count(*) FROM samples WHERE seq >= 2") > 0 { return true }
                _ = try? publisher.publish(
                    topic, payload: Payloads.reading(ts: before.addingTimeInterval(Double(seq)), seq: seq), qos: 1)
                seq += 1
                return false
            }
        }
        let first = try Harness.count(databaseURL, "SELECT count(*) FROM samples WHERE seq = 1")
        #expect(first == (stored ? 1 : 0), "share group '\(shareGroup)': \(first) of the reading sent in the window")
    }
}
