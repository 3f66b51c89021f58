import Foundation
import ServiceTestSupport
import TestSupport
import Testing

@testable import Config
@testable import Daemon

/// Several instances cannot silently duplicate: empty share groups while another instance is online, or one share
/// group without the other, are refused (docs/SCALING.md).
@Suite(.serialized) struct PeerCheckTests {
    @Test(
        "one share group without the other is refused at start",
        arguments: [
            (["OUTLETD_MQTT_SHARE_GROUP": "site"], "commands.share_group"),
            (["OUTLETD_COMMANDS_SHARE_GROUP": "site"], "mqtt.share_group"),
        ])
    func halfASharedSetupIsRefused(environment: [String: String], key: String) {
        do {
            _ = try ConfigurationLoader().load(file: nil, environment: environment)
            Issue.record("expected a refusal")
        } catch {
            #expect(error.problems.contains { $0.key == key && $0.message.contains("set together") }, "\(error)")
        }
        let both = try? ConfigurationLoader().load(
            file: nil, environment: ["OUTLETD_MQTT_SHARE_GROUP": "site", "OUTLETD_COMMANDS_SHARE_GROUP": "site"])
        #expect(both?.commands.shareGroup == "site")
    }

    @Test func aSecondInstanceWithoutShareGroupsRefusesToStartAndTheFirstGoesOn() async throws {
        let url = try Harness.migratedDatabase()
        var first = try Harness.configuration(databaseURL: url)
        first.mqtt.shareGroup = ""
        first.commands.shareGroup = ""
        var second = first
        second.instanceID = first.instanceID + "-second"
        second.spool.directory = first.spool.directory + "-second"
        try Harness.register(["kitchen-1"], databaseURL: url)
        try await Harness.withService(first) { _ in
            let refused = try OutletdProcess.start(second)
            let code = try await refused.waitForExit(timeout: 30)
            #expect(code != 0)
            #expect(refused.output.contains("another outletd instance is online on this broker (\(first.instanceID))"))
            #expect(refused.output.contains("mqtt.share_group") && refused.output.contains("mqtt.ignore_peers"))
            // The first goes on: it still stores readings.
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try publisher.publish(
                "\(first.mqtt.topicPrefix)/kitchen-1/telemetry", payload: Payloads.reading(ts: Date(), seq: 1))
            try await Harness.waitUntil(timeout: 15, "the reading stored by the first") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }
            // A deliberate copy says so, and runs.
            let copy = try OutletdProcess.start(second, extraEnvironment: ["OUTLETD_MQTT_IGNORE_PEERS": "true"])
            try await Harness.waitForStatus(second, "online")
            copy.signal(SIGTERM)
            #expect(try await copy.waitForExit(timeout: 30) == 0)
        }
        // Alone on the broker, an instance without share groups starts.
        let alone = try OutletdProcess.start(second)
        try await Harness.waitForStatus(second, "online")
        alone.signal(SIGTERM)
        #expect(try await alone.waitForExit(timeout: 30) == 0)
    }
}

/// Every connection takes libpq's multi-host URLs (a primary and its standbys).
@Suite struct MultiHostConnectionTests {
    @Test func theCLIAndTheDaemonReachTheDatabaseThroughAMultiHostURL() async throws {
        let url = try Harness.migratedDatabase()
        // A first host that answers nothing (port 1), then the real one: libpq tries them in order.
        let multiHost = url.replacingOccurrences(of: "@127.0.0.1:", with: "@127.0.0.1:1,127.0.0.1:")
        #expect(multiHost != url)
        let loaded = try ConfigurationLoader().load(file: nil, environment: ["OUTLETD_DATABASE_URL": multiHost])
        #expect(loaded.database.url == multiHost + "?target_session_attrs=read-write")
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "device", "add", "kitchen-1"],
            environment: ["OUTLETD_DATABASE_URL": multiHost])
        var configuration = try Harness.configuration(databaseURL: loaded.database.url)
        configuration.database.url = loaded.database.url
        try await Harness.withService(configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try publisher.publish(
                "\(configuration.mqtt.topicPrefix)/kitchen-1/telemetry", payload: Payloads.reading(ts: Date(), seq: 1))
            try await Harness.waitUntil(timeout: 15, "the reading stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }
        }
    }
}
