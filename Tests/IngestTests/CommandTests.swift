import Foundation
import Logging
import MQTT
import Postgres
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

/// Switching outlets end to end: real mosquitto and PostgreSQL, an in-process outletd, simulated outlets.
@Suite(.serialized) struct CommandTests {
    struct Setup {
        var url: String
        var configuration: OutletdConfiguration
        var prefix: String { configuration.mqtt.topicPrefix }
    }

    static func setup(codes: [String] = ["plug-1"], confirmTimeout: Double = 10, expiry: Double = 300) throws -> Setup {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.commands.confirmTimeoutSeconds = confirmTimeout
        configuration.commands.offlineExpirySeconds = expiry
        configuration.commands.sweepIntervalMilliseconds = 50
        try Harness.register(codes, databaseURL: url)
        return Setup(url: url, configuration: configuration)
    }

    /// The id of the newest command.
    static func lastCommandID(_ url: String) throws -> Int64 {
        Int64(try Harness.scalar(url, "SELECT max(id) FROM commands")) ?? -1
    }

    /// The id of the command a request sent over MQTT created: the broker's acknowledgement of the publish says
    /// nothing of when outletd has read it, so this waits for a command newer than `previous` (0: the first).
    static func commandID(after previous: Int64 = 0, _ url: String) async throws -> Int64 {
        try await Harness.waitUntil(timeout: 30, "a command newer than \(previous)") {
            try lastCommandID(url) > previous
        }
        return try lastCommandID(url)
    }

