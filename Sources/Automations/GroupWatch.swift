import Foundation
import Telemetry

/// How a group-limit rule follows its outlets' readings (docs/AUTOMATIONS.md, "Group limits").
///
/// The group's total at any moment is the sum of each member's latest reading. Readings of all members are followed
/// in time order; after each one:
/// - **shed**: when the total has stayed above the limit for `holdSeconds` (measured from the reading that took it
///   above to the reading now), the least important member that draws power and is not shed yet is switched off, and
///   the wait starts again, so the next one goes only if the total stays above for another `holdSeconds` after it;
///   when nothing is left to shed, that is said once per stretch above the limit;
/// - **restore** (when set): while not above, the member shed last is the candidate; when the total plus the power it
///   drew when shed has stayed below the limit minus the margin for `afterSeconds`, it is switched back on, and the
///   wait starts again for the next.
///
/// Pure: the state is persisted between evaluations, each field in the column of its name: ``runStart``,
/// ``belowSince``, ``firedRun`` and ``seenUntil`` in the group's row of `automations` (`watch_run_start`,
/// `watch_below_since`, `watch_fired_run`, `watch_seen_until`), a member's ``Member/shedAt`` and
/// ``Member/shedWatts`` in its row of `automation_group_members` (`shed_at`, `shed_watts`).
public struct GroupWatch: Sendable, Equatable {
    /// A member of the group, least important first.
    public struct Member: Sendable, Equatable {
        public var code: String
        /// The latest reading's power (nil: none yet; counts as 0).
        public var watts: Double?
        /// When it was shed (nil: not shed).
        public var shedAt: Date?
        /// What it drew when shed.
        public var shedWatts: Double?

        public init(code: String, watts: Double? = nil, shedAt: Date? = nil, shedWatts: Double? = nil) {
            self.code = code
            self.watts = watts
            self.shedAt = shedAt
            self.shedWatts = shedWatts
        }
    }

    /// What the rule decided at a reading.
    public enum Action: Sendable, Equatable {
        /// Switch member `index` off; it drew `watts`; the total was `total`.
        case shed(index: Int, watts: Double, total: Double, at: Date)
        /// Switch member `index` back on; it drew `watts` when shed; the total was `total`.
        case restore(index: Int, watts: Double, total: Double, at: Date)
        /// Above the limit for the hold, and every member is shed or draws nothing.
        case nothingToShed(total: Double, at: Date)
    }

    public var members: [Member]
    /// The first reading of the current run above the limit (nil: not above), or since the last shed of this run.
    public var runStart: Date?
    /// Since when the restore condition has held (nil: it does not).
    public var belowSince: Date?
    /// The start of the run above the limit for which "nothing to shed" was recorded: a run says it once.
    public var firedRun: Date?
    /// The newest reading followed.
    public var seenUntil: Date?

    public init(
        members: [Member], runStart: Date? = nil, belowSince: Date? = nil, firedRun: Date? = nil,
        seenUntil: Date? = nil
    ) {
        self.members = members
        self.runStart = runStart
        self.belowSince = belowSince
        self.firedRun = firedRun
        self.seenUntil = seenUntil
    }

    /// The sum of the members' latest readings.
    public var total: Double { members.reduce(0) { $0 + ($1.watts ?? 0) } }

    /// Follows `readings` (member index and reading; after ``seenUntil``, in time order; older ones are passed over)
    /// under `rule` and returns what to do, in order.
    public mutating func follow(_ readings: [(member: Int, reading: PowerReading)], rule: AutomationRule.GroupLimit)
        -> [Action]
    {
        var actions: [Action] = []
        for (index, reading) in readings where members.indices.contains(index) {
            if let seenUntil, reading.at <= seenUntil { continue }
            seenUntil = reading.at
            members[index].watts = reading.watts
            let total = self.total
            guard total <= rule.watts else {
                belowSince = nil
                let since = runStart ?? reading.at
                runStart = since
                guard reading.at.timeIntervalSince(since) >= Double(rule.holdSeconds) else { continue }
                if let victim = members.indices.first(where: {
                    members[$0].shedAt == nil && (members[$0].watts ?? 0) > 0
                }) {
                    let watts = members[victim].watts ?? 0
                    members[victim].shedAt = reading.at
                    members[victim].shedWatts = watts
                    runStart = nil
                    actions.append(.shed(index: victim, watts: watts, total: total, at: reading.at))
                } else if firedRun != since {
                    firedRun = since
                    actions.append(.nothingToShed(total: total, at: reading.at))
                }
                continue
            }
            runStart = nil
            guard let restore = rule.restore,
                let candidate = members.indices.filter({ members[$0].shedAt != nil })
                    .max(by: { (members[$0].shedAt ?? .distantPast) < (members[$1].shedAt ?? .distantPast) })
            else {
                belowSince = nil
                continue
            }
            guard total + (members[candidate].shedWatts ?? 0) < rule.watts - restore.marginWatts else {
                belowSince = nil
                continue
            }
            let since = belowSince ?? reading.at
            belowSince = since
            if reading.at.timeIntervalSince(since) >= Double(restore.afterSeconds) {
                let drew = members[candidate].shedWatts ?? 0
                members[candidate].shedAt = nil
                members[candidate].shedWatts = nil
                belowSince = nil
                actions.append(.restore(index: candidate, watts: drew, total: total, at: reading.at))
            }
        }
        return actions
    }
}
