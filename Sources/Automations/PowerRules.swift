import Foundation
import Telemetry

/// What a runner keeps of the over-power and idle rules it follows, between its rounds: where each rule is, and
/// what of that is in the database. A rule's row is written when its run starts, ends or fires, and otherwise at most
/// every ``PowerRules/persistSeconds``: the readings it has followed since are followed again, to the same
/// decisions, by whichever runner goes on from the row.
public struct PowerWatchMemory: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        /// What the row holds (as this runner last read or wrote it).
        var stored: PowerWatch
        /// Where the rule is: `stored` plus the readings followed since.
        var current: PowerWatch
        var storedAt: Date
    }

    var entries: [Int64: Entry] = [:]

    public init() {}

    /// The rules remembered.
    public var automationIDs: Set<Int64> { Set(entries.keys) }
}

/// One round of the over-power and idle rules (docs/AUTOMATIONS.md, "Power rules"), pure: ``init(_:memory:slackSeconds:)``
/// says where each rule goes on from and which outlets' readings to read, ``follow(_:)`` follows them and says what
/// fired, ``toSave`` which rows to write, ``memory`` what to keep for the next round.
public struct PowerRules: Sendable {
    /// How often a rule's row takes the readings followed when nothing else about it changed, seconds.
    public static let persistSeconds = 5.0

    /// One rule in this round.
    public struct Rule: Sendable, Equatable {
        public var row: PowerRuleRow
        /// Where the rule is.
        public var watch: PowerWatch
        /// When its row was written, as far as this runner knows.
        public var storedAt: Date
        /// Readings measured after this are followed.
        public var since: Date
    }

    public private(set) var rules: [Rule]
    /// The database's clock this round.
    public let now: Date

    /// Where each of `rows` goes on from: where this runner left it (`memory`) unless another runner wrote its row
    /// since, else its row; a rule not followed for longer than it can look back (its hold plus `slackSeconds`: a new
    /// rule, or no outletd ran) starts afresh from that far back.
    public init(_ rows: [PowerRuleRow], memory: PowerWatchMemory, slackSeconds: Double = 60) {
        now = rows.first?.now ?? .distantPast
        let now = self.now
        rules = rows.map { row in
            let remembered = memory.entries[row.id].flatMap { $0.stored == row.stored ? $0 : nil }
            var watch = remembered?.current ?? row.stored
            let horizon = now.addingTimeInterval(-Double(row.holdSeconds) - slackSeconds)
            if (watch.seenUntil ?? .distantPast) < horizon {
                watch.runStart = nil
                watch.seenUntil = nil
            }
            return Rule(
                row: row, watch: watch, storedAt: remembered?.storedAt ?? now,
                since: max(watch.seenUntil ?? horizon, horizon))
        }
    }

    /// The rules (their indices) whose outlet stored readings newer than what the rule followed: only those are read.
    public var needingReadings: [Int] {
        rules.indices.filter { index in
            rules[index].row.newestReading.map { $0 > rules[index].since } ?? false
        }
    }

    /// The newest reading any of `indices` can have: bounds what is read.
    public func readingsUntil(_ indices: [Int]) -> Date {
        indices.compactMap { rules[$0].row.newestReading }.max() ?? now
    }

    /// Follows each rule's `readings` (one list per rule, in order) and returns the firings, in rule order: off for
    /// the reading that met an over-power or idle rule.
    public mutating func follow(_ readings: [[PowerReading]]) -> [PlannedFiring] {
        var firings: [PlannedFiring] = []
        for index in rules.indices {
            let row = rules[index].row
            let condition: PowerWatch.Condition = row.kind == .overPower ? .atLeast(row.watts) : .atMost(row.watts)
            let met = rules[index].watch.follow(
                readings.indices.contains(index) ? readings[index] : [], condition: condition,
                holdSeconds: row.holdSeconds, reportsOn: row.kind == .idle ? row.reportsOn : true)
            guard let met, let start = rules[index].watch.runStart else { continue }
            firings.append(
                PlannedFiring(
                    automationID: row.id, kind: row.kind, target: row.target, state: .off, dueAt: met.at,
                    cause: Self.cause(row, met: met, heldSeconds: Int(met.at.timeIntervalSince(start))),
                    result: .fired))
        }
        return firings
    }

    /// "over-power: 2100 W, at or above 2000 W for 2s (rule: 2s)".
    static func cause(_ row: PowerRuleRow, met: PowerReading, heldSeconds: Int) -> String {
        let held = AutomationDuration.format(heldSeconds)
        let limit = "\(AutomationRule.watts(row.watts)) W"
        let rule = "(rule: \(AutomationDuration.format(row.holdSeconds)))"
        let watts = AutomationRule.roundedWatts(met.watts)
        return row.kind == .overPower
            ? "over-power: \(watts) W, at or above \(limit) for \(held) \(rule)"
            : "idle: \(watts) W, at or below \(limit) while on for \(held) \(rule)"
    }

    /// The rules whose row changes: when a run starts, ends or fires, and otherwise every ``persistSeconds``.
    public var toSave: [(automationID: Int64, watch: PowerWatch)] {
        rules.filter { rule in
            rule.watch.runStart != rule.row.stored.runStart || rule.watch.firedRun != rule.row.stored.firedRun
                || (rule.watch.seenUntil != rule.row.stored.seenUntil
                    && now.timeIntervalSince(rule.storedAt) >= Self.persistSeconds)
        }.map { ($0.row.id, $0.watch) }
    }

    /// What the runner keeps for its next round, once ``toSave`` is saved.
    public var memory: PowerWatchMemory {
        let written = Set(toSave.map(\.automationID))
        var memory = PowerWatchMemory()
        for rule in rules {
            memory.entries[rule.row.id] =
                written.contains(rule.row.id)
                ? .init(stored: rule.watch, current: rule.watch, storedAt: now)
                : .init(stored: rule.row.stored, current: rule.watch, storedAt: rule.storedAt)
        }
        return memory
    }
}
