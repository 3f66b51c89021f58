import Foundation
import Telemetry

/// What a due schedule or timer does (docs/AUTOMATIONS.md, "Schedules and the clock", "Catching up").
public enum DueRules {
    /// How many occurrences of one rule a round records at most (a schedule due daily while no outletd ran for
    /// more than a year goes on in the next round).
    public static let occurrencesPerRound = 400

    /// The firings of `rule` due by its `now`, in time order, and when it is due next (nil: never again). An
    /// occurrence later than `catchUpSeconds` (no outletd ran when it was due) is missed; a later one fires,
    /// saying how late.
    public static func firings(of rule: DueRule, catchUpSeconds: Double) -> (firings: [PlannedFiring], next: Date?) {
        let what =
            rule.kind == .schedule
            ? "schedule: \(rule.state.rawValue) at \(Tariff.clock(rule.minute)) \(Weekday.describe(rule.days))"
            : "timer: \(rule.state.rawValue)"
        var firings: [PlannedFiring] = []
        var dueAt: Date? = rule.nextDueAt
        while let at = dueAt, at <= rule.now, firings.count < occurrencesPerRound {
            let late = rule.now.timeIntervalSince(at)
            let missed = late > catchUpSeconds
            let cause =
                missed
                ? "missed: \(what) was due \(Int(late)) s ago, while no outletd ran "
                    + "(automations.catch_up_seconds: \(Int(catchUpSeconds)))"
                : late < 1 ? what : "\(what) (\(Int(late)) s late, caught up at start)"
            firings.append(
                PlannedFiring(
                    automationID: rule.id, kind: rule.kind, target: rule.target, state: rule.state, dueAt: at,
                    cause: cause, result: missed ? .missed : .fired))
            dueAt =
                rule.kind == .schedule
                ? ScheduleClock.next(after: at, minute: rule.minute, days: rule.days, in: rule.zone) : nil
        }
        return (firings, dueAt)
    }
}
