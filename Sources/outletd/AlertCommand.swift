import Alerts
import ArgumentParser
import Foundation
import Postgres
import Storage

/// `outletd alert …`: alerts for operators (docs/ALERTS.md). `set` puts a rule on any outlet (its owner's, told on
/// the owner's channels; `--operator`: the operator's), `list` shows rules and open incidents, `history` what the
/// incidents did, `ack` acknowledges one. Bad values are refused with the reason and change nothing.
struct AlertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alert",
        abstract: "Alert rules, incidents and their history.",
        subcommands: [Set.self, List.self, History.self, Ack.self, Remove.self, Evaluate.self])

    static var operatorName: String { "operator:\(ProcessInfo.processInfo.environment["USER"] ?? "cli")" }

    /// Runs `body` with the feature's entry point on the configured database (its refusals are printed as errors).
    static func withBook<T>(_ options: GlobalOptions, _ body: (AlertBook<AlertSQLStore>) throws -> T) throws -> T {
        try options.withDatabase { try body(AlertBook(AlertSQLStore(connection: $0))) }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the rule of a kind on an outlet (or on all of --owner's outlets); prints its id.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "offline, on-too-long, standby, budget or command-failed.") var kind: String
        @Argument(help: "The outlet's code (none: all of --owner's outlets).") var code: String?
        @Option(help: "The owner whose outlets a rule without a code covers.") var owner: String?
        @Flag(name: .customLong("operator"), help: "The operator's rule, told on the operator's channels.")
        var operatorRule = false
        @Option(help: "offline: seconds without a reading (default: max(3 × usual interval, 60)).") var after: Int?
        @Option(name: .customLong("for"), help: "on-too-long: seconds on before the alert opens.") var forSeconds: Int?
        @Option(help: "on-too-long: above this many watts counts as on; standby: the limit.") var watts: Double?
        @Option(help: "budget: the projected month cost's limit (decimal text).") var amount: String?
        @Option(help: "Seconds the condition must stay clear before the incident resolves.") var resolveAfter: Int?

        func run() throws {
            if let watts, !watts.isFinite { throw ValidationError("--watts: expected a number of watts") }
            let parameters = AlertParameters(
                afterSeconds: after, forSeconds: forSeconds, watts: watts, amount: amount,
                resolveAfterSeconds: resolveAfter)
            let (kind, code, owner, operatorRule) = (kind, code, owner, operatorRule)
            let record = try AlertCommand.withBook(options) { book in
                var scope = AlertScope.operatorWide
                if let owner {
                    guard let id = try book.store.ownerID(name: owner) else {
                        throw ValidationError("no owner \(owner)")
                    }
                    scope = .owner(id)
                } else if code == nil {
                    throw ValidationError("name an outlet, or --owner for all of an owner's outlets")
                }
                return try book.setRule(
                    kind: kind, parameters: parameters, outlet: code, in: scope, by: AlertCommand.operatorName,
                    operatorRule: operatorRule, maxRules: 10_000)
            }
            print("alert rule \(record.id): \(record.kind.rawValue) on \(record.outlet ?? "all outlets")")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Alert rules and open incidents.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let (rules, incidents) = try AlertCommand.withBook(options) { book in
                (try book.rules(in: .operatorWide), try book.incidents(in: .operatorWide, openOnly: true).incidents)
            }
            print(
                TextTable.render(
                    header: ["RULE", "KIND", "OUTLET", "OWNER", "PARAMETERS", "BY"],
                    rows: rules.map { rule in
                        let p = rule.parameters
                        let parameters = [
                            p.afterSeconds.map { "after \($0) s" }, p.forSeconds.map { "for \($0) s" },
                            p.watts.map { "\($0) W" }, p.amount.map { "amount \($0)" },
                            p.resolveAfterSeconds.map { "resolve after \($0) s" },
                        ].compactMap { $0 }.joined(separator: ", ")
                        return [
                            String(rule.id), rule.kind.rawValue, rule.outlet ?? "all", rule.owner ?? "operator",
                            parameters, rule.createdBy,
                        ]
                    }))
            print(
                TextTable.render(
                    header: ["INCIDENT", "KIND", "OUTLET", "OPENED", "OBSERVED", "ACKNOWLEDGED"],
                    rows: incidents.map {
                        [
                            String($0.id), $0.kind.rawValue, $0.outlet ?? "all", Format.timestamp($0.openedAt),
                            $0.observed ?? "-", $0.acknowledgedAt.map(Format.timestamp) ?? "-",
                        ]
                    }))
            print("\(rules.count) rule\(rules.count == 1 ? "" : "s"), \(incidents.count) open")
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What incidents did (alert_history), newest first: opened, resolved, acknowledged, delivered.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "One incident's id.") var incident: Int64?
        @Option(help: "At most this many lines.") var limit = 100

        func run() throws {
            let (incident, limit) = (incident, limit)
            let lines = try AlertCommand.withBook(options) {
                try $0.history(in: .operatorWide, incidentID: incident, limit: limit)
            }
            print(
                TextTable.render(
                    header: ["AT", "EVENT", "INCIDENT", "KIND", "OUTLET", "OWNER", "CHANNEL", "DETAIL"],
                    rows: lines.map {
                        [
                            Format.timestamp($0.at), $0.event, String($0.incidentID), $0.kind.rawValue,
                            $0.outlet ?? "-", $0.owner ?? "operator", $0.channel ?? "-", $0.detail ?? "",
                        ]
                    }))
        }
    }

    struct Ack: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Acknowledge an incident.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The incident's id.") var incident: Int64

        func run() throws {
            let incident = incident
            try AlertCommand.withBook(options) {
                try $0.acknowledge(incident, in: .operatorWide, by: AlertCommand.operatorName)
            }
            print("incident \(incident) acknowledged")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a rule; its open incidents resolve.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The rule's id.") var rule: Int64

        func run() throws {
            let rule = rule
            try AlertCommand.withBook(options) { try $0.removeRule(rule, in: .operatorWide) }
            print("alert rule \(rule) removed")
        }
    }

    /// What a round costs (Benchmarks/alerts.sh): runs rounds as the runner does and prints, for each, its wall time
    /// and the PostgreSQL backend's CPU time (its /proc entry; the database on this machine), then what it did.
    struct Evaluate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run alert rounds now and print what each cost (wall and PostgreSQL CPU time).")
        @OptionGroup var options: GlobalOptions
        @Option(help: "How many rounds.") var rounds = 5
        @Flag(help: "Include the slow kinds (standby, budget).") var slow = false

        func run() throws {
            let (rounds, slow) = (rounds, slow)
            try options.withDatabase { connection in
                let store = AlertSQLStore(connection: connection)
                let pid = try connection.execute("SELECT pg_backend_pid()")[0, 0] ?? ""
                let kinds = Swift.Set(AlertKind.allCases.filter { slow || !$0.isSlow })
                for round in 1...max(1, rounds) {
                    let cpuBefore = Self.cpuSeconds(pid: pid)
                    let started = ContinuousClock.now
                    let summary = try store.evaluateRound(
                        kinds: kinds, instanceID: AlertCommand.operatorName, decide: AlertRound.decide)
                    let wall = ContinuousClock.now - started
                    let cpu = Self.cpuSeconds(pid: pid).flatMap { after in cpuBefore.map { after - $0 } }
                    let milliseconds =
                        Double(wall.components.attoseconds) / 1e15 + Double(wall.components.seconds) * 1e3
                    print(
                        "round \(round): \(String(format: "%.1f", milliseconds)) ms wall, "
                            + (cpu.map { String(format: "%.0f ms", $0 * 1e3) } ?? "?") + " PostgreSQL CPU; "
                            + (summary.map {
                                "observed \($0.observed), opened \($0.opened), resolved \($0.resolved), queued \($0.queued)"
                            } ?? "another instance held the round"))
                }
            }
        }

        /// utime + stime of process `pid`, seconds (nil when /proc does not have it: another machine).
        static func cpuSeconds(pid: String) -> Double? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = text.lastIndex(of: ")")
            else { return nil }
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
}
