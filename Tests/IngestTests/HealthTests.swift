import Foundation
import Telemetry
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

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct ReadinessTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var broker: Bool
        var database: Bool
        var backlog: Int
        var reasons: [String]
        var testDescription: String { "broker \(broker) database \(database) backlog \(backlog)" }
    }

    @Test(arguments: [
        Case(broker: true, database: true, backlog: 0, reasons: []),
        Case(broker: true, database: true, backlog: 100, reasons: []),
        Case(broker: false, database: true, backlog: 0, reasons: ["broker disconnected"]),
        Case(broker: true, database: false, backlog: 0, reasons: ["database unreachable"]),
        Case(broker: true, database: true, backlog: 101, reasons: ["backlog of 101 messages is over 100"]),
        Case(
            broker: false, database: false, backlog: 500,
            reasons: ["broker disconnected", "database unreachable", "backlog of 500 messages is over 100"]),
    ])
    func judges(_ example: Case) {
        var snapshot = IngestMetrics.Snapshot()
        snapshot.brokerConnected = example.broker
        snapshot.databaseConnected = example.database
        snapshot.spoolRecordsPending = example.backlog
        let readiness = Readiness.evaluate(snapshot, maxBacklogMessages: 100)
        #expect(readiness.reasons == example.reasons)
        #expect(readiness.isReady == example.reasons.isEmpty)
        let json = try? JSONSerialization.jsonObject(with: Data(readiness.json.utf8)) as? [String: Any]
        #expect(json?["ready"] as? Bool == example.reasons.isEmpty)
    }
}

@Suite struct PrometheusExpositionTests {
    @Test func everyLineIsACommentOrASample() {
        var snapshot = IngestMetrics.Snapshot()
        snapshot.readingsStored = 42
        snapshot.rejected[.malformedJSON] = 3
        snapshot.commitSeconds.observe(0.003)
        snapshot.commitSeconds.observe(0.2)
        snapshot.brokerConnected = true
        snapshot.commandResults = ["confirmed": 4, "timed_out": 1]
        let text = PrometheusExposition.render(snapshot, instance: "a\"b")
        for line in text.split(separator: "\n") {
            let isComment = line.hasPrefix("# HELP outletd_") || line.hasPrefix("# TYPE outletd_")
            let isSample = line.hasPrefix("outletd_") && line.split(separator: " ").count == 2
            #expect(isComment || isSample, "\(line)")
        }
        #expect(text.contains("outletd_readings_stored_total 42\n"))
        #expect(text.contains("outletd_rejected_total{reason=\"malformed_json\"} 3\n"))
        #expect(text.contains("outletd_rejected_total{reason=\"unknown_device\"} 0\n"))
        #expect(text.contains("outletd_commit_seconds_bucket{le=\"0.005\"} 1\n"))
        #expect(text.contains("outletd_commit_seconds_bucket{le=\"0.25\"} 2\n"))
        #expect(text.contains("outletd_commit_seconds_bucket{le=\"+Inf\"} 2\n"))
        #expect(text.contains("outletd_commit_seconds_count 2\n"))
        #expect(text.contains("outletd_broker_connected 1\n"))
        #expect(text.contains("outletd_command_results_total{result=\"confirmed\"} 4\n"))
        #expect(text.contains("outletd_info{instance=\"a\\\"b\"} 1\n"))
    }
}

/// The HTTP endpoints of a running daemon, including `/readyz` through a database outage.
@Suite(.serialized) struct HealthEndpointTests {
    @Test func servesMetricsHealthAndReadinessThroughAnOutage() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = stack.mqttURL
        try Harness.register(["plug-1"], databaseURL: url)
        let port = try freePort()
        let daemon = try OutletdProcess.start(
            configuration, extraEnvironment: ["OUTLETD_HTTP_LISTEN": "127.0.0.1:\(port)"])
        try await Harness.waitForStatus(configuration, "online")

        #expect(HTTPProbe.get(port: port, path: "/healthz")?.status == 200)
        try await Harness.waitUntil(timeout: 10, "ready") { HTTPProbe.get(port: port, path: "/readyz")?.status == 200 }

        let publisher = try Harness.publisher(on: stack)
        defer { publisher.stop() }
        try await publisher.publishAcknowledged(
            "\(configuration.mqtt.topicPrefix)/plug-1/telemetry", payload: Payloads.reading(ts: Date(), seq: 1))
        try await Harness.waitUntil(timeout: 10, "the reading in /metrics") {
            HTTPProbe.get(port: port, path: "/metrics")?.body.contains("outletd_readings_stored_total 1\n") == true
        }
        let metrics = try #require(HTTPProbe.get(port: port, path: "/metrics"))
        #expect(metrics.headers.contains("text/plain; version=0.0.4"))
        #expect(metrics.body.contains("outletd_database_connected 1"))
        #expect(HTTPProbe.get(port: port, path: "/nope")?.status == 404)

        // PostgreSQL away for a while: not ready, with the reason; back: ready again.
        let outage = Task { try await Blocking.run { try stack.restartPostgres(downFor: 4) } }
        try await Harness.waitUntil(timeout: 10, "503 while the database is down") {
            let readiness = HTTPProbe.get(port: port, path: "/readyz")
            return readiness?.status == 503 && readiness?.body.contains("database unreachable") == true
        }
        #expect(HTTPProbe.get(port: port, path: "/healthz")?.status == 200)
        try await outage.value
        try await Harness.waitUntil(timeout: 30, "ready after the outage") {
            HTTPProbe.get(port: port, path: "/readyz")?.status == 200
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 30) == 0)
    }
}
