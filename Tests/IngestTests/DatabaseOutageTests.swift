import Foundation
import TestSupport
import Testing

@testable import Ingest

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
