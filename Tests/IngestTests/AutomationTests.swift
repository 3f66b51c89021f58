import Automations
import Foundation
import Postgres
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import Storage

/// Schedules and timers against the real stack, and the CLI that makes automations (docs/AUTOMATIONS.md).
@Suite(.serialized) struct AutomationTests {
    static func cli(_ arguments: [String], _ url: String) throws -> String {
        try TestStack.run(
            [try OutletdProcess.executable(), "automation"] + arguments, environment: ["OUTLETD_DATABASE_URL": url])
    }

    /// `outletd automation add …` with `--format json`: the new automation's id.
    static func add(_ arguments: [String], _ url: String) throws -> Int64 {
        let output = try cli(["add"] + arguments + ["--format", "json"], url)
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
            let id = object["id"] as? Int
        else { throw HarnessError("no id in \(output)") }
        return Int64(id)
    }

    /// The stderr of an `outletd automation` run that must fail.
    static func failure(_ arguments: [String], _ url: String) -> String {
        do {
            let output = try cli(arguments, url)
            Issue.record("\(arguments) succeeded: \(output)")
            return ""
        } catch let error as TestStackError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    /// Waits until automation `id` has `count` firings whose commands reached `status`.
    static func waitForFirings(_ url: String, _ id: Int64, count: Int = 1, status: String = "confirmed") async throws {
        try await Harness.waitUntil(timeout: 20, "\(count) firing(s) of automation \(id) with a \(status) command") {
            try Harness.count(
                url,
                """
                SELECT count(*) FROM automation_firings f JOIN commands c ON c.id = f.command_id
                WHERE f.automation_id = \(id) AND c.status = '\(status)'
                """) == count
        }
    }

    @Test func aTimerFiresOnceAsACommandOfTheLifecycle() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["heater"], databaseURL: url)
        let outlet = try SimulatedOutlet(code: "heater", prefix: configuration.mqtt.topicPrefix)
        defer { outlet.stop() }
        try await outlet.publish("state", #"{"state":"on"}"#)
        try await Harness.withService(configuration) { _ in
            let id = try Self.add(["timer", "heater", "--state", "off", "--in", "1s"], url)
            try await Self.waitForFirings(url, id)
            let row = try Harness.scalar(
                url,
                """
                SELECT c.source || '|' || c.requested_by || '|' || c.state || '|' || c.cause || '|' || f.result
                FROM automation_firings f JOIN commands c ON c.id = f.command_id WHERE f.automation_id = \(id)
                """)
            #expect(row == "automation|automation:\(id)|off|timer: off|fired")
            #expect(outlet.commands.value.map(\.state) == [.off])
            #expect(try Harness.scalar(url, "SELECT reported_state FROM devices WHERE code = 'heater'") == "off")
            // Done: no next firing, and no second one.
            try await Task.sleep(for: .seconds(1))
            #expect(try Harness.scalar(url, "SELECT coalesce(next_due_at::text, 'none') FROM automations") == "none")
            #expect(try Harness.count(url, "SELECT count(*) FROM automation_firings") == 1)
            let history = try Self.cli(["history", String(id)], url)
            #expect(history.contains("fired") && history.contains("heater") && history.contains("confirmed"))
        }
    }

