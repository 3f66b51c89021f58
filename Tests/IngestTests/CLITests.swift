import Foundation
import ServiceTestSupport
import TestSupport
import Testing

@testable import Config
@testable import Observability

#if canImport(Glibc)
    import Glibc
#endif

/// What a newcomer types first: `outletd --version`, completions, JSON output, and the errors that say what to do.
@Suite struct CLITests {
    /// The version and commit the build embedded: the header scripts/build-info wrote, else "dev".
    static func embeddedBuild() throws -> BuildInfo {
        let header = "\(TestStack.packageRoot)/Sources/CBuildInfo/generated/build_info.h"
        guard let text = try? String(contentsOfFile: header, encoding: .utf8) else {
            return BuildInfo(version: "dev", commit: "dev")
        }
        func value(_ name: String) throws -> String {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("#define \(name) ") }),
                let open = line.firstIndex(of: "\""), let close = line.lastIndex(of: "\""), open < close
            else { throw HarnessError("\(name) missing from \(header)") }
            return String(line[line.index(after: open)..<close])
        }
        return BuildInfo(version: try value("OUTLETD_VERSION"), commit: try value("OUTLETD_COMMIT"))
    }

    @Test func versionNamesTheVersionAndCommit() throws {
        let output = try TestStack.run([try OutletdProcess.executable(), "--version"])
        let build = try Self.embeddedBuild()
        #expect(output == "outletd \(build.version) (commit \(build.commit))\n")
        #expect(BuildInfo.current == build)
    }

    @Test func buildInfoScriptReadsVersionFileAndGit() throws {
        let root = TestStack.packageRoot
        let header = try TestStack.run(["\(root)/scripts/build-info", "--print"])
        let version = try String(contentsOfFile: "\(root)/VERSION", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(header.contains("#define OUTLETD_VERSION \"\(version)\"\n"))
        let commit = try TestStack.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(header.contains("#define OUTLETD_COMMIT \"\(commit)"))
    }

    /// The parsed JSON of one `outletd` run.
    static func json(_ arguments: [String], _ environment: [String: String]) throws -> Any {
        let output = try TestStack.run([try OutletdProcess.executable()] + arguments, environment: environment)
        #expect(output.hasSuffix("\n") && output.dropLast().contains("\n") == false, "one line: \(output)")
        return try JSONSerialization.jsonObject(with: Data(output.utf8))
    }

    @Test func tablesComeAsJSONWithFormatJSON() throws {
        let url = try Harness.migratedDatabase()
        let environment = ["OUTLETD_DATABASE_URL": url]
        let outletd = try OutletdProcess.executable()
        _ = try TestStack.run(
            [outletd, "device", "add", "kitchen-1", "--name", "Kitchen fridge", "--owner", "ana"],
            environment: environment)
        _ = try TestStack.run(
            [outletd, "device", "add", "hall-2", "--protocol", "tasmota", "--topic", "hall", "--disabled"],
            environment: environment)
        _ = try Harness.scalar(
            url,
            """
            INSERT INTO pending_devices (code, first_seen_at, last_seen_at, message_count, last_topic)
            VALUES ('stray-9', now() - interval '1 hour', now(), 12, 'outlets/stray-9/telemetry')
            """)
        let devices = try #require(
            try Self.json(["device", "list", "--format", "json"], environment) as? [[String: Any]])
        #expect(devices.compactMap { $0["code"] as? String }.sorted() == ["hall-2", "kitchen-1"])
        let kitchen = try #require(devices.first { $0["code"] as? String == "kitchen-1" })
        #expect(kitchen["name"] as? String == "Kitchen fridge")
        // The owner is the app account that claimed the outlet, not `--owner`'s free-text note.
        #expect(kitchen["owner"] is NSNull)
        #expect(kitchen["enabled"] as? Bool == true)
        let hall = try #require(devices.first { $0["code"] as? String == "hall-2" })
        #expect(hall["protocol"] as? String == "tasmota")
        #expect(hall["enabled"] as? Bool == false)
        #expect(hall["owner"] is NSNull)
        #expect(
            try TestStack.run([outletd, "device", "show", "kitchen-1"], environment: environment)
                .contains("owner note:   ana\n"))

        // Claimed by the account bea: its name in the JSON, the table and device show.
        _ = try Harness.scalar(
            url,
            """
            WITH bea AS (INSERT INTO app_users (name, password_hash) VALUES ('bea', '$2b$04$x') RETURNING id)
            UPDATE devices SET owner_id = (SELECT id FROM bea), claimed_at = now() WHERE code = 'kitchen-1'
            """)
        let claimed = try #require(
            try Self.json(["device", "list", "--format", "json"], environment) as? [[String: Any]])
        #expect(claimed.first { $0["code"] as? String == "kitchen-1" }?["owner"] as? String == "bea")
        #expect(claimed.first { $0["code"] as? String == "hall-2" }?["owner"] is NSNull)
        let table = try TestStack.run([outletd, "device", "list"], environment: environment)
        let kitchenRow = try #require(table.split(separator: "\n").first { $0.hasPrefix("kitchen-1") })
        #expect(kitchenRow.split(separator: " ", omittingEmptySubsequences: true).contains("bea"))
        #expect(!table.contains("ana"))
        let shown = try TestStack.run([outletd, "device", "show", "kitchen-1"], environment: environment)
        #expect(shown.contains("owner:        bea\n"))

        let pending = try #require(
            try Self.json(["device", "pending", "--format", "json"], environment) as? [[String: Any]])
        #expect(pending.count == 1)
        #expect(pending.first?["code"] as? String == "stray-9")
        #expect(pending.first?["messages"] as? Int == 12)
        #expect(pending.first?["last_topic"] as? String == "outlets/stray-9/telemetry")

        let all = try #require(try Self.json(["stats", "--format", "json"], environment) as? [String: Any])
        let outlets = try #require(all["outlets"] as? [[String: Any]])
        #expect(outlets.compactMap { $0["code"] as? String }.sorted() == ["hall-2", "kitchen-1"])
        #expect(all["rejected"] is [String: Any])

        let one = try #require(
            try Self.json(["stats", "kitchen-1", "--since", "24h", "--format", "json"], environment) as? [String: Any])
        #expect(one["code"] as? String == "kitchen-1")
        #expect(one["name"] as? String == "Kitchen fridge")
        #expect(one["hours"] is [Any])
        #expect(one["samples"] as? Int == 0)
        #expect(one["average_power_watts"] is NSNull)

        let command = try #require(
            try Self.json(["switch", "kitchen-1", "on", "--format", "json"], environment) as? [String: Any])
        #expect(command["code"] as? String == "kitchen-1")
        #expect(command["status"] as? String == "accepted")
        #expect(command["state"] as? String == "on")
        #expect(command["id"] as? Int != nil)
        #expect(command["latency_ms"] is NSNull)
    }

    /// The stderr of a run that must fail, and its exit status.
    static func failure(_ arguments: [String], _ environment: [String: String]) throws -> String {
        do {
            let output = try TestStack.run([try OutletdProcess.executable()] + arguments, environment: environment)
            Issue.record("\(arguments) succeeded: \(output)")
            return ""
        } catch let error as TestStackError {
            return error.message
        }
    }

    @Test func errorsSayWhatToDo() throws {
        // Nothing configured: neither a file nor OUTLETD_DATABASE_URL. HOME elsewhere, no /etc file assumed set.
        let scratch = NSTemporaryDirectory() + "outletd-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let empty = "\(scratch)/empty.yaml"
        try "logging:\n  level: info\n".write(toFile: empty, atomically: true, encoding: .utf8)
        var unset = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OUTLETD_") }
        unset["OUTLETD_CONFIG"] = empty
        let missing = try Self.failure(["device", "list"], unset)
        #expect(missing.contains("exited 69"))
        #expect(missing.contains("export OUTLETD_DATABASE_URL='postgresql://"))

        var mysql = unset
        mysql["OUTLETD_DATABASE_URL"] = "mysql://outlet:secret@db/outlet"
        let scheme = try Self.failure(["check-config"], mysql)
        #expect(scheme.contains("exited 78"))
        #expect(scheme.contains("unsupported scheme \"mysql://\""))
        #expect(scheme.contains("postgresql://") && scheme.contains("postgres://"))
        #expect(!scheme.contains("secret"))

        let badProtocol = try Self.failure(["device", "add", "x-1", "--protocol", "zigbee"], unset)
        for name in ["native", "tasmota", "shelly-gen1", "shelly-gen2", "zigbee2mqtt", "esphome"] {
            #expect(badProtocol.contains("- \(name)"))
        }
    }

    @Test func unreachableDatabaseLogsOneJSONLineAndCtrlCStopsQuietly() async throws {
        var configuration = try Harness.configuration(databaseURL: "postgresql://outletd@127.0.0.1:1/none")
        configuration.mqtt.url = "mqtt://127.0.0.1:1"
        let daemon = try OutletdProcess.start(configuration, extraEnvironment: ["OUTLETD_LOGGING_FORMAT": "json"])
        try await Harness.waitUntil(timeout: 15, "a retry logged") { daemon.output.contains("retrying") }
        daemon.signal(SIGINT)
        #expect(try await daemon.waitForExit(timeout: 15) == 0)
        let lines = daemon.output.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not one JSON object: \(line)")
        }
        let retry = try #require(lines.first { $0.contains("database unavailable at start") })
        // libpq's two-line message ("…failed: Connection refused\n\tIs the server running…?") in one value.
        #expect(retry.contains("Connection refused; Is the server running"))
        #expect(daemon.output.contains("stopped before the database answered"))
        #expect(!daemon.output.contains("\"level\":\"error\""))
    }
}
