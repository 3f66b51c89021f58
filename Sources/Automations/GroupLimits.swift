import Foundation
import Telemetry

/// One group limit in a round (docs/AUTOMATIONS.md, "Group limits"), pure: ``init(_:slackSeconds:)`` says where it
/// goes on from and since when to read, ``follow(members:readings:)`` follows its outlets' readings and says whom to
/// shed or restore.
public struct GroupLimits: Sendable {
    public let row: GroupLimitRow
    /// Where the group is.
    public private(set) var watch: GroupWatch
    /// Readings measured after this are followed; each member's power as of this instant starts the total.
    public let since: Date

    /// Where `row` goes on from: its stored watch, unless it was not followed for longer than it can look back (its
    /// longest wait plus `slackSeconds`: a new group, or no outletd ran), then afresh from that far back.
    public init(_ row: GroupLimitRow, slackSeconds: Double = 60) {
        self.row = row
        var watch = row.stored
        let horizon = row.now.addingTimeInterval(
            -Double(max(row.holdSeconds, row.restore?.afterSeconds ?? 0)) - slackSeconds)
        if (watch.seenUntil ?? .distantPast) < horizon {
            watch.runStart = nil
            watch.belowSince = nil
            watch.seenUntil = nil
        }
        self.watch = watch
        since = max(watch.seenUntil ?? horizon, horizon)
    }

    /// Follows `readings` of `members` (least important first; a reading's member is its index) and returns the
    /// firings: outlets shed (off) and restored (on), and "nothing to shed" (skipped, no outlet).
    public mutating func follow(members: [GroupMemberRow], readings: [(member: Int, reading: PowerReading)])
        -> [PlannedFiring]
    {
        watch.members = members.map(\.member)
        let codes = members.map(\.member.code)
        let rule = AutomationRule.GroupLimit(
            name: row.name, watts: row.watts, holdSeconds: row.holdSeconds, outlets: codes, restore: row.restore)
        return watch.follow(readings, rule: rule).map { action in
            switch action {
            case .shed(let index, let drew, let total, let at):
                firing(members[index], .off, at: at, cause: Self.shedCause(row, code: codes[index], drew, total))
            case .restore(let index, let drew, let total, let at):
                firing(members[index], .on, at: at, cause: Self.restoreCause(row, code: codes[index], drew, total))
            case .nothingToShed(let total, let at):
                PlannedFiring(
                    automationID: row.id, kind: .groupLimit, target: .none, state: nil, dueAt: at,
                    cause: Self.nothingToShedCause(row, total), result: .skipped)
            }
        }
    }

    private func firing(_ member: GroupMemberRow, _ state: SwitchState, at: Date, cause: String) -> PlannedFiring {
        PlannedFiring(
            automationID: row.id, kind: .groupLimit,
            target: AutomationTarget(
                deviceID: member.deviceID, code: member.member.code, enabled: member.enabled, ownerStillOwns: true),
            state: state, dueAt: at, cause: cause, result: .fired)
    }

    static func shedCause(_ row: GroupLimitRow, code: String, _ drew: Double, _ total: Double) -> String {
        "group-limit \(row.name): \(AutomationRule.roundedWatts(total)) W above \(AutomationRule.watts(row.watts)) W "
            + "for \(AutomationDuration.format(row.holdSeconds)); shed \(code) "
            + "(the least important drawing power: \(AutomationRule.roundedWatts(drew)) W)"
    }

    static func restoreCause(_ row: GroupLimitRow, code: String, _ drew: Double, _ total: Double) -> String {
        "group-limit \(row.name): \(AutomationRule.roundedWatts(total)) W plus the "
            + "\(AutomationRule.roundedWatts(drew)) W it drew stayed below "
            + "\(AutomationRule.watts(row.watts - (row.restore?.marginWatts ?? 0))) W for "
            + "\(AutomationDuration.format(row.restore?.afterSeconds ?? 0)); restore \(code)"
    }

    static func nothingToShedCause(_ row: GroupLimitRow, _ total: Double) -> String {
        "nothing_to_shed: group-limit \(row.name): \(AutomationRule.roundedWatts(total)) W above "
            + "\(AutomationRule.watts(row.watts)) W for \(AutomationDuration.format(row.holdSeconds)), and every "
            + "outlet is shed or draws nothing"
    }
}