    @Test func aScheduleMadeAfterTodaysTimeWaitsForTheNextDayThenFiresAndMovesOn() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["lamp"], databaseURL: url)
        let outlet = try SimulatedOutlet(code: "lamp", prefix: configuration.mqtt.topicPrefix)
        defer { outlet.stop() }
        // A minute ago, in the outlet's zone (the rollups' default, UTC): today's time has passed.
        let earlier = Date().addingTimeInterval(-60)
        let minute = Int(earlier.timeIntervalSince1970 / 60) % 1_440
        let id = try Self.add(
            ["schedule", "lamp", "--state", "on", "--at", Tariff.clock(minute), "--days", "daily"], url)
        let expected = try #require(
            ScheduleClock.next(after: Date(), minute: minute, days: Weekday.allCases, in: .gmt))
        let stored = try Harness.scalar(url, "SELECT extract(epoch FROM next_due_at) FROM automations WHERE id = \(id)")
        #expect(abs((Double(stored) ?? 0) - expected.timeIntervalSince1970) < 1, "tomorrow, not now")
        #expect(expected.timeIntervalSinceNow > 23 * 3_600)
        try await Harness.withService(configuration) { _ in
            try await Task.sleep(for: .seconds(1))
            #expect(try Harness.count(url, "SELECT count(*) FROM automation_firings") == 0)
            // Its day comes (the clock is the database's: move the rule's next firing to now).
            _ = try Harness.scalar(url, "UPDATE automations SET next_due_at = clock_timestamp() WHERE id = \(id)")
            try await Self.waitForFirings(url, id)
            #expect(outlet.commands.value.map(\.state) == [.on])
            let next = try Harness.scalar(
                url, "SELECT extract(epoch FROM next_due_at - clock_timestamp()) FROM automations WHERE id = \(id)")
            #expect((Double(next) ?? 0) > 22 * 3_600, "the next firing is the next day's")
        }
    }

    @Test func dueWhileNoOutletdRanFiresWhenLittleLateAndIsMissedWhenLater() async throws {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.automations.catchUpSeconds = 60
        try Harness.register(["a", "b", "c"], databaseURL: url)
        let outlets = try ["a", "b", "c"].map { try SimulatedOutlet(code: $0, prefix: configuration.mqtt.topicPrefix) }
        defer { outlets.forEach { $0.stop() } }
        // No outletd runs. a: due in a second (it will be a few seconds late); b: a timer an hour late; c: a daily
        // schedule last due 25 hours ago and 1 hour ago.
        let soon = try Self.add(["timer", "a", "--state", "off", "--in", "1s"], url)
        let late = try Self.add(["timer", "b", "--state", "off", "--in", "1h"], url)
        _ = try Harness.scalar(
            url,
            "UPDATE automations SET fire_at = now() - interval '1 hour', next_due_at = now() - interval '1 hour' WHERE id = \(late)"
        )
        let minute = Int(Date().addingTimeInterval(-3_600).timeIntervalSince1970 / 60) % 1_440
        let daily = try Self.add(["schedule", "c", "--state", "off", "--at", Tariff.clock(minute)], url)
        _ = try Harness.scalar(
            url, "UPDATE automations SET next_due_at = next_due_at - interval '2 days' WHERE id = \(daily)")
        try await Task.sleep(for: .seconds(2))
        try await Harness.withService(configuration) { _ in
            try await Self.waitForFirings(url, soon)
            try await Harness.waitUntil(timeout: 10, "the missed firings") {
                try Harness.count(url, "SELECT count(*) FROM automation_firings WHERE result = 'missed'") == 3
            }
            #expect(
                try Harness.scalar(url, "SELECT reason FROM automation_firings WHERE automation_id = \(soon)")
                    .contains("caught up at start"))
            #expect(
                try Harness.count(url, "SELECT count(*) FROM automation_firings WHERE automation_id = \(late)") == 1)
            #expect(
                try Harness.scalar(
                    url,
                    "SELECT result || ' ' || (command_id IS NULL) FROM automation_firings WHERE automation_id = \(late)"
                )
                    == "missed true")
            #expect(
                try Harness.count(
                    url, "SELECT count(*) FROM automation_firings WHERE automation_id = \(daily) AND result = 'missed'")
                    == 2)
            #expect(
                try Harness.count(url, "SELECT count(*) FROM automations WHERE id = \(daily) AND next_due_at > now()")
                    == 1)
            #expect(outlets[1].commands.value.isEmpty && outlets[2].commands.value.isEmpty)
        }
    }

    @Test func aRuleOnADisabledOutletIsSkippedWithItsReasonAndCounted() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["heater", "lamp"], databaseURL: url)
        try await Harness.withService(configuration) { service in
            let skipped = try Self.add(["timer", "heater", "--state", "off", "--in", "1s"], url)
            let fired = try Self.add(["timer", "lamp", "--state", "on", "--in", "1s"], url)
            _ = try TestStack.run(
                [try OutletdProcess.executable(), "device", "disable", "heater"],
                environment: ["OUTLETD_DATABASE_URL": url])
            try await Harness.waitUntil(timeout: 15, "both timers recorded") {
                try Harness.count(url, "SELECT count(*) FROM automation_firings") == 2
            }
            let row = try Harness.scalar(
                url,
                "SELECT result || '|' || (command_id IS NULL) || '|' || reason FROM automation_firings WHERE automation_id = \(skipped)"
            )
            #expect(row.hasPrefix("skipped|true|disabled_device: outlet heater is disabled"), "\(row)")
            #expect(
                try Harness.scalar(url, "SELECT result FROM automation_firings WHERE automation_id = \(fired)")
                    == "fired")
            #expect(try Harness.count(url, "SELECT count(*) FROM commands WHERE source = 'automation'") == 1)
            let exposition = service.metrics.registry.emitToString()
            #expect(
                exposition.contains(#"outletd_automation_firings_total{kind="timer",result="skipped"} 1"#),
                "\(exposition)")
            #expect(exposition.contains(#"outletd_automation_firings_total{kind="timer",result="fired"} 1"#))
            let view = try Harness.scalar(
                url, "SELECT string_agg(kind || ':' || code || ':' || result, ' ' ORDER BY id) FROM automation_history")
            #expect(view == "timer:heater:skipped timer:lamp:fired")
        }
    }

    @Test func releasingAnOutletRemovesTheRulesItsOwnerMadeOnIt() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["tv-1"], databaseURL: url)
        let ana =
            Int64(
                try Harness.scalar(
                    url, "INSERT INTO app_users (name, password_hash) VALUES ('ana', '$2b$x') RETURNING id")
            ) ?? 0
        _ = try Harness.scalar(url, "UPDATE devices SET owner_id = \(ana), claimed_at = now() WHERE code = 'tv-1'")
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let store = AutomationStore(connection: connection)
        let owners = try #require(
            try AutomationBook(store).add(
                .rule(.idle(watts: 5, holdSeconds: 1_800)), code: "tv-1", by: .owner(id: ana, name: "ana"))
        ).id
        let operators = try Self.add(["over-power", "tv-1", "--watts", "2000", "--for", "10s"], url)
        #expect(try store.list(code: "tv-1", owner: ana).map(\.id) == [owners])
        #expect(try OwnerStore(connection: connection).release(userID: ana, code: "tv-1"))
        #expect(try store.list(code: "tv-1").map(\.id) == [operators], "the owner's rule left with the owner")
        #expect(try store.list(code: "tv-1", includingRemoved: true).map(\.id) == [owners, operators])
    }

    @Test func theCLIMakesEachKindAndBadInputChangesNothing() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["heater", "tv", "kettle", "oven", "fridge"], databaseURL: url)
        let schedule = try Self.add(
            ["schedule", "heater", "--state", "off", "--at", "23:00", "--days", "mon-fri"], url)
        let inAMonth = ISO8601DateFormatter.string(
            from: Date().addingTimeInterval(30 * 86_400), timeZone: TimeZone(secondsFromGMT: -3 * 3_600) ?? .gmt,
            formatOptions: [.withInternetDateTime])
        _ = try Self.add(["timer", "heater", "--state", "off", "--at", inAMonth], url)
        _ = try Self.add(["over-power", "heater", "--watts", "2000", "--for", "10s"], url)
        _ = try Self.add(["idle", "tv", "--watts", "5", "--for", "30m"], url)
        let group = try Self.add(
            [
                "group-limit", "kitchen", "--watts", "3500", "--outlets", "kettle,oven", "--for", "5s", "--restore",
                "--margin", "300", "--after", "10m",
            ], url)
        let before = try Harness.count(url, "SELECT count(*) FROM automations")
        #expect(before == 5)
        let refusals: [([String], String)] = [
            (["add", "timer", "nobody", "--state", "off", "--in", "2h"], "no outlet nobody"),
            (["add", "schedule", "heater", "--state", "off", "--at", "25:00"], "25:00"),
            (["add", "over-power", "heater", "--watts", "2000", "--for=-1s"], "not a duration"),
            (["add", "idle", "tv", "--watts", "5", "--for", "30"], "not a duration"),
            (["add", "schedule", "heater", "--state", "off", "--at", "07:00", "--days", "funday"], "--days"),
            (["add", "timer", "heater", "--state", "off"], "--in"),
            (["add", "timer", "heater", "--state", "off", "--at", "2020-01-01T00:00:00Z"], "passed"),
            (
                ["add", "group-limit", "hall", "--watts", "3000", "--outlets", "oven,fridge", "--for", "5s"],
                "already in group limit kitchen"
            ),
            (["add", "group-limit", "kitchen", "--watts", "3000", "--outlets", "fridge", "--for", "5s"], "exists"),
            (
                [
                    "add", "group-limit", "hall", "--watts", "3000", "--outlets", "fridge", "--for", "5s", "--margin",
                    "9",
                ], "--restore"
            ),
            (
                [
                    "add", "group-limit", "hall", "--watts", "300", "--outlets", "fridge", "--for", "5s", "--restore",
                    "--margin", "300",
                ], "margin"
            ),
            (["add", "over-power", "heater", "--watts", "0", "--for", "10s"], "watts"),
            (["disable", "999"], "no automation 999"),
        ]
        for (arguments, expected) in refusals {
            let message = Self.failure(arguments, url)
            #expect(message.contains(expected), "\(arguments): \(message)")
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM automations") == before)
        #expect(try Harness.count(url, "SELECT count(*) FROM automation_group_members") == 2)

        let list = try JSONSerialization.jsonObject(with: Data(try Self.cli(["list", "--format", "json"], url).utf8))
        let rows = try #require(list as? [[String: Any]])
        #expect(rows.map { $0["kind"] as? String } == ["schedule", "timer", "over-power", "idle", "group-limit"])
        #expect(
            rows[0]["at"] as? String == "23:00" && rows[0]["days"] as? [String] == ["mon", "tue", "wed", "thu", "fri"])
        #expect(rows[4]["outlets"] as? [String] == ["kettle", "oven"])
        #expect(try Self.cli(["list", "oven"], url).contains("kitchen"))
        #expect(try Self.cli(["disable", String(schedule)], url).contains("disabled"))
        #expect(try Harness.scalar(url, "SELECT enabled FROM automations WHERE id = \(schedule)") == "f")
        #expect(try Self.cli(["enable", String(schedule), "--format", "json"], url).contains(#""enabled":true"#))
        #expect(try Self.cli(["remove", String(group)], url).contains("removed"))
        // The group's outlets are free again; removed rules are listed only with --all.
        #expect(try Harness.count(url, "SELECT count(*) FROM automation_group_members") == 0)
        _ = try Self.add(["group-limit", "hall", "--watts", "3000", "--outlets", "oven,fridge", "--for", "5s"], url)
        #expect(!(try Self.cli(["list"], url).contains("kitchen")))
        #expect(try Self.cli(["list", "--all"], url).contains("kitchen"))
    }
}