    @Test func mqttRequestIsSentAndConfirmed() async throws {
        let setup = try Self.setup()
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged(
                "\(setup.prefix)/plug-1/set",
                payload: Array(#"{"state":"on","request_id":"r-1","requested_by":"ana"}"#.utf8))
            let id = try await Self.commandID(setup.url)
            try await watcher.waitFor(id, ["accepted", "sent", "confirmed"])
            #expect(watcher.seen.value.first { $0.commandID == id }?.requestID == "r-1")
        }
        #expect(outlet.commands.value.map(\.state) == [.on])
        #expect(
            try Harness.scalar(
                setup.url, "SELECT status, source, requested_by, request_id, state FROM commands")
                == "confirmed|mqtt|ana|r-1|on")
        #expect(
            try Harness.scalar(
                setup.url, "SELECT string_agg(status, ',' ORDER BY id) FROM command_transitions")
                == "queued,sent,confirmed")
        #expect(try Harness.scalar(setup.url, "SELECT desired_state, reported_state FROM devices") == "on|on")
        #expect(try Harness.count(setup.url, "SELECT count(*) FROM outlets_out_of_sync") == 0)
    }

    @Test func invalidRequestsAreRejectedWithAReasonAndCounted() async throws {
        let setup = try Self.setup(codes: ["plug-1", "plug-off"])
        _ = try TestStack.shared().psql(setup.url, "UPDATE devices SET enabled = false WHERE code = 'plug-off'")
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            let requests: [(String, String)] = [
                ("stranger", "on"), ("plug-off", "on"), ("plug-1", "dim"), ("plug-1", #"{"state":"#),
            ]
            for (code, payload) in requests {
                try await publisher.publishAcknowledged("\(setup.prefix)/\(code)/set", payload: Array(payload.utf8))
            }
            try await Harness.waitUntil(timeout: 15, "four rejections") {
                watcher.seen.value.filter { $0.result == "rejected" }.count == 4
            }
            let reasons = watcher.seen.value.compactMap { $0.reason.flatMap(CommandReason.init(parsing:))?.code }
            #expect(reasons == ["unknown_device", "disabled_device", "invalid_command", "malformed_json"])
            // Refused before a command existed, and still with its time, like every other transition.
            #expect(
                watcher.seen.value.allSatisfy { $0.at.flatMap(RFC3339.date(from:)) != nil }, "\(watcher.seen.value)")
            #expect(service.metrics.snapshot().rejected[.invalidCommand] == 1)
        }
        #expect(try Harness.count(setup.url, "SELECT count(*) FROM commands") == 0)
        #expect(try Harness.count(setup.url, "SELECT sum(count) FROM rejection_counts") == 4)
        #expect(
            try Harness.scalar(setup.url, "SELECT topic FROM rejected_messages WHERE reason = 'invalid_command'")
                == "\(setup.prefix)/plug-1/set")
    }

    /// The reason of `id`'s result `result`, read back from its `code: detail` shape.
    static func reason(_ watcher: ResultWatcher, _ id: Int64, _ result: String) -> CommandReason? {
        watcher.seen.value.first { $0.commandID == id && $0.result == result }?.reason.flatMap(
            CommandReason.init(parsing:))
    }

    /// Commands the database refuses (a disabled outlet, a toggle with no state to toggle) end with a reason
    /// of the same `code: detail` shape as every other, and their results carry their time.
    @Test func refusedCommandsHaveTheReasonShapeOfEveryTransition() async throws {
        let setup = try Self.setup(codes: ["plug-1", "plug-off"])
        _ = try TestStack.shared().psql(setup.url, "UPDATE devices SET enabled = false WHERE code = 'plug-off'")
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            let disabled = Int64(try Harness.scalar(setup.url, "SELECT request_switch('plug-off', true, 'x')")) ?? -1
            let toggled =
                Int64(
                    try Harness.scalar(
                        setup.url, "SELECT outletd_enqueue_command('plug-1', 'toggle', 'sql', 'x', NULL)")) ?? -1
            try await watcher.waitFor(disabled, ["rejected"])
            try await watcher.waitFor(toggled, ["rejected"])
            #expect(
                Self.reason(watcher, disabled, "rejected")
                    == CommandReason(RejectionReason.disabledDevice, "device plug-off is disabled"))
            #expect(Self.reason(watcher, toggled, "rejected")?.code == "unknown_state")
            #expect(watcher.seen.value.allSatisfy { $0.at.flatMap(RFC3339.date(from:)) != nil })
        }
        #expect(
            try Harness.scalar(setup.url, "SELECT count(*) FROM commands WHERE reason ~ '^[a-z_]+: .+'") == "2")
    }

    @Test func ignoredCommandTimesOut() async throws {
        let setup = try Self.setup(confirmTimeout: 1)
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix, mode: .ignore)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("off".utf8))
            let id = try await Self.commandID(setup.url)
            try await watcher.waitFor(id, ["accepted", "sent", "timed_out"])
            #expect(Self.reason(watcher, id, "timed_out")?.code == "no_confirmation")
            // Desired off, never reported: listed once the confirmation window passed.
            #expect(try Harness.scalar(setup.url, "SELECT code FROM outlets_out_of_sync") == "plug-1")
        }
        #expect(outlet.commands.value.count == 1)
        let elapsed = try Harness.scalar(
            setup.url, "SELECT round(extract(epoch FROM finished_at - sent_at)::numeric, 1) FROM commands")
        #expect((Double(elapsed) ?? 0) >= 1.0 && (Double(elapsed) ?? 9) < 2.0, "\(elapsed)")
    }

    @Test func commandForAnOfflineOutletIsHeldAndSentWhenItComesBack() async throws {
        let setup = try Self.setup()
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            try await outlet.set(.offline)
            try await Harness.waitUntil(timeout: 10, "offline recorded") {
                try Harness.scalar(setup.url, "SELECT online FROM devices") == "f"
            }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("on".utf8))
            let id = try await Self.commandID(setup.url)
            try await watcher.waitFor(id, ["accepted"])
            try await Task.sleep(for: .milliseconds(500))
            #expect(watcher.results(of: id) == ["accepted"])
            #expect(outlet.commands.value.isEmpty)
            try await outlet.set(.obey)
            try await watcher.waitFor(id, ["accepted", "sent", "confirmed"])
        }
        #expect(try Harness.scalar(setup.url, "SELECT online, reported_state FROM devices") == "t|on")
    }

    /// An outlet registered a moment ago announces its availability and state before the registry has heard of it
    /// (its NOTIFY is late, or here: never sent): the relay asks the database instead of rejecting the reports as
    /// `unknown_device`.
    @Test func reportsOfAnOutletTheRegistryHasNotHeardOfYetAreRecorded() async throws {
        let setup = try Self.setup(codes: ["plug-1"])
        try await Harness.withService(setup.configuration) { _ in
            // Registered with the triggers off (replica role): no NOTIFY, the registry learns of it only on its
            // periodic reload (registry.refresh_interval_seconds, 300 s).
            try Harness.scalar(
                setup.url,
                """
                BEGIN; SET LOCAL session_replication_role = replica;
                INSERT INTO devices (code, name) VALUES ('late-1', 'late'); COMMIT
                """)
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged(
                "\(setup.prefix)/late-1/availability", payload: Array("online".utf8))
            try await publisher.publishAcknowledged("\(setup.prefix)/late-1/state", payload: Array("on".utf8))
            try await Harness.waitUntil(timeout: 10, "the reports of late-1 recorded") {
                try Harness.scalar(setup.url, "SELECT online, reported_state FROM devices WHERE code = 'late-1'")
                    == "t|on"
            }
        }
        #expect(try Harness.count(setup.url, "SELECT count(*) FROM rejected_messages") == 0)
    }

    @Test func heldCommandExpires() async throws {
        let setup = try Self.setup(expiry: 1)
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            try await outlet.set(.offline)
            try await Harness.waitUntil(timeout: 10, "offline recorded") {
                try Harness.scalar(setup.url, "SELECT online FROM devices") == "f"
            }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("on".utf8))
            let id = try await Self.commandID(setup.url)
            try await watcher.waitFor(id, ["accepted", "expired"])
            #expect(Self.reason(watcher, id, "expired")?.code == "offline")
            try await outlet.set(.obey)
            try await Task.sleep(for: .milliseconds(500))
            #expect(watcher.results(of: id) == ["accepted", "expired"])
        }
        #expect(outlet.commands.value.isEmpty)
    }

    @Test func newerCommandSupersedesThePendingOne() async throws {
        let setup = try Self.setup()
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix, mode: .ignore)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("on".utf8))
            let first = try await Self.commandID(setup.url)
            try await watcher.waitFor(first, ["accepted", "sent"])
            try await outlet.set(.obey)
            // toggle resolves against the desired state (on) → off.
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("toggle".utf8))
            let second = try await Self.commandID(after: first, setup.url)
            try await watcher.waitFor(first, ["accepted", "sent", "superseded"])
            try await watcher.waitFor(second, ["accepted", "sent", "confirmed"])
            #expect(
                Self.reason(watcher, first, "superseded")
                    == CommandReason(.superseded, "superseded by command \(second)"))
        }
        #expect(
            try Harness.scalar(setup.url, "SELECT requested, state FROM commands ORDER BY id DESC LIMIT 1")
                == "toggle|off")
        #expect(outlet.commands.value.map(\.state) == [.on, .off])
    }

    @Test func sqlFunctionAndDesiredStateUpdateFollowTheSameLifecycle() async throws {
        let setup = try Self.setup()
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            let id = Int64(try Harness.scalar(setup.url, "SELECT request_switch('plug-1', true, 'dashboard')")) ?? -1
            try await watcher.waitFor(id, ["accepted", "sent", "confirmed"])
            _ = try TestStack.shared().psql(setup.url, "UPDATE devices SET desired_state = 'off' WHERE code = 'plug-1'")
            let second = try Self.lastCommandID(setup.url)
            #expect(second > id)
            try await watcher.waitFor(second, ["accepted", "sent", "confirmed"])
        }
        #expect(
            try Harness.scalar(setup.url, "SELECT string_agg(source || ':' || state, ',' ORDER BY id) FROM commands")
                == "sql:on,sql:off")
        #expect(try Harness.scalar(setup.url, "SELECT requested_by FROM commands ORDER BY id LIMIT 1") == "dashboard")
        #expect(outlet.commands.value.map(\.state) == [.on, .off])
        #expect(throws: (any Error).self) {
            try Harness.scalar(setup.url, "SELECT request_switch('nobody', true, 'x')")
        }
    }

    /// Two instances on one database and broker: the request reaches one (shared subscription), the command is
    /// published once, the NOTIFY of a SQL request reaches both and one claims it.
    @Test func twoInstancesPublishEachCommandOnce() async throws {
        let setup = try Self.setup()
        var second = setup.configuration
        second.instanceID = TestStack.uniqueName("outletd-test-b-")
        second.spool.directory = "\(try TestStack.shared().directory)/spool-\(second.instanceID)"
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        try await Harness.withService(setup.configuration) { _ in
            try await Harness.withService(second) { _ in
                let publisher = try Harness.publisher()
                defer { publisher.stop() }
                var ids: [Int64] = []
                for n in 0..<6 {
                    if n % 2 == 0 {
                        try await publisher.publishAcknowledged(
                            "\(setup.prefix)/plug-1/set", payload: Array((n % 4 == 0 ? "on" : "off").utf8))
                        try await Harness.waitUntil(timeout: 10, "command \(n + 1) recorded") {
                            try Harness.count(setup.url, "SELECT count(*) FROM commands") == n + 1
                        }
                        ids.append(try Self.lastCommandID(setup.url))
                    } else {
                        ids.append(
                            Int64(try Harness.scalar(setup.url, "SELECT request_switch('plug-1', \(n % 4 == 1), 'x')"))
                                ?? -1)
                    }
                    // Each result is published once, but two instances may publish one command's results,
                    // so their order on the wire is not guaranteed (docs/COMMANDS.md).
                    try await watcher.waitFor(ids[n], ["accepted", "sent", "confirmed"], inAnyOrder: true)
                }
                try await Task.sleep(for: .milliseconds(500))
                #expect(outlet.commands.value.map(\.id) == ids)
                #expect(watcher.seen.value.count == 18)
            }
        }
        #expect(try Harness.count(setup.url, "SELECT count(*) FROM commands WHERE status = 'confirmed'") == 6)
        #expect(try Harness.count(setup.url, "SELECT count(DISTINCT sent_by) FROM commands") >= 1)
    }

    /// A command held for an offline outlet survives a restart of outletd and is sent when the outlet is back.
    /// outletd stopping before its broker connection came up (a SIGTERM right after start): the relay
    /// still handles the report it received, without the broker, and ends. It used to wait for the
    /// broker for ever, and the daemon never exited (9 of 30 such starts hung).
    @Test func relayStoppedBeforeTheBrokerConnectedHandlesWhatItHasAndEnds() async throws {
        let setup = try Self.setup()
        var configuration = setup.configuration
        configuration.mqtt.url = "mqtt://127.0.0.1:1"
        let client = try MQTTClient(
            configuration: MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID)
        ) { _ in }
        let registry = DeviceRegistry()
        registry.replaceAll([:])
        let inbox = CommandInbox(maxEvents: 10)
        let relay = DatabaseWorker(
            CommandRelay(
                inbox: inbox, registry: registry, client: client, settings: CommandRelay.Settings(configuration),
                metrics: IngestMetrics(), logger: Logger(label: "test")),
            connectionString: setup.url, reconnectDelayMax: 1, logger: Logger(label: "test"))
        relay.start()
        let report = RawMessage(topic: "\(setup.prefix)/ghost-1/state", payload: Array("on".utf8), receivedAt: Date())
        #expect(inbox.append(report, route: .native(.state, code: "ghost-1"), waitForCommit: false))
        inbox.close()
        let ended = Locked(false)
        let finishing = Task {
            await relay.stop()
            ended.value = true
        }
        try await Harness.waitUntil(timeout: 10, "the relay ended") { ended.value }
        await finishing.value
        #expect(
            try Harness.count(setup.url, "SELECT count(*) FROM rejection_counts WHERE reason = 'unknown_device'") == 1)
    }

    @Test func pendingCommandSurvivesARestart() async throws {
        let setup = try Self.setup()
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let watcher = try ResultWatcher(prefix: setup.prefix)
        defer { watcher.stop() }
        let id: Int64 = try await Harness.withService(setup.configuration) { _ in
            try await outlet.set(.offline)
            try await Harness.waitUntil(timeout: 10, "offline recorded") {
                try Harness.scalar(setup.url, "SELECT online FROM devices") == "f"
            }
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try await publisher.publishAcknowledged("\(setup.prefix)/plug-1/set", payload: Array("on".utf8))
            let id = try await Self.commandID(setup.url)
            try await watcher.waitFor(id, ["accepted"])
            return id
        }
        try await outlet.set(.obey)  // while outletd is down: the broker keeps it in outletd's session
        try await Harness.withService(setup.configuration) { _ in
            try await watcher.waitFor(id, ["accepted", "sent", "confirmed"])
        }
        #expect(outlet.commands.value.map(\.id) == [id])
    }
}

