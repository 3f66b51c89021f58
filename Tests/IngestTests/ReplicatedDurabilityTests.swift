import Foundation
import ServiceTestSupport
import TestSupport
import Testing

@testable import Config
@testable import MQTT
@testable import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// `database.durability: replicated` against a real PostgreSQL without a standby (docs/HIGH-AVAILABILITY.md):
/// the spool keeps what no standby has and `/readyz` says so while staying ready; a server that comes back
/// without its last commits (put back from a copy of its data directory: what a failover to a standby that had
/// received nothing since does) gets them again from the spool, each reading once, totals and rollups with them.
/// `scripts/failover-test` does the same with a real standby, promoted after `kill -9` of the primary.
@Suite(.serialized) struct ReplicatedDurabilityTests {
    /// `scripts/stack COMMAND DIR` on the test's own stack (`pg-snapshot`, `pg-rollback`).
    static func stack(_ stack: TestStack, _ command: String) async throws {
        try await Blocking.run {
            try TestStack.run(["\(TestStack.packageRoot)/scripts/stack", command, stack.directory])
        }
    }

    @Test func aServerThatLostItsLastCommitsGetsThemAgainFromTheSpool() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = stack.mqttURL
        configuration.database.reconnectDelayMaxSeconds = 1
        let codes = ["ha-1", "ha-2", "ha-3"]
        try Harness.register(codes, databaseURL: url)
        let port = try freePort()
        let daemon = try OutletdProcess.start(
            configuration,
            extraEnvironment: ["OUTLETD_HTTP_LISTEN": "127.0.0.1:\(port)", "OUTLETD_DATABASE_DURABILITY": "replicated"])
        defer { daemon.signal(SIGKILL) }
        try await Harness.waitForStatus(configuration, "online")
        let publisher = try Harness.publisher(on: stack)
        defer { publisher.stop() }
        let start = Date().addingTimeInterval(-600)
        var published = 0
        func publish(_ count: Int) async throws {
            for _ in 0..<count {
                let seq = published / codes.count
                try await publisher.publishAcknowledged(
                    "\(configuration.mqtt.topicPrefix)/\(codes[published % codes.count])/telemetry",
                    payload: Payloads.reading(
                        power: Double(published % 97), ts: start.addingTimeInterval(Double(seq)), seq: seq))
                published += 1
            }
        }
        func stored() throws -> Int { try Harness.count(url, "SELECT count(*) FROM samples") }

        try await publish(60)
        try await Harness.waitUntil(timeout: 30, "the first readings stored") { try stored() == 60 }
        // Nothing confirms them: no standby. Ready all the same, with the reason.
        try await Harness.waitUntil(timeout: 10, "/readyz names the missing standby") {
            let readiness = HTTPProbe.get(port: port, path: "/readyz")
            return readiness?.status == 200 && readiness?.body.contains("no standby is connected") == true
        }
        let metrics = try #require(HTTPProbe.get(port: port, path: "/metrics")).body
        #expect(metrics.contains("outletd_replication_standbys 0"))
        let unconfirmed = PrometheusText(metrics).samples["outletd_spool_unconfirmed_bytes"] ?? 0
        #expect(unconfirmed > 0, "the committed records stay in the spool")

        try await Self.stack(stack, "pg-snapshot")
        try await publish(150)
        try await Harness.waitUntil(timeout: 60, "the later readings stored") { try stored() == 210 }

        // The server loses the 150 readings committed since the copy.
        try await Self.stack(stack, "pg-rollback")
        #expect(try stored() == 60)
        try await publish(30)
        try await Harness.waitUntil(timeout: 60, "every acknowledged reading stored again") { try stored() >= 240 }
        try await Task.sleep(for: .seconds(1))

        #expect(try stored() == 240)
        #expect(try Harness.count(url, "SELECT count(DISTINCT (device_id, seq)) FROM samples") == 240)
        #expect(daemon.output.contains("the database lacks batches this instance committed"), "\(daemon.output)")
        #expect(
            try Harness.outletsWithTotalsAsRecomputed(url) == codes.count)
        try RollupTests().expectRollupsMatchFromScratch(url, timeZone: "UTC", maxGapSeconds: 600)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 30) == 0)
    }

    /// With `durability: local` the same loss is a loss: the spool let go of the readings at the commit.
    @Test func withLocalDurabilityTheLostCommitsStayLost() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = stack.mqttURL
        configuration.database.reconnectDelayMaxSeconds = 1
        try Harness.register(["ha-local"], databaseURL: url)
        let daemon = try OutletdProcess.start(configuration)
        defer { daemon.signal(SIGKILL) }
        try await Harness.waitForStatus(configuration, "online")
        let publisher = try Harness.publisher(on: stack)
        defer { publisher.stop() }
        let topic = "\(configuration.mqtt.topicPrefix)/ha-local/telemetry"
        let start = Date().addingTimeInterval(-600)
        func publish(_ sequence: Range<Int>) async throws {
            for seq in sequence {
                try await publisher.publishAcknowledged(
                    topic, payload: Payloads.reading(ts: start.addingTimeInterval(Double(seq)), seq: seq))
            }
        }
        try await publish(0..<20)
        try await Harness.waitUntil(timeout: 30, "stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == 20
        }
        try await Self.stack(stack, "pg-snapshot")
        try await publish(20..<50)
        try await Harness.waitUntil(timeout: 30, "stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == 50
        }
        try await Self.stack(stack, "pg-rollback")
        try await publish(50..<60)
        try await Harness.waitUntil(timeout: 30, "the readings after the rollback stored") {
            try Harness.count(url, "SELECT count(*) FROM samples WHERE seq >= 50") == 10
        }
        try await Task.sleep(for: .seconds(1))
        #expect(
            try Harness.count(url, "SELECT count(*) FROM samples") == 30, "the 30 committed since the copy are lost")
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 30) == 0)
    }
}
