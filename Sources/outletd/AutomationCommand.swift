import ArgumentParser
import Automations
import Foundation
import Postgres
import Storage
import Telemetry

/// `outletd automation …`: outlets that act on their own (docs/AUTOMATIONS.md). Every rule is checked whole before
/// anything is stored: bad input is an error that changes nothing.
struct AutomationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "automation",
        abstract: "Schedules, timers, over-power and idle cut-off, group power limits.",
        subcommands: [Add.self, List.self, Enable.self, Disable.self, Remove.self, History.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an automation; prints its id.",
            subcommands: [Schedule.self, Timer.self, OverPower.self, Idle.self, GroupLimit.self])
    }

    /// The operator the CLI acts for: `operator:$USER`.
    static var actor: AutomationActor { .operatorUser(name: ProcessInfo.processInfo.environment["USER"] ?? "cli") }

    static func duration(_ text: String, _ name: String) throws -> Int {
        guard let seconds = AutomationDuration.parse(text) else {
            throw ValidationError(AutomationDuration.problem(name, text))
        }
        return seconds
    }

    static func watts(_ value: Double) throws -> Double {
        guard value.isFinite else { throw ValidationError("--watts: expected a number of watts") }
        return value
    }

    /// The automations, for the operator, through ``AutomationBook`` on `connection`.
    static func book(_ connection: PostgresConnection) -> AutomationBook<AutomationStore> {
        AutomationBook(AutomationStore(connection: connection))
    }

    /// Stores `rule` and prints what was made.
    static func add(
        _ rule: AutomationBook<AutomationStore>.Draft, code: String?, options: GlobalOptions, output: OutputOptions
    ) throws {
        let record = try options.withDatabase { try book($0).add(rule, code: code, by: actor) }
        guard let record else { throw ValidationError("the automation was not stored") }
        if output.format == .json {
            print(try JSONOutput.render(object(record)))
            return
        }
        var line = "automation \(record.id): \(record.rule.summary)"
        if let code = record.code { line += " on \(code)" }
        if let next = record.nextDueAt { line += "; next at \(Format.timestamp(next, in: record.timeZone))" }
        print(line)
    }

    static func object(_ record: AutomationRecord) -> [String: Any] {
        var object: [String: Any] = [
            "id": record.id, "kind": record.rule.kind.rawValue, "code": JSONOutput.value(record.code),
            "enabled": record.enabled, "removed": record.removed, "summary": record.rule.summary,
            "created_by": record.createdBy, "created_at": JSONOutput.value(record.createdAt),
            "next_at": JSONOutput.value(record.nextDueAt.map { Format.timestamp($0, in: record.timeZone) }),
            "time_zone": JSONOutput.value(record.timeZone),
        ]
        switch record.rule {
        case .schedule(let state, let minute, let days):
            object["state"] = state.rawValue
            object["at"] = Tariff.clock(minute)
            object["days"] = days.map(\.rawValue)
        case .timer(let state, let at):
            object["state"] = state.rawValue
            object["at"] = Format.timestamp(at)
        case .overPower(let watts, let hold), .idle(let watts, let hold):
            object["watts"] = watts
            object["for_seconds"] = hold
        case .groupLimit(let group):
            object["name"] = group.name
            object["watts"] = group.watts
            object["for_seconds"] = group.holdSeconds
            object["outlets"] = group.outlets
            object["restore"] =
                group.restore.map {
                    ["margin_watts": $0.marginWatts, "after_seconds": $0.afterSeconds] as [String: Any]
                }
                ?? NSNull()
        }
        object["last"] = record.lastFiring.map(firingObject) ?? NSNull()
        return object
    }

    static func firingObject(_ firing: AutomationFiring) -> [String: Any] {
        [
            "id": firing.id, "automation": firing.automationID, "kind": firing.kind.rawValue,
            "code": JSONOutput.value(firing.code), "due_at": Format.timestamp(firing.dueAt),
            "recorded_at": Format.timestamp(firing.recordedAt), "result": firing.result.rawValue,
            "state": JSONOutput.value(firing.state?.rawValue),
            "command": firing.commandID.map { $0 as Any } ?? NSNull(),
            "command_status": JSONOutput.value(firing.commandStatus), "reason": firing.reason,
        ]
    }

    struct Schedule: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A state at a local time on given days, in the outlet's time zone.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The outlet's code.") var code: String
        @Option(help: "on or off.") var state: SwitchState
        @Option(help: "Local time HH:MM (00:00–23:59).") var at: String
        @Option(help: "Days: mon, sat,sun, mon-fri, daily.") var days: String = "daily"
        @OptionGroup var output: OutputOptions

        func run() throws {
            guard let minute = Tariff.minutes(at, allowsEndOfDay: false) else {
                throw ValidationError("--at: \(at) is not a time from 00:00 to 23:59")
            }
            guard let days = Weekday.parseList(days) else {
                throw ValidationError("--days: \(days) is not a day, list or range like sat, sat,sun or mon-fri")
            }
            try AutomationCommand.add(
                .rule(.schedule(state: state, minute: minute, days: days)), code: code, options: options,
                output: output)
        }
    }

    struct Timer: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A state once: after a duration (--in 2h) or at an instant (--at 2026-12-01T07:00:00-03:00).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The outlet's code.") var code: String
        @Option(help: "on or off.") var state: SwitchState
        @Option(name: .customLong("in"), help: "After this long: 90s, 10m, 2h, 1h30m.") var after: String?
        @Option(help: "At this instant, RFC 3339 with its offset.") var at: String?
        @OptionGroup var output: OutputOptions

        func run() throws {
            let draft: AutomationBook<AutomationStore>.Draft
            switch (after, at) {
            case (let text?, nil):
                // From the database's clock, which the runners read, not this machine's.
                draft = .timer(state: state, afterSeconds: try AutomationCommand.duration(text, "--in"))
            case (nil, let text?):
                guard let date = RFC3339.date(from: text) else {
                    throw ValidationError(
                        "--at: \(text) is not an RFC 3339 time with an offset, like 2026-12-01T07:00:00-03:00")
                }
                draft = .rule(.timer(state: state, at: date))
            default:
                throw ValidationError("give one of --in DURATION or --at TIME")
            }
            try AutomationCommand.add(draft, code: code, options: options, output: output)
        }
    }

    /// What over-power and idle take: the outlet, the watts and how long.
    struct PowerRuleOptions: ParsableArguments {
        @Argument(help: "The outlet's code.") var code: String
        @Option(help: "Watts.") var watts: Double
        @Option(name: .customLong("for"), help: "How long: 10s, 30m, 1h.") var hold: String

        /// Adds the rule `make` builds from the watts and the hold.
        func add(
            _ make: (Double, Int) -> AutomationRule, options: GlobalOptions, output: OutputOptions
        ) throws {
            let rule = make(try AutomationCommand.watts(watts), try AutomationCommand.duration(hold, "--for"))
            try AutomationCommand.add(.rule(rule), code: code, options: options, output: output)
        }
    }

    struct OverPower: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "over-power", abstract: "Off when the outlet's power stays at or above W watts for a while.")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var rule: PowerRuleOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try rule.add({ .overPower(watts: $0, holdSeconds: $1) }, options: options, output: output)
        }
    }

    struct Idle: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Off when the outlet's power stays at or below W watts for a while, while it reports itself on.")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var rule: PowerRuleOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try rule.add({ .idle(watts: $0, holdSeconds: $1) }, options: options, output: output)
        }
    }

    struct GroupLimit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "group-limit",
            abstract: "Keep a group of outlets under a power limit, shedding the least important first.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The group's name (letters, digits, - and _).") var name: String
        @Option(help: "The limit, watts.") var watts: Double
        @Option(help: "Codes, least important first, comma-separated.") var outlets: String
        @Option(name: .customLong("for"), help: "Above the limit this long before shedding: 5s.") var hold: String
        @Flag(help: "Bring shed outlets back, in reverse order, when there is room.") var restore = false
        @Option(help: "With --restore: watts of room to keep below the limit.") var margin: Double?
        @Option(help: "With --restore: how long the room must last: 10m.") var after: String?
        @OptionGroup var output: OutputOptions

        func run() throws {
            if !restore && (margin != nil || after != nil) {
                throw ValidationError("--margin and --after go with --restore")
            }
            let restoreRule =
                try restore
                ? AutomationRule.Restore(
                    marginWatts: try AutomationCommand.watts(margin ?? 0),
                    afterSeconds: try AutomationCommand.duration(after ?? "10m", "--after"))
                : nil
            let rule = AutomationRule.groupLimit(
                .init(
                    name: name, watts: try AutomationCommand.watts(watts),
                    holdSeconds: try AutomationCommand.duration(hold, "--for"),
                    outlets: outlets.split(separator: ",", omittingEmptySubsequences: false).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    },
                    restore: restoreRule))
            try AutomationCommand.add(.rule(rule), code: nil, options: options, output: output)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List automations (of one outlet, when named).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "An outlet's code: its automations and the group limits it is in.") var code: String?
        @Flag(help: "Include removed automations.") var all = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let records = try options.withDatabase { connection in
                try AutomationCommand.book(connection).list(
                    code: code, for: AutomationCommand.actor, includingRemoved: all)
            }
            if output.format == .json {
                print(try JSONOutput.render(records.map(AutomationCommand.object)))
                return
            }
            let rows = records.map { record -> [String] in
                let state = record.removed ? "removed" : record.enabled ? "enabled" : "disabled"
                let last = record.lastFiring.map {
                    "\($0.result.rawValue) \(Format.timestamp($0.recordedAt, in: record.timeZone))"
                }
                return [
                    String(record.id), record.rule.kind.rawValue, record.code ?? "-", record.rule.summary, state,
                    record.nextDueAt.map { Format.timestamp($0, in: record.timeZone) } ?? "-", last ?? "-",
                ]
            }
            print(TextTable.render(header: ["ID", "KIND", "OUTLET", "RULE", "STATE", "NEXT", "LAST"], rows: rows))
            print("\(records.count) automation\(records.count == 1 ? "" : "s")")
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable an automation (a schedule counts from now).")
        @OptionGroup var options: GlobalOptions
        @Argument var id: Int64
        @OptionGroup var output: OutputOptions

        func run() throws { try AutomationCommand.setEnabled(id, true, options, output) }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an automation.")
        @OptionGroup var options: GlobalOptions
        @Argument var id: Int64
        @OptionGroup var output: OutputOptions

        func run() throws { try AutomationCommand.setEnabled(id, false, options, output) }
    }

    static func setEnabled(_ id: Int64, _ enabled: Bool, _ options: GlobalOptions, _ output: OutputOptions) throws {
        let found = try options.withDatabase { try book($0).setEnabled(id, enabled, for: actor) != nil }
        guard found else { throw ValidationError("no automation \(id)") }
        if output.format == .json {
            print(try JSONOutput.render(["id": id, "enabled": enabled]))
        } else {
            print("automation \(id) \(enabled ? "enabled" : "disabled")")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an automation (its history stays; its group's outlets are free again).")
        @OptionGroup var options: GlobalOptions
        @Argument var id: Int64
        @OptionGroup var output: OutputOptions

        func run() throws {
            let found = try options.withDatabase {
                try AutomationCommand.book($0).remove(id, for: AutomationCommand.actor)
            }
            guard found else { throw ValidationError("no automation \(id)") }
            if output.format == .json {
                print(try JSONOutput.render(["id": id, "removed": true]))
            } else {
                print("automation \(id) removed")
            }
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What automations did, newest first: fired (with the command), skipped, missed.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "One automation's id (all when omitted).") var id: Int64?
        @Option(help: "At most this many rows.") var limit = 50
        @OptionGroup var output: OutputOptions

        func run() throws {
            let firings = try options.withDatabase { connection in
                try AutomationCommand.book(connection).history(
                    id, for: AutomationCommand.actor, limit: max(1, min(limit, 10_000)))
            }
            if output.format == .json {
                print(try JSONOutput.render(firings.map(AutomationCommand.firingObject)))
                return
            }
            let rows = firings.map { firing -> [String] in
                [
                    Format.timestamp(firing.recordedAt), String(firing.automationID), firing.kind.rawValue,
                    firing.code ?? "-", firing.result.rawValue, firing.state?.rawValue ?? "-",
                    firing.commandID.map { "\($0) \(firing.commandStatus ?? "")" } ?? "-", firing.reason,
                ]
            }
            print(
                TextTable.render(
                    header: ["WHEN", "AUTOMATION", "KIND", "OUTLET", "RESULT", "STATE", "COMMAND", "REASON"], rows: rows
                ))
        }
    }
}

extension SwitchState: ExpressibleByArgument {}