/// `outletd switch` as a process against an in-process outletd.
@Suite(.serialized) struct SwitchCLITests {
    @Test func switchWaitsAndPrintsTheOutcome() async throws {
        let setup = try CommandTests.setup(codes: ["plug-1", "plug-2"], confirmTimeout: 1)
        let outlet = try SimulatedOutlet(code: "plug-1", prefix: setup.prefix)
        defer { outlet.stop() }
        let deaf = try SimulatedOutlet(code: "plug-2", prefix: setup.prefix, mode: .ignore)
        defer { deaf.stop() }
        let environment = ["OUTLETD_DATABASE_URL": setup.url]
        let outletd = try OutletdProcess.executable()
        try await Harness.withService(setup.configuration) { _ in
            let confirmed = try await Blocking.run {
                try TestStack.run(
                    [outletd, "switch", "plug-1", "on", "--wait", "--by", "ana"], environment: environment)
            }
            #expect(
                confirmed.range(of: #"plug-1 on confirmed after \d+ ms"#, options: .regularExpression) != nil,
                "\(confirmed)")
            let toggled = try await Blocking.run {
                try TestStack.run([outletd, "switch", "plug-1", "toggle", "--wait"], environment: environment)
            }
            #expect(toggled.contains("plug-1 off confirmed"), "\(toggled)")
            // Timed out: exit code 1 (TestStack.run throws), the row says why.
            #expect(throws: TestStackError.self) {
                try TestStack.run([outletd, "switch", "plug-2", "on", "--wait"], environment: environment)
            }
            let accepted = try TestStack.run([outletd, "switch", "plug-2", "off"], environment: environment)
            #expect(accepted.contains("plug-2 off accepted"), "\(accepted)")
        }
        #expect(
            try Harness.scalar(
                setup.url, "SELECT string_agg(status, ',' ORDER BY id) FROM commands WHERE source = 'cli'"
            )
            .hasPrefix("confirmed,confirmed,timed_out,"))
        #expect(try Harness.scalar(setup.url, "SELECT requested_by FROM commands ORDER BY id LIMIT 1") == "ana")
        #expect(outlet.commands.value.map(\.state) == [.on, .off])
    }
}
