import Foundation
import Postgres
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import Storage

/// Over-power, idle and group limits against the real stack: outlets that publish readings and obey commands, rules
/// that meet and rules that do not quite (docs/AUTOMATIONS.md, "Power rules", "Group limits").
@Suite(.serialized) struct AutomationPowerTests {
    static func firings(_ url: String, _ id: Int64) throws -> [String] {
        try Harness.scalar(
            url,
            """
            SELECT coalesce(string_agg(f.result || ':' || coalesce(d.code, '-') || ':' || coalesce(f.state, '-'), ' '
                                       ORDER BY f.id), '')
            FROM automation_firings f LEFT JOIN devices d ON d.id = f.device_id WHERE f.automation_id = \(id)
            """
        ).split(separator: " ").map(String.init)
    }

    /// Seconds from the reading that met the rule (the firing's due_at) to the command's publication.
    static func secondsToSend(_ url: String, _ id: Int64) throws -> Double {
        Double(
            try Harness.scalar(
                url,
                """
                SELECT extract(epoch FROM c.sent_at - f.due_at) FROM automation_firings f
                JOIN commands c ON c.id = f.command_id WHERE f.automation_id = \(id)
                """)) ?? .infinity
    }

    @Test func overPowerSwitchesOffWhatStaysAboveAndNotWhatDoesNotQuite() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let prefix = configuration.mqtt.topicPrefix
        try Harness.register(["heater", "lamp", "dippy"], databaseURL: url)
        let over = try AutomationTests.add(["over-power", "heater", "--watts", "2000", "--for", "2s"], url)
        let notQuite = try AutomationTests.add(["over-power", "lamp", "--watts", "2000", "--for", "2s"], url)
        let dips = try AutomationTests.add(["over-power", "dippy", "--watts", "2000", "--for", "2s"], url)
        try await Harness.withService(configuration) { _ in
            let heater = try await MeteredOutlet(code: "heater", prefix: prefix, load: 2_100)
            let lamp = try await MeteredOutlet(code: "lamp", prefix: prefix, load: 1_999)
            // dippy drops below the limit for a reading at least every second of measured time: no run lasts 2 s.
            let dippy = try await MeteredOutlet(
                code: "dippy", prefix: prefix, load: 2_100, interruption: (watts: 1_900, every: 1))
            defer { [heater, lamp, dippy].forEach { $0.stop() } }
            try await AutomationTests.waitForFirings(url, over)
            #expect(heater.commands == [.off])
            try await Task.sleep(for: .seconds(4))
            #expect(try Self.firings(url, over) == ["fired:heater:off"], "a run fires once")
            #expect(try Self.firings(url, notQuite).isEmpty && lamp.commands.isEmpty)
            #expect(try Self.firings(url, dips).isEmpty && dippy.commands.isEmpty)
            let cause = try Harness.scalar(
                url, "SELECT c.cause FROM commands c WHERE c.requested_by = 'automation:\(over)'")
            #expect(cause.hasPrefix("over-power: 2100 W, at or above 2000 W for 2s"), "\(cause)")
            let seconds = try Self.secondsToSend(url, over)
            #expect(seconds >= 0 && seconds < 10, "sent \(seconds) s after the reading that met it")
        }
    }

    @Test func idleSwitchesOffWhatSitsInStandbyWhileOnAndNothingElse() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let prefix = configuration.mqtt.topicPrefix
        try Harness.register(["tv", "radio", "console"], databaseURL: url)
        let idle = try AutomationTests.add(["idle", "tv", "--watts", "5", "--for", "2s"], url)
        let reportsOff = try AutomationTests.add(["idle", "radio", "--watts", "5", "--for", "2s"], url)
        let busy = try AutomationTests.add(["idle", "console", "--watts", "5", "--for", "2s"], url)
        try await Harness.withService(configuration) { _ in
            let tv = try await MeteredOutlet(code: "tv", prefix: prefix, load: 3)
            // Reports itself off while reading 3 W (a meter behind the relay): not idle "while on".
            let radio = try await MeteredOutlet(code: "radio", prefix: prefix, load: 3, on: false)
            radio.load.value = 3
            // console plays (60 W) for a reading at least every second of measured time: never idle for 2 s.
            let console = try await MeteredOutlet(
                code: "console", prefix: prefix, load: 3, interruption: (watts: 60, every: 1))
            defer { [tv, radio, console].forEach { $0.stop() } }
            try await AutomationTests.waitForFirings(url, idle)
            #expect(tv.commands == [.off])
            try await Task.sleep(for: .seconds(4))
            #expect(try Self.firings(url, idle) == ["fired:tv:off"])
            #expect(try Self.firings(url, reportsOff).isEmpty && radio.commands.isEmpty)
            #expect(try Self.firings(url, busy).isEmpty && console.commands.isEmpty)
        }
    }

    @Test func aGroupLimitShedsTheLeastImportantAndRestoresItWhenThereIsRoom() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let prefix = configuration.mqtt.topicPrefix
        try Harness.register(["kettle", "oven", "fridge"], databaseURL: url)
        let group = try AutomationTests.add(
            [
                "group-limit", "kitchen", "--watts", "3000", "--outlets", "kettle,oven,fridge", "--for", "1s",
                "--restore", "--margin", "200", "--after", "2s",
            ], url)
        try await Harness.withService(configuration) { _ in
            let kettle = try await MeteredOutlet(code: "kettle", prefix: prefix, load: 2_000)
            let oven = try await MeteredOutlet(code: "oven", prefix: prefix, load: 1_200)
            let fridge = try await MeteredOutlet(code: "fridge", prefix: prefix, load: 150)
            defer { [kettle, oven, fridge].forEach { $0.stop() } }
            // 3350 W > 3000 W: the kettle (least important) goes; 1350 W is left.
            try await Harness.waitUntil(timeout: 20, "the kettle shed") { kettle.commands == [.off] }
            #expect(oven.commands.isEmpty && fridge.commands.isEmpty)
            // 1350 + 2000 = 3350 is not below 3000 - 200: the kettle stays off.
            try await Task.sleep(for: .seconds(4))
            #expect(kettle.commands == [.off])
            // The oven goes down to 500 W: 650 + 2000 = 2650 < 2800 for 2 s, and the kettle comes back.
            oven.load.value = 500
            try await Harness.waitUntil(timeout: 20, "the kettle restored") { kettle.commands == [.off, .on] }
            try await Task.sleep(for: .seconds(3))
            // Back at 2650 W, under the limit: nothing more happens.
            #expect(kettle.commands == [.off, .on] && oven.commands.isEmpty && fridge.commands.isEmpty)
            #expect(try Self.firings(url, group) == ["fired:kettle:off", "fired:kettle:on"])
            let causes = try Harness.scalar(
                url, "SELECT string_agg(cause, ' | ' ORDER BY id) FROM commands WHERE source = 'automation'")
            #expect(causes.contains("shed kettle") && causes.contains("restore kettle"), "\(causes)")
            #expect(causes.contains("plus the 2000 W it drew"), "\(causes)")
        }
    }
}
