import Foundation
import Telemetry

/// What an automation is (docs/AUTOMATIONS.md): a rule that switches an outlet, or a group of outlets, by itself.
public enum AutomationKind: String, Sendable, CaseIterable, Codable {
    /// A state at a local time on given weekdays, in the outlet's time zone.
    case schedule
    /// A state once, at an instant.
    case timer
    /// Off when the outlet's power stays at or above a limit for a while.
    case overPower = "over-power"
    /// Off when the outlet's power stays at or below a level for a while, while it reports itself on.
    case idle
    /// A named group of outlets under a power limit, shed from the least important (operators only).
    case groupLimit = "group-limit"

    /// Whether the rule watches readings (rather than the clock).
    public var watchesPower: Bool { self == .overPower || self == .idle || self == .groupLimit }
}

/// The rule of an automation, validated: every value within ``AutomationRule/Limits``.
public enum AutomationRule: Sendable, Equatable {
    /// `state` at `minute` (after local midnight) on `days`.
    case schedule(state: SwitchState, minute: Int, days: [Weekday])
    /// `state` once, at `at`.
    case timer(state: SwitchState, at: Date)
    /// Off when power ≥ `watts` for `holdSeconds`.
    case overPower(watts: Double, holdSeconds: Int)
    /// Off when power ≤ `watts` for `holdSeconds` while the outlet reports itself on.
    case idle(watts: Double, holdSeconds: Int)
    /// Outlets `outlets` (least important first) shed while their total stays above `watts` for `holdSeconds`.
    case groupLimit(GroupLimit)

    /// A group's limit and, optionally, how shed outlets come back.
    public struct GroupLimit: Sendable, Equatable {
        public var name: String
        public var watts: Double
        public var holdSeconds: Int
        /// Codes, least important first.
        public var outlets: [String]
        public var restore: Restore?

        public init(name: String, watts: Double, holdSeconds: Int, outlets: [String], restore: Restore?) {
            self.name = name
            self.watts = watts
            self.holdSeconds = holdSeconds
            self.outlets = outlets
            self.restore = restore
        }
    }

    /// A shed outlet comes back when the group's total plus the power it drew when shed stays below the limit minus
    /// `marginWatts` for `afterSeconds`.
    public struct Restore: Sendable, Equatable {
        public var marginWatts: Double
        public var afterSeconds: Int

        public init(marginWatts: Double, afterSeconds: Int) {
            self.marginWatts = marginWatts
            self.afterSeconds = afterSeconds
        }
    }

    public var kind: AutomationKind {
        switch self {
        case .schedule: .schedule
        case .timer: .timer
        case .overPower: .overPower
        case .idle: .idle
        case .groupLimit: .groupLimit
        }
    }

    /// The bounds every rule is checked against, wherever it comes from (CLI, API).
    public enum Limits {
        /// Longest `--for`/`--after`: a week.
        public static let holdSeconds = 1...604_800
        /// Furthest timer: a year ahead.
        public static let timerSeconds = 1...31_622_400
        /// Watts an outlet's rule may name: an over-power limit from ``minimumWatts``, an idle level 0 or from it.
        public static let outletWatts = 0.0...100_000.0
        /// The smallest limit but 0 a power rule takes, W: below it no meter tells one level from another, and a
        /// value such as 1e-300 would show as 0 where numbers are rounded (the API's three decimals).
        public static let minimumWatts = 0.1
        /// Watts a group's limit may name.
        public static let groupWatts = 1.0...100_000_000.0
        /// Outlets in one group.
        public static let groupOutlets = 1...1_000
        /// Automations of one outlet made by its owner in the app.
        public static let perOutletForOwners = 20
    }

