import Foundation
import Postgres
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import Storage

/// Each firing happens once with several instances, and across kill -9 at the moment of firing
/// (docs/AUTOMATIONS.md, "How a firing happens once").
@Suite(.serialized) struct AutomationInstancesTests {
    /// Automations whose firings or commands are not exactly one each: "id:firings:commands".
    static func notExactlyOnce(_ url: String) throws -> String {
        try Harness.scalar(
            url,
            """
            SELECT coalesce(string_agg(a.id || ':' || f.n || ':' || c.n, ' '), '')
            FROM automations a
            CROSS JOIN LATERAL (SELECT count(*) AS n FROM automation_firings WHERE automation_id = a.id) f
            CROSS JOIN LATERAL (SELECT count(*) AS n FROM commands WHERE requested_by = 'automation:' || a.id) c
            WHERE f.n <> 1 OR c.n <> 1
            """)
    }

    @Test func threeInstancesFireEachAutomationOnce() async throws {
        let url = try Harness.migratedDatabase()
        let base = try Harness.configuration(databaseURL: url)
        let configurations = (0..<3).map { index -> OutletdConfiguration in
            var configuration = base
            configuration.instanceID = "\(base.instanceID)-\(index)"
            configuration.spool.directory = "\(base.spool.directory)-\(index)"
            return configuration
        }
        let prefix = base.mqtt.topicPrefix
        let timers = (0..<12).map { String(format: "timer-%02d", $0) }
        try Harness.register(timers + ["heater", "lamp"], databaseURL: url)
        let outlets = try timers.map { try SimulatedOutlet(code: $0, prefix: prefix) }
        defer { outlets.forEach { $0.stop() } }
        try await Harness.withService(configurations[0]) { _ in
            try await Harness.withService(configurations[1]) { _ in
                try await Harness.withService(configurations[2]) { _ in
                    for code in timers {
                        _ = try AutomationTests.add(["timer", code, "--state", "off", "--in", "2s"], url)
                    }
                    let schedule = try AutomationTests.add(["schedule", "lamp", "--state", "on", "--at", "03:00"], url)
                    _ = try Harness.scalar(
                        url, "UPDATE automations SET next_due_at = clock_timestamp() WHERE id = \(schedule)")
                    let over = try AutomationTests.add(["over-power", "heater", "--watts", "2000", "--for", "1s"], url)
                    let heater = try await MeteredOutlet(code: "heater", prefix: prefix, load: 2_500)
                    defer { heater.stop() }
                    try await Harness.waitUntil(timeout: 30, "every automation fired") {
                        try Harness.count(url, "SELECT count(DISTINCT automation_id) FROM automation_firings") == 14
                    }
                    try await AutomationTests.waitForFirings(url, over)
                    // Time for a second firing to show, if anything were to make one.
                    try await Task.sleep(for: .seconds(3))
                    #expect(try Self.notExactlyOnce(url) == "")
                    #expect(outlets.allSatisfy { $0.commands.value.map(\.state) == [.off] })
                    #expect(heater.commands == [.off])
                }
            }
        }
    }

    @Test func killDashNineWhileFiringNeitherLosesNorDoublesAFiring() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = (0..<300).map { String(format: "k-%03d", $0) }
        try Harness.register(codes, databaseURL: url)
        // 300 timers due one every 10 ms from 3 s from now: outletd is killed while it fires them.
        _ = try Harness.scalar(
            url,
            """
            INSERT INTO automations (kind, device_id, state, fire_at, next_due_at, created_by)
            SELECT 'timer', id, 'off', t, t, 'operator:test'
            FROM (SELECT id, clock_timestamp() + interval '3 seconds' + (row_number() OVER (ORDER BY id)) * interval '10 ms'
                         AS t FROM devices) d
            """)
        var kills: [Int] = []
        for round in 0..<2 {
            let process = try OutletdProcess.start(configuration)
            let target = round == 0 ? 40 : 160
            try await Harness.waitUntil(timeout: 60, "\(target) firings") {
                try Harness.count(url, "SELECT count(*) FROM automation_firings") >= target
            }
            process.signal(SIGKILL)
            _ = try await process.waitForExit(timeout: 30)
            kills.append(try Harness.count(url, "SELECT count(*) FROM automation_firings"))
        }
        #expect(kills.allSatisfy { $0 > 0 && $0 < codes.count }, "killed mid-stream: \(kills)")
        let last = try OutletdProcess.start(configuration)
        try await Harness.waitUntil(timeout: 60, "every timer recorded") {
            try Harness.count(url, "SELECT count(*) FROM automation_firings") == codes.count
        }
        try await Task.sleep(for: .seconds(1))
        last.signal(SIGTERM)
        _ = try await last.waitForExit(timeout: 30)
        #expect(try Self.notExactlyOnce(url) == "")
        // Within automations.catch_up_seconds of their time, every one fired (none missed).
        #expect(try Harness.count(url, "SELECT count(*) FROM automation_firings WHERE result = 'fired'") == codes.count)
    }
}
