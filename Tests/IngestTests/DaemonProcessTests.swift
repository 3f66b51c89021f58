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

#if canImport(Glibc)
    import Glibc
#endif

/// The `outletd` executable as a process: started, fed, signalled, restarted.
@Suite(.serialized) struct DaemonProcessTests {
    /// SIGTERM in the middle of a stream: the daemon stops intake, writes everything it received,
    /// exits 0; what the broker still held arrives after a restart. Nothing lost, nothing twice.
    @Test func sigtermMidStreamLosesNothingReceived() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = (0..<20).map { String(format: "plug-%02d", $0) }
        try Harness.register(codes, databaseURL: url)
        let total = 6_000

        let first = try OutletdProcess.start(configuration)
        try await Harness.waitForStatus(configuration, "online")

        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        let start = Date()
        let topicPrefix = configuration.mqtt.topicPrefix
        let publishing = Task {
            for n in 0..<total {
                let code = codes[n % codes.count]
                let seq = n / codes.count
                try publisher.publish(
                    "\(topicPrefix)/\(code)/telemetry",
                    payload: Payloads.reading(ts: start.addingTimeInterval(Double(seq) * 0.1), seq: seq))
                if n % 100 == 99 { try await Task.sleep(for: .milliseconds(50)) }
            }
        }
        // Stop the daemon while the stream is flowing.
        try await Harness.waitUntil(timeout: 30, "some readings stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") > 300
        }
        first.signal(SIGTERM)
        let firstStatus = try await first.waitForExit(timeout: 60)
        #expect(firstStatus == 0, "outletd exited \(firstStatus):\n\(first.output)")
        let firstStop = try #require(first.finalCounters(), "no final counters in:\n\(first.output)")
        let storedAfterFirst = try Harness.count(url, "SELECT count(*) FROM samples")
        #expect(firstStop.received == storedAfterFirst, "received \(firstStop.received), stored \(storedAfterFirst)")
        #expect(firstStop.stored == storedAfterFirst)
        #expect(firstStop.duplicates == 0)
        #expect(storedAfterFirst < total, "the stop should have happened mid-stream")

        try await publishing.value
        try await Harness.waitUntil(timeout: 60, "broker acknowledgements") {
            publisher.acknowledgedCount == UInt64(total)
        }

        // The broker kept the session: a restart receives the rest.
        let second = try OutletdProcess.start(configuration)
        try await Harness.waitUntil(timeout: 60, "every reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == total
        }
        second.signal(SIGINT)
        let secondStatus = try await second.waitForExit(timeout: 60)
        #expect(secondStatus == 0, "outletd exited \(secondStatus):\n\(second.output)")
        let secondStop = try #require(second.finalCounters())
        // QoS 1 is at least once: a message whose callback ran while the DISCONNECT was already queued is
        // stored but not acknowledged, and the broker hands it over again. It is recognised, not stored twice.
        #expect(secondStop.received == secondStop.stored + secondStop.duplicates)
        #expect(firstStop.stored + secondStop.stored == total)
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_summary") == total)
        #expect(try Harness.count(url, "SELECT count(DISTINCT (device_id, seq)) FROM samples") == total)
    }

    /// kill -9 in the middle of a stream, then a restart: every reading the broker handed over is
    /// stored exactly once (from the spool, or from the broker's session), the totals equal the raw
    /// samples, and rejections committed before the crash are not counted again by the replay.
    @Test func sigkillMidStreamStoresEveryReadingOnceAndCountsRejectionsOnce() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = (0..<10).map { String(format: "kill-%02d", $0) }
        try Harness.register(codes, databaseURL: url)
        let total = 5_000
        let topicPrefix = configuration.mqtt.topicPrefix

        let first = try OutletdProcess.start(configuration)
        try await Harness.waitForStatus(configuration, "online")
        let publisher = try Harness.publisher()
        defer { publisher.stop() }

        // Rejections (malformed, unknown code), committed before the crash.
        for _ in 0..<30 { try publisher.publish("\(topicPrefix)/kill-00/telemetry", payload: Array("{".utf8)) }
        for seq in 0..<20 {
            try publisher.publish("\(topicPrefix)/ghost-1/telemetry", payload: Payloads.reading(ts: Date(), seq: seq))
        }
        try await Harness.waitUntil(timeout: 30, "50 rejections counted") {
            try Harness.count(url, "SELECT coalesce(sum(count), 0) FROM rejection_counts") == 50
        }

        let start = Date()
        let publishing = Task {
            for n in 0..<total {
                let seq = n / codes.count
                try publisher.publish(
                    "\(topicPrefix)/\(codes[n % codes.count])/telemetry",
                    payload: Payloads.reading(
                        power: Double(n % 97), ts: start.addingTimeInterval(Double(seq) * 0.1), seq: seq))
                if n % 100 == 99 { try await Task.sleep(for: .milliseconds(40)) }
            }
        }
        try await Harness.waitUntil(timeout: 30, "some readings stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") > 500
        }
        first.signal(SIGKILL)
        _ = try await first.waitForExit(timeout: 30)
        let storedAtKill = try Harness.count(url, "SELECT count(*) FROM samples")
        #expect(storedAtKill < total, "the kill should have happened mid-stream")

        try await publishing.value
        try await Harness.waitUntil(timeout: 60, "broker acknowledgements") {
            publisher.acknowledgedCount == UInt64(total + 50)
        }
        let second = try OutletdProcess.start(configuration)
        try await Harness.waitUntil(timeout: 60, "every reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == total
        }
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(timeout: 60) == 0, "\(second.output)")
        #expect(second.output.contains("resuming from the spool checkpoint"))

        #expect(try Harness.count(url, "SELECT count(DISTINCT (device_id, seq)) FROM samples") == total)
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_totals") == total)
        #expect(
            try Harness.scalar(
                url,
                """
                SELECT count(*) FROM device_power_totals t
                JOIN (SELECT device_id, count(*) AS n, sum(power_watts) AS s, max(power_watts) AS p
                      FROM samples GROUP BY device_id) r USING (device_id)
                WHERE t.sample_count = r.n AND t.power_sum_watts = r.s AND t.peak_power_watts = r.p
                """) == "\(codes.count)")
        #expect(try Harness.count(url, "SELECT sum(count) FROM rejection_counts") == 50)
        #expect(try Harness.count(url, "SELECT message_count FROM pending_devices WHERE code = 'ghost-1'") == 20)
    }

    /// The demo's path: `outletd simulate --register` against a running daemon; every reading the broker
    /// acknowledged ends up in the summary, each with its sequence number.
    @Test func simulatorReadingsReachTheSummary() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let daemon = try OutletdProcess.start(configuration)
        try await Harness.waitForStatus(configuration, "online")
        let environment = [
            "OUTLETD_DATABASE_URL": url, "OUTLETD_MQTT_URL": configuration.mqtt.url,
            "OUTLETD_MQTT_TOPIC_PREFIX": configuration.mqtt.topicPrefix,
        ]
        let output = try await Blocking.run {
            try TestStack.run(
                [
                    try OutletdProcess.executable(), "simulate", "--outlets", "5", "--interval", "0.2", "--count", "4",
                    "--register",
                ],
                environment: environment)
        }
        #expect(output.contains("registered 5 new outlets"))
        #expect(output.contains("published 20, acknowledged 20"), "\(output)")
        do {
            try await Harness.waitUntil(timeout: 30, "20 samples") {
                try Harness.count(url, "SELECT sum(sample_count) FROM device_power_summary") == 20
            }
        } catch {
            let rejections = try Harness.scalar(
                url, "SELECT string_agg(reason || '=' || count, ', ') FROM rejection_counts")
            Issue.record("\(error); rejections: \(rejections)\n\(daemon.output)")
            throw error
        }
        #expect(
            try Harness.scalar(url, "SELECT string_agg(DISTINCT seq::text, ',' ORDER BY seq::text) FROM samples")
                == "1,2,3,4")
        let stats = try TestStack.run([try OutletdProcess.executable(), "stats", "sim-0001"], environment: environment)
        #expect(stats.contains("samples:       4"))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 60) == 0)
    }

    /// The demo's outlets (`simulate --obey-commands`): online and `on` at start, a switch from the CLI confirmed by
    /// their state report, their readings 0 W once off, and offline when the simulation stops.
    @Test func simulatedOutletsObeyCommands() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let daemon = try OutletdProcess.start(configuration)
        try await Harness.waitForStatus(configuration, "online")
        let environment = [
            "OUTLETD_DATABASE_URL": url, "OUTLETD_MQTT_URL": configuration.mqtt.url,
            "OUTLETD_MQTT_TOPIC_PREFIX": configuration.mqtt.topicPrefix,
        ]
        let outletd = try OutletdProcess.executable()
        let simulator = try BackgroundProcess(
            [outletd, "simulate", "--outlets", "2", "--interval", "0.3", "--register", "--obey-commands"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            logPath: "\(try TestStack.shared().directory)/\(TestStack.uniqueName("sim")).log")
        try await Harness.waitUntil(timeout: 20, "the outlets online and on") {
            try Harness.scalar(
                url, "SELECT string_agg(code || ' ' || online || ' ' || reported_state, ',' ORDER BY code) FROM devices"
            )
                == "sim-0001 true on,sim-0002 true on"
        }
        let switched = try await Blocking.run {
            try TestStack.run(
                [outletd, "switch", "sim-0001", "off", "--wait", "--timeout", "20", "--format", "json"],
                environment: environment)
        }
        let result = try #require(try JSONSerialization.jsonObject(with: Data(switched.utf8)) as? [String: Any])
        #expect(result["status"] as? String == "confirmed", "\(switched)")
        #expect(result["latency_ms"] is Int)
        // `switch CODE status`: the outlet's state and its newest commands, as a table or JSON.
        let statusText = try TestStack.run([outletd, "switch", "sim-0001", "status"], environment: environment)
        #expect(statusText.hasPrefix("sim-0001: online, reported off, desired off\n"), "\(statusText)")
        #expect(statusText.contains("confirmed"))
        let status = try #require(
            try JSONSerialization.jsonObject(
                with: Data(
                    try TestStack.run(
                        [outletd, "switch", "sim-0001", "status", "--format", "json"], environment: environment
                    ).utf8)) as? [String: Any])
        #expect(status["online"] as? Bool == true)
        #expect(status["reported_state"] as? String == "off")
        let commands = try #require(status["commands"] as? [[String: Any]])
        #expect(commands.count == 1)
        #expect(commands.first?["status"] as? String == "confirmed")
        #expect(commands.first?["source"] as? String == "cli")
        try await Harness.waitUntil(timeout: 20, "a reading of 0 W after the switch") {
            try Harness.count(
                url,
                """
                SELECT count(*) FROM samples s JOIN devices d ON d.id = s.device_id
                WHERE d.code = 'sim-0001' AND s.power_watts = 0 AND s.current_amperes = 0
                  AND s.received_at > (SELECT finished_at FROM commands ORDER BY id DESC LIMIT 1)
                """) > 0
        }
        simulator.signal(SIGTERM)
        #expect(await simulator.waitForExit(timeout: 30) == 0)
        try await Harness.waitUntil(timeout: 20, "the outlets offline") {
            try Harness.count(url, "SELECT count(*) FROM devices WHERE online IS FALSE") == 2
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 60) == 0)
    }

    /// `rollups.maintain: false` in the daemon: readings are stored without rollups and the daemon
    /// says so; started again with rollups maintained, it names the rebuild to run, and that
    /// rebuild puts every stored reading into the rollups and clears the note.
    @Test func readingsStoredWithoutRollupsReachThemThroughTheRebuildTheDaemonNames() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = ["meter-a", "meter-b", "meter-c"]
        try Harness.register(codes, databaseURL: url)

        let unmaintained = try OutletdProcess.start(
            configuration, extraEnvironment: ["OUTLETD_ROLLUPS_MAINTAIN": "false"])
        try await Harness.waitForStatus(configuration, "online")
        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        let start = Date().addingTimeInterval(-120)
        for seq in 0..<10 {
            for code in codes {
                try publisher.publish(
                    "\(configuration.mqtt.topicPrefix)/\(code)/telemetry",
                    payload: Payloads.reading(ts: start.addingTimeInterval(Double(seq) * 5), seq: seq))
            }
        }
        try await Harness.waitUntil(timeout: 30, "30 samples") {
            try Harness.count(url, "SELECT count(*) FROM samples") == 30
        }
        unmaintained.signal(SIGTERM)
        #expect(try await unmaintained.waitForExit(timeout: 60) == 0)
        #expect(unmaintained.output.contains("rollups are not maintained"), "\(unmaintained.output)")
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute") == 0)
        #expect(
            try Harness.count(url, "SELECT count(*) FROM rollup_settings WHERE unmaintained_since IS NOT NULL") == 1)

        let maintained = try OutletdProcess.start(configuration)
        try await Harness.waitUntil(timeout: 30, "the rebuild named") {
            maintained.output.contains("rollup rebuild --since")
        }
        maintained.signal(SIGTERM)
        #expect(try await maintained.waitForExit(timeout: 60) == 0)
        let named = try #require(
            maintained.output.firstRange(of: /rollup rebuild --since (\S+)`/).map { maintained.output[$0] })
        let since = try #require(named.firstMatch(of: /--since (\S+)`/)?.1)

        let rebuild = try TestStack.run(
            [try OutletdProcess.executable(), "rollup", "rebuild", "--since", String(since)],
            environment: ["OUTLETD_DATABASE_URL": url])
        #expect(rebuild.contains("are in the rollups now"), "\(rebuild)")
        // Not a terminal: progress as lines, the last one at 100 %, no bar or escape sequences.
        #expect(rebuild.contains("rollup rebuild: 100% done in "), "\(rebuild)")
        #expect(!rebuild.contains("\u{1B}") && !rebuild.contains("#"), "\(rebuild)")
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM power_rollups_minute") == 30)
        #expect(
            try Harness.count(url, "SELECT count(*) FROM rollup_settings WHERE unmaintained_since IS NOT NULL") == 0)
    }

    @Test func refusesToStartWithAnInvalidConfiguration() async throws {
        var configuration = try Harness.configuration(databaseURL: "postgresql://127.0.0.1:1/none")
        configuration.mqtt.url = "mqtt://127.0.0.1:1"
        let process = try OutletdProcess.start(
            configuration, extraEnvironment: ["OUTLETD_INGEST_BATCH_MAX_ROWS": "many"])
        let status = try await process.waitForExit(timeout: 30)
        #expect(status == 78)
        #expect(process.output.contains("ingest.batch_max_rows: expected a whole number, got \"many\""))
    }

    @Test func cliRegistersListsAndShowsOutlets() throws {
        let url = try Harness.migratedDatabase()
        let environment = ["OUTLETD_DATABASE_URL": url]
        let outletd = try OutletdProcess.executable()
        _ = try TestStack.run(
            [outletd, "device", "add", "kitchen-1", "--name", "Kitchen fridge", "--owner", "ana"],
            environment: environment)
        let list = try TestStack.run([outletd, "device", "list"], environment: environment)
        #expect(list.contains("kitchen-1"))
        #expect(list.contains("Kitchen fridge"))
        #expect(throws: TestStackError.self) {
            try TestStack.run([outletd, "device", "add", "kitchen-1"], environment: environment)
        }
        #expect(throws: TestStackError.self) {
            try TestStack.run([outletd, "device", "add", "bad code"], environment: environment)
        }
        _ = try TestStack.run([outletd, "device", "disable", "kitchen-1"], environment: environment)
        let shown = try TestStack.run([outletd, "device", "show", "kitchen-1"], environment: environment)
        #expect(shown.contains("enabled:      false"))
        let stats = try TestStack.run([outletd, "stats", "kitchen-1"], environment: environment)
        #expect(stats.contains("samples:       0"))
        let removed = try TestStack.run([outletd, "device", "remove", "kitchen-1", "--yes"], environment: environment)
        #expect(removed.contains("removed kitchen-1"))
        #expect(try Harness.count(url, "SELECT count(*) FROM devices") == 0)
    }
}