    /// Why the rule is not valid, or nil. `now` bounds a timer.
    public func problem(now: Date) -> String? {
        switch self {
        case .schedule(_, let minute, let days):
            if !(0..<1_440).contains(minute) { return "at: expected a time from 00:00 to 23:59" }
            if days.isEmpty { return "days: name at least one day" }
        case .timer(_, let at):
            let seconds = at.timeIntervalSince(now)
            if seconds <= 0 { return "at: the time has passed" }
            if seconds > Double(Limits.timerSeconds.upperBound) { return "at: at most a year ahead" }
        case .overPower(let watts, let hold):
            if !(watts >= Limits.minimumWatts && Limits.outletWatts.contains(watts)) {
                return "watts: expected 0.1 to 100000"
            }
            return Self.holdProblem(hold, "for")
        case .idle(let watts, let hold):
            if !(watts == 0 || (watts >= Limits.minimumWatts && Limits.outletWatts.contains(watts))) {
                return "watts: expected 0, or 0.1 to 100000"
            }
            return Self.holdProblem(hold, "for")
        case .groupLimit(let group):
            if !Limits.groupWatts.contains(group.watts) { return "watts: expected 1 to 100000000" }
            if let problem = Self.holdProblem(group.holdSeconds, "for") { return problem }
            if !Limits.groupOutlets.contains(group.outlets.count) { return "outlets: name 1 to 1000 outlets" }
            if Set(group.outlets).count != group.outlets.count { return "outlets: an outlet is named twice" }
            if let bad = group.outlets.first(where: { !DeviceCode.isValid($0) }) {
                return "outlets: \(OwnerText.inert(bad)) is not a device code"
            }
            if !DeviceCode.isValid(group.name) {
                return "name: letters, digits, '-' and '_', at most 64"
            }
            if let restore = group.restore {
                if !(restore.marginWatts >= 0 && restore.marginWatts < group.watts) {
                    return "margin: expected 0 or more and below the limit"
                }
                return Self.holdProblem(restore.afterSeconds, "after")
            }
        }
        return nil
    }

    private static func holdProblem(_ seconds: Int, _ name: String) -> String? {
        Limits.holdSeconds.contains(seconds) ? nil : "\(name): expected a duration from 1s to 7 days (168h)"
    }

    /// What the rule does, in words: "off at 23:00 mon-fri", "off when ≥ 2000 W for 10s".
    public var summary: String {
        switch self {
        case .schedule(let state, let minute, let days):
            "\(state.rawValue) at \(Tariff.clock(minute)) \(Weekday.describe(days))"
        case .timer(let state, let at):
            "\(state.rawValue) at \(at.formatted(.iso8601))"
        case .overPower(let watts, let hold):
            "off when at or above \(Self.watts(watts)) W for \(AutomationDuration.format(hold))"
        case .idle(let watts, let hold):
            "off when at or below \(Self.watts(watts)) W for \(AutomationDuration.format(hold)) while on"
        case .groupLimit(let group):
            "keep \(group.name) under \(Self.watts(group.watts)) W (shed after \(AutomationDuration.format(group.holdSeconds)))"
                + (group.restore.map {
                    ", restore below \(Self.watts(group.watts - $0.marginWatts)) W for \(AutomationDuration.format($0.afterSeconds))"
                } ?? "")
        }
    }

    /// Watts as they were given: the shortest decimal that reads back as the same value, without a needless `.0`
    /// (the API's `watts` shows the same digits).
    public static func watts(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Measured watts to a tenth, as causes and reasons show them: `2100`, `1999.9`.
    public static func roundedWatts(_ value: Double) -> String { watts((value * 10).rounded() / 10) }
}

/// Durations as operators type them: `20s`, `10m`, `2h`, or several (`1h30m`).
public enum AutomationDuration {
    /// Seconds of `text`, or nil: every part is digits and a unit, the total more than 0.
    public static func parse(_ text: String) -> Int? {
        var total = 0
        var digits = ""
        var sawPart = false
        for character in text.lowercased() {
            if let digit = character.wholeNumberValue, character.isASCII {
                guard digits.count < 9 else { return nil }
                digits.append(Character(String(digit)))
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3_600
            case "d": unit = 86_400
            default: return nil
            }
            guard let value = Int(digits) else { return nil }
            total += value * unit
            digits = ""
            sawPart = true
        }
        guard digits.isEmpty, sawPart, total > 0 else { return nil }
        return total
    }

    /// `seconds` as the shortest text ``parse(_:)`` reads back: `20s`, `10m`, `2h`, `1h30m`.
    public static func format(_ seconds: Int) -> String {
        var parts: [String] = []
        var rest = seconds
        for (unit, name) in [(86_400, "d"), (3_600, "h"), (60, "m")] where rest >= unit {
            parts.append("\(rest / unit)\(name)")
            rest %= unit
        }
        if rest > 0 || parts.isEmpty { parts.append("\(rest)s") }
        return parts.joined()
    }

    /// What to say about a duration that ``parse(_:)`` refused.
    public static func problem(_ name: String, _ text: String) -> String {
        "\(name): \(OwnerText.inert(text)) is not a duration; expected a positive number with s, m or h, like 20s, 10m or 2h"
    }
}

/// What an automation did at one moment: the rows of `automation history`.
public enum AutomationResult: String, Sendable, CaseIterable, Codable {
    /// A command was requested.
    case fired
    /// The rule met but no command was requested (the reason says why).
    case skipped
    /// A schedule or timer was due while no outletd ran, longer ago than `automations.catch_up_seconds`.
    case missed
}
