import Foundation
import ServiceTestSupport
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

/// A parsed Prometheus text exposition: the samples by series (`name{labels}` as written), and the TYPE of
/// each family. Fails on a line that is neither a comment nor `series value`.
struct PrometheusText {
    var samples: [String: Double] = [:]
    var types: [String: String] = [:]
    var badLines: [String] = []

    init(_ text: String) {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 {
                    types[String(parts[2])] = String(parts[3])
                } else {
                    badLines.append(String(line))
                }
            } else if line.hasPrefix("# HELP ") {
                continue
            } else if let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) {
                samples[String(line[..<space])] = value
            } else {
                badLines.append(String(line))
            }
        }
    }
}

@Suite struct PrometheusExpositionTests {
    @Test func exportsTheCountersHistogramsProcessAndBuild() throws {
        let metrics = IngestMetrics(build: BuildInfo(version: "1.2.3", commit: "abc\"def"))
        metrics.messageReceived()
        metrics.messageReceived()
        metrics.messageIgnored(.noMeter)
        metrics.batchCommitted(stored: 42, duplicates: 1, rejected: [.malformedJSON: 3], seconds: 0.003)
        metrics.batchCommitted(stored: 0, duplicates: 0, rejected: [:], seconds: 0.2)
        let now = Date()
        metrics.batchLatencies(
            receivedAt: [now.addingTimeInterval(-0.002), now.addingTimeInterval(-2)], committedAt: now)
        metrics.setBrokerConnected(true)
        metrics.commandResultPublished("confirmed", secondsSinceRequest: 0.04)
        metrics.commandResultPublished("confirmed", secondsSinceRequest: 0.3)
        metrics.commandResultPublished("timed_out", secondsSinceRequest: 10)
        metrics.commandResultPublished("timed_out")
        let exposition = PrometheusExposition(metrics: metrics)
        let process = try ProcessStatistics.read()
        let text = PrometheusText(exposition.render(process: process))

        #expect(text.badLines == [])
        #expect(text.samples["outletd_messages_received_total"] == 2)
        #expect(text.samples["outletd_readings_stored_total"] == 42)
        #expect(text.samples["outletd_readings_duplicate_total"] == 1)
        #expect(text.samples["outletd_messages_ignored_total{kind=\"no_meter\"}"] == 1)
        #expect(text.samples["outletd_rejected_total{reason=\"malformed_json\"}"] == 3)
        #expect(text.samples["outletd_rejected_total{reason=\"unknown_device\"}"] == 0, "every reason is exported")
        #expect(text.types["outletd_rejected_total"] == "counter")
        #expect(text.samples["outletd_batches_committed_total"] == 2)
        #expect(text.types["outletd_commit_seconds"] == "histogram")
        #expect(text.samples["outletd_commit_seconds_bucket{le=\"0.005\"}"] == 1)
        #expect(text.samples["outletd_commit_seconds_bucket{le=\"0.25\"}"] == 2)
        #expect(text.samples["outletd_commit_seconds_bucket{le=\"+Inf\"}"] == 2)
        #expect(text.samples["outletd_commit_seconds_count"] == 2)
        #expect(text.samples["outletd_batch_rows_sum"] == 46)
        #expect(text.samples["outletd_broker_connected"] == 1)
        #expect(text.samples["outletd_database_connected"] == 1, "a commit reached the database")
        #expect(text.samples["outletd_command_results_total{result=\"confirmed\"}"] == 2)
        #expect(text.samples["outletd_command_results_total{result=\"timed_out\"}"] == 2)

        // Latency histograms: receipt → commit for each message, request → confirmed for confirmations only.
        #expect(text.types["outletd_ingest_latency_seconds"] == "histogram")
        #expect(text.samples["outletd_ingest_latency_seconds_bucket{le=\"0.005\"}"] == 1)
        #expect(text.samples["outletd_ingest_latency_seconds_bucket{le=\"5.0\"}"] == 2)
        #expect(text.samples["outletd_ingest_latency_seconds_count"] == 2)
        #expect(text.samples["outletd_command_confirm_seconds_count"] == 2)
        #expect(text.samples["outletd_command_confirm_seconds_bucket{le=\"0.05\"}"] == 1)
        #expect(abs((text.samples["outletd_command_confirm_seconds_sum"] ?? 0) - 0.34) < 1e-6)

        // Per-message counters are carried by their increase at each exposition, never twice.
        metrics.messageReceived()
        let again = PrometheusText(exposition.render(process: nil))
        #expect(again.samples["outletd_messages_received_total"] == 3)
        #expect(again.samples["outletd_messages_ignored_total{kind=\"no_meter\"}"] == 1)
        #expect(again.samples["outletd_readings_duplicate_total"] == 1)

        // The build, without an `instance` label (Prometheus adds its own when it scrapes).
        #expect(text.samples["outletd_build_info{version=\"1.2.3\",commit=\"abc\\\"def\"}"] == 1)
        #expect(!text.samples.keys.contains { $0.contains("instance=") })

        // The process, as /proc says.
        #expect(text.types["process_cpu_seconds_total"] == "counter")
        #expect(text.samples["process_cpu_seconds_total"] == process.cpuSeconds)
        let resident = try #require(text.samples["process_resident_memory_bytes"])
        #expect(resident > 1_000_000 && resident < 16_000_000_000)
        #expect((text.samples["process_open_fds"] ?? 0) >= 3)
        let started = try #require(text.samples["process_start_time_seconds"])
        #expect(started <= Date().timeIntervalSince1970 && started > Date().timeIntervalSince1970 - 86_400 * 7)
    }

    @Test func processCPUCounterOnlyMovesForward() {
        let exposition = PrometheusExposition(metrics: IngestMetrics())
        var statistics = ProcessStatistics(
            cpuSeconds: 1.5, residentMemoryBytes: 1, virtualMemoryBytes: 1, openFileDescriptors: 1,
            maxFileDescriptors: 1, startTimeSeconds: 1)
        _ = exposition.render(process: statistics)
        statistics.cpuSeconds = 2.25
        #expect(PrometheusText(exposition.render(process: statistics)).samples["process_cpu_seconds_total"] == 2.25)
        statistics.cpuSeconds = 2
        #expect(PrometheusText(exposition.render(process: statistics)).samples["process_cpu_seconds_total"] == 2.25)
    }

    @Test func parsesProcStat() throws {
        // The command name may hold spaces and parentheses; fields are counted after its last `)`.
        let stat =
            "4242 (out let) d)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 120000 104857600 2560 "
            + "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0"
        let parsed = try #require(
            ProcessStatistics.parse(stat: stat, bootTime: 1_700_000_000, ticksPerSecond: 100, pageSize: 4_096))
        #expect(parsed.cpuSeconds == 3)
        #expect(parsed.startTimeSeconds == 1_700_001_200)
        #expect(parsed.virtualMemoryBytes == 104_857_600)
        #expect(parsed.residentMemoryBytes == 2_560 * 4_096)
        #expect(
            ProcessStatistics.parse(stat: "4242 (x) S 1 2", bootTime: 0, ticksPerSecond: 100, pageSize: 4_096) == nil)
        #expect(ProcessStatistics.parseBootTime("cpu  1 2 3\nbtime 1700000000\nprocesses 5\n") == 1_700_000_000)
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
        // The start-up line names the build.
        let build = try CLITests.embeddedBuild()
        #expect(daemon.output.contains("outletd \(build.version) starting"))
        #expect(daemon.output.contains("commit=\(build.commit)"))
    }
}
