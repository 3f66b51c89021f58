import Foundation
import Postgres
import TestSupport
import Testing

@testable import Observability
@testable import Storage

/// dashboards/grafana: every SQL panel runs against the migrated schema (Grafana's macros substituted as Grafana
/// does), every Prometheus panel names metrics outletd exports, and the provisioning names the dashboard's data
/// sources. A migration that renames a column a panel reads fails here.
@Suite struct GrafanaDashboardTests {
    static let directory = "\(TestStack.packageRoot)/dashboards/grafana"

    /// Every query of the dashboard: (panel title, target), rows' nested panels included.
    static func targets() throws -> [(panel: String, target: [String: Any])] {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/outletd-overview.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var found: [(String, [String: Any])] = []
        func walk(_ panels: [[String: Any]]) {
            for panel in panels {
                if let nested = panel["panels"] as? [[String: Any]] { walk(nested) }
                for target in panel["targets"] as? [[String: Any]] ?? [] {
                    found.append((panel["title"] as? String ?? "?", target))
                }
            }
        }
        walk(dashboard["panels"] as? [[String: Any]] ?? [])
        return found
    }

    /// The dashboard's template variables' queries.
    static func variableQueries() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/outletd-overview.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let list = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        return list.compactMap { $0["query"] as? String }
    }

    /// `sql` as Grafana sends it to PostgreSQL for the range `from`…`to`, an interval of `intervalMS` and the
    /// outlets `outlets`: `$__timeFilter(x)` → `x BETWEEN '…' AND '…'`, `$__timeFrom()`/`$__timeTo()` → quoted
    /// times, `$__interval_ms` → milliseconds, `$__interval` → `1m`-style, `$outlet` → `'a','b'`.
    static func substitute(_ sql: String, from: String, to: String, intervalMS: Int, outlets: [String]) throws
        -> String
    {
        var text = sql
        while let start = text.range(of: "$__timeFilter(") {
            var depth = 1
            var index = start.upperBound
            while depth > 0 {
                guard index < text.endIndex else { throw HarnessError("unbalanced $__timeFilter( in \(sql)") }
                if text[index] == "(" { depth += 1 }
                if text[index] == ")" { depth -= 1 }
                index = text.index(after: index)
            }
            let column = text[start.upperBound..<text.index(before: index)]
            text.replaceSubrange(start.lowerBound..<index, with: "\(column) BETWEEN '\(from)' AND '\(to)'")
        }
        let outletList = outlets.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" }.joined(separator: ",")
        text = text.replacingOccurrences(of: "$__timeFrom()", with: "'\(from)'")
            .replacingOccurrences(of: "$__timeTo()", with: "'\(to)'")
            .replacingOccurrences(of: "$__interval_ms", with: String(intervalMS))
            .replacingOccurrences(of: "$__interval", with: "\(max(1, intervalMS / 60_000))m")
            .replacingOccurrences(of: "${outlet}", with: outletList)
            .replacingOccurrences(of: "$outlet", with: outletList)
        return text
    }

    @Test func substitutesLikeGrafana() throws {
        let sql = "SELECT 1 WHERE $__timeFilter(date_trunc('hour', at)) AND code IN ($outlet) AND $__interval_ms > 0"
        #expect(
            try Self.substitute(sql, from: "A", to: "B", intervalMS: 60_000, outlets: ["x", "o'k"])
                == "SELECT 1 WHERE date_trunc('hour', at) BETWEEN 'A' AND 'B' AND code IN ('x','o''k') AND 60000 > 0")
    }

    @Test func everySQLPanelRunsAgainstTheMigratedSchema() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["kitchen-1", "hall-2"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        // Something in every table the panels read: a command, a rejection, a rejection count.
        _ = try connection.execute("SELECT request_switch('kitchen-1', true, 'grafana-test')")
        _ = try connection.execute(
            """
            INSERT INTO rejected_messages (received_at, topic, device_code, reason, detail, payload_excerpt)
            VALUES (now() - interval '1 hour', 'outlets/x/telemetry', 'x', 'unknown_device', 'not registered', '{}')
            """)
        _ = try connection.execute(
            "INSERT INTO rejection_counts (reason, count, last_at) VALUES ('unknown_device', 1, now())")

        let targets = try Self.targets()
        let sqlTargets = targets.filter { $0.target["rawSql"] != nil }
        #expect(sqlTargets.count >= 12, "the dashboard's SQL panels")
        let to = Date().addingTimeInterval(60)
        let iso = ISO8601DateFormatter()
        for (panel, target) in sqlTargets {
            let raw = try #require(target["rawSql"] as? String)
            let sql = try Self.substitute(
                raw, from: iso.string(from: to.addingTimeInterval(-86_400)), to: iso.string(from: to),
                intervalMS: 120_000, outlets: ["kitchen-1", "hall-2"])
            #expect(!sql.contains("$"), "\(panel): a macro left in \(sql)")
            #expect(
                (target["datasource"] as? [String: Any])?["uid"] as? String == "outletd-postgres", "\(panel)")
            do {
                let result = try connection.execute(sql)
                if panel == "Outlets" { #expect(result.rowCount == 2) }
                if panel == "Command outcomes" { #expect(result.rowCount == 1, "the queued command") }
                if panel == "Rejections by reason" { #expect(result.rowCount == 1) }
                if target["format"] as? String == "time_series" {
                    #expect(result.columnNames.first == "time", "\(panel): a time series starts with time")
                }
            } catch {
                Issue.record("\(panel): \(error)\n\(sql)")
            }
        }
        for query in try Self.variableQueries() {
            let codes = try connection.execute(query)
            #expect(codes.rowCount == 2)
        }
    }

    @Test func prometheusPanelsNameExportedMetrics() throws {
        let exported = PrometheusText(PrometheusExposition(metrics: IngestMetrics()).render(process: nil))
        let families = Set(exported.types.keys)
        let expressions = try Self.targets().compactMap { $0.target["expr"] as? String }
        #expect(expressions.count >= 4)
        let pattern = try NSRegularExpression(pattern: "outletd_[a-z_]+")
        for expression in expressions {
            let names = pattern.matches(in: expression, range: NSRange(expression.startIndex..., in: expression))
                .compactMap { Range($0.range, in: expression).map { String(expression[$0]) } }
            #expect(!names.isEmpty, "\(expression)")
            for name in names {
                let family = name.hasSuffix("_bucket") ? String(name.dropLast("_bucket".count)) : name
                #expect(families.contains(family), "\(expression): \(name) is not exported")
            }
        }
    }

    @Test func provisioningNamesTheDashboardsDataSources() throws {
        let datasources = try String(
            contentsOfFile: "\(Self.directory)/provisioning/datasources/outletd.yaml", encoding: .utf8)
        #expect(datasources.contains("uid: outletd-postgres"))
        #expect(datasources.contains("type: grafana-postgresql-datasource"))
        #expect(datasources.contains("uid: outletd-prometheus"))
        let uids = Set(
            try Self.targets().compactMap { ($0.target["datasource"] as? [String: Any])?["uid"] as? String })
        #expect(uids == ["outletd-postgres", "outletd-prometheus"])
        let provider = try String(
            contentsOfFile: "\(Self.directory)/provisioning/dashboards/outletd.yaml", encoding: .utf8)
        #expect(provider.contains("type: file"))
    }
}
