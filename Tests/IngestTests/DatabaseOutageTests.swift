import Foundation
import ServiceTestSupport
import TestSupport
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

/// PostgreSQL goes away while readings keep coming: outletd keeps receiving into the spool,
/// reconnects, re-creates its session state and drains the backlog. A private stack, since the
/// test restarts its server.
@Suite(.serialized) struct DatabaseOutageTests {
    @Test func spoolBridgesADatabaseOutageAndTheBacklogDrains() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = stack.mqttURL
        configuration.database.reconnectDelayMaxSeconds = 1
        let codes = (0..<5).map { "outage-\($0)" }
        try Harness.register(codes, databaseURL: url)
        let topicPrefix = configuration.mqtt.topicPrefix
        let start = Date()
        let total = 1_500

        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher(on: stack)
            defer { publisher.stop() }
            func publish(_ range: Range<Int>) async throws {
                for n in range {
                    let seq = n / codes.count
                    try publisher.publish(
                        "\(topicPrefix)/\(codes[n % codes.count])/telemetry",
                        payload: Payloads.reading(ts: start.addingTimeInterval(Double(seq) * 0.1), seq: seq))
                    if n % 50 == 49 { try await Task.sleep(for: .milliseconds(50)) }
                }
            }
            try await publish(0..<300)
            try await Harness.waitUntil(timeout: 30, "300 stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 300
            }

            let outage = Task { try await Blocking.run { try stack.restartPostgres(downFor: 4) } }
            try await Task.sleep(for: .milliseconds(300))
            try await publish(300..<total)
            let during = service.metrics.snapshot()
            #expect(during.spoolRecordsPending > 0, "readings wait in the spool while the database is down")
            #expect(during.spoolOldestRecordAgeSeconds > 0)
            #expect(during.spoolBytes > 0)
            try await outage.value

            try await Harness.waitUntil(timeout: 60, "the backlog drained") {
                try Harness.count(url, "SELECT count(*) FROM samples") == total
            }
            try await Harness.waitUntil(timeout: 10, "the spool empty") {
                service.metrics.snapshot().spoolRecordsPending == 0
            }
            #expect(service.metrics.snapshot().databaseErrors > 0)
        }
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_totals") == total)
    }
}

/// The connection breaks after `COMMIT` reached the server and before its answer came back: the batch is
/// committed, but the writer cannot know. It must find out (from the checkpoint the transaction stored)
/// instead of writing the batch again, which would count its rejections and pending codes twice.
@Suite(.serialized) struct AmbiguousCommitTests {
    @Test func aBatchWhoseCommitAnswerWasLostIsAppliedOnce() async throws {
        let url = try Harness.migratedDatabase()
        let proxy = try CommitCuttingProxy(targetPort: try TestStack.shared().postgresPort)
        defer { proxy.stop() }
        var configuration = try Harness.configuration(databaseURL: proxy.url(for: url))
        configuration.database.reconnectDelayMaxSeconds = 1
        // One batch for everything published below.
        configuration.ingest.batchMaxDelayMilliseconds = 1_000
        try Harness.register(["amb-1"], databaseURL: url)
        let prefix = configuration.mqtt.topicPrefix
        let start = Date().addingTimeInterval(-30)

        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            // A first batch makes the writer's connection one that has run a COPY.
            try publisher.publish("\(prefix)/amb-1/telemetry", payload: Payloads.reading(power: 10, ts: start, seq: 0))
            try await Harness.waitUntil(timeout: 30, "the first reading stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }
            proxy.armCut()
            // One batch with a sample, rejections (stored and counted) and a pending code.
            let second = String(
                decoding: Payloads.reading(power: 20, ts: start.addingTimeInterval(1), seq: 1), as: UTF8.self)
            try publisher.publish("\(prefix)/amb-1/telemetry", payload: Array("[\(second), {\"voltage\": true}]".utf8))
            try publisher.publish("\(prefix)/amb-1/telemetry", payload: Array("not json".utf8))
            try publisher.publish(
                "\(prefix)/amb-stranger/telemetry", payload: Payloads.reading(ts: start.addingTimeInterval(2), seq: 2))
            try await Harness.waitUntil(timeout: 30, "the commit's answer cut") { proxy.cuts == 1 }
            try await Harness.waitUntil(timeout: 30, "the spool committed") {
                service.metrics.snapshot().spoolRecordsPending == 0
            }
            #expect(service.metrics.snapshot().databaseErrors > 0, "the writer saw its connection break")
        }
        #expect(proxy.cuts == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 2)
        #expect(try Harness.count(url, "SELECT sample_count FROM device_power_totals") == 2)
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM power_rollups_minute") == 2)
        #expect(try Harness.count(url, "SELECT coalesce(sum(count), 0) FROM rejection_counts") == 3)
        #expect(try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = 'unknown_device'") == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM rejected_messages") == 3)
        #expect(try Harness.count(url, "SELECT message_count FROM pending_devices WHERE code = 'amb-stranger'") == 1)
    }
}
