import Foundation
import Postgres
import Runtime
import Telemetry

extension AutomationStore {
    /// Follows the readings of every group limit's outlets since it last looked (at most its longest wait plus
    /// `slackSeconds` back), sheds and restores outlets as ``GroupWatch`` decides, and saves where it is. One runner
    /// at a time (an advisory lock); nothing when another holds it.
    public func watchGroups(instanceID: String, slackSeconds: Double = 60) throws -> [AutomationOutcome] {
        try connection.transaction {
            let locked = try connection.execute(
                "SELECT pg_try_advisory_xact_lock($1)", [AdvisoryLock.Single.groupRules.rawValue])
            guard try locked.bool(row: 0, column: 0) == true else { return [] }
            let groups = try connection.execute(
                """
                SELECT a.id, a.group_name, a.watts, a.hold_seconds, a.restore_margin_watts, a.restore_after_seconds,
                       a.watch_run_start, a.watch_seen_until, a.watch_fired_run, a.watch_below_since, clock_timestamp()
                FROM automations a
                WHERE a.kind = 'group-limit' AND a.enabled AND a.removed_at IS NULL
                ORDER BY a.id
                """)
            var outcomes: [AutomationOutcome] = []
            for row in 0..<groups.rowCount {
                guard let id = try groups.int64(row: row, column: 0), let now = try groups.date(row: row, column: 10),
                    let watts = try groups.double(row: row, column: 2), let hold = try groups.int(row: row, column: 3)
                else { continue }
                var restore: AutomationRule.Restore?
                if let margin = try groups.double(row: row, column: 4), let after = try groups.int(row: row, column: 5)
                {
                    restore = .init(marginWatts: margin, afterSeconds: after)
                }
                let name = groups[row, 1] ?? ""
                var watch = GroupWatch(
                    members: [], aboveSince: try groups.date(row: row, column: 6),
                    belowSince: try groups.date(row: row, column: 9),
                    exhaustedRun: try groups.date(row: row, column: 8),
                    seenUntil: try groups.date(row: row, column: 7))
                let horizon = now.addingTimeInterval(-Double(max(hold, restore?.afterSeconds ?? 0)) - slackSeconds)
                if (watch.seenUntil ?? .distantPast) < horizon {
                    watch.aboveSince = nil
                    watch.belowSince = nil
                    watch.seenUntil = nil
                }
                let since = max(watch.seenUntil ?? horizon, horizon)
                // Each member's power as of `since`: its latest reading of the hour before.
                let members = try connection.execute(
                    """
                    SELECT m.device_id, d.code, m.shed_at, m.shed_watts, d.enabled, l.power_watts
                    FROM automation_group_members m JOIN devices d ON d.id = m.device_id
                    LEFT JOIN LATERAL (
                        SELECT power_watts
                        FROM samples_between(
                            ARRAY[m.device_id], $2::timestamptz - interval '1 hour', $2::timestamptz + interval '1 microsecond'
                        ) s
                        WHERE s.measured_at > $2 - interval '1 hour'
                        ORDER BY s.measured_at DESC LIMIT 1) l ON true
                    WHERE m.automation_id = $1
                    ORDER BY m.position
                    """, [id, since])
                var deviceIDs: [Int64] = []
                var enabled: [Bool] = []
                for member in 0..<members.rowCount {
                    deviceIDs.append(try members.int64(row: member, column: 0) ?? 0)
                    enabled.append(try members.bool(row: member, column: 4) ?? false)
                    watch.members.append(
                        .init(
                            code: members[member, 1] ?? "", watts: try members.double(row: member, column: 5),
                            shedAt: try members.date(row: member, column: 2),
                            shedWatts: try members.double(row: member, column: 3)))
                }
                let samples = try connection.execute(
                    """
                    SELECT m.ordinal, s.measured_at, s.power_watts
                    FROM unnest($1::integer[]) WITH ORDINALITY AS m(device_id, ordinal)
                    CROSS JOIN LATERAL samples_between(ARRAY[m.device_id], $2::timestamptz, 'infinity') s
                    WHERE s.measured_at > $2
                    ORDER BY s.measured_at, m.ordinal
                    LIMIT 50000
                    """, [deviceIDs, since])
                var readings: [(member: Int, reading: PowerReading)] = []
                for sample in 0..<samples.rowCount {
                    guard let ordinal = try samples.int(row: sample, column: 0),
                        let at = try samples.date(row: sample, column: 1),
                        let power = try samples.double(row: sample, column: 2)
                    else { continue }
                    readings.append((ordinal - 1, PowerReading(at: at, watts: power)))
                }
                let rule = AutomationRule.GroupLimit(
                    name: name, watts: watts, holdSeconds: hold, outlets: watch.members.map(\.code), restore: restore)
                let limit = AutomationRule.watts(watts)
                let codes = watch.members.map(\.code)
                /// Switches member `index` to `state` for the reading at `at`.
                func switchMember(_ index: Int, _ state: SwitchState, at: Date, _ cause: String) throws
                    -> AutomationOutcome?
                {
                    try record(
                        id: id, kind: .groupLimit,
                        target: Target(
                            deviceID: deviceIDs[index], code: codes[index], enabled: enabled[index],
                            ownerStillOwns: true),
                        state: state, dueAt: at, cause: cause, result: .fired, instanceID: instanceID)
                }
                for action in watch.follow(readings, rule: rule) {
                    let outcome: AutomationOutcome?
                    switch action {
                    case .shed(let index, let drew, let total, let at):
                        outcome = try switchMember(
                            index, .off, at: at,
                            "group-limit \(name): \(Self.roundedWatts(total)) W above \(limit) W for "
                                + "\(AutomationDuration.format(hold)); shed \(codes[index]) "
                                + "(the least important drawing power: \(Self.roundedWatts(drew)) W)")
                    case .restore(let index, let total, let drew, let at):
                        outcome = try switchMember(
                            index, .on, at: at,
                            "group-limit \(name): \(Self.roundedWatts(total)) W plus the "
                                + "\(Self.roundedWatts(drew)) W it drew stayed below "
                                + "\(AutomationRule.watts(watts - (restore?.marginWatts ?? 0))) W for "
                                + "\(AutomationDuration.format(restore?.afterSeconds ?? 0)); restore \(codes[index])")
                    case .nothingToShed(let total, let at):
                        outcome = try record(
                            id: id, kind: .groupLimit,
                            target: Target(deviceID: nil, code: nil, enabled: true, ownerStillOwns: true),
                            state: nil, dueAt: at,
                            cause:
                                "nothing_to_shed: group-limit \(name): \(Self.roundedWatts(total)) W above \(limit) W "
                                + "for \(AutomationDuration.format(hold)), and every outlet is shed or draws nothing",
                            result: .skipped, instanceID: instanceID)
                    }
                    if let outcome { outcomes.append(outcome) }
                }
                try connection.execute(
                    """
                    UPDATE automation_group_members m SET shed_at = u.shed_at, shed_watts = u.shed_watts
                    FROM unnest($2::integer[], $3::timestamptz[], $4::double precision[]) AS u(device_id, shed_at, shed_watts)
                    WHERE m.automation_id = $1 AND m.device_id = u.device_id
                      AND (m.shed_at IS DISTINCT FROM u.shed_at OR m.shed_watts IS DISTINCT FROM u.shed_watts)
                    """, [id, deviceIDs, watch.members.map(\.shedAt), watch.members.map(\.shedWatts)])
                try connection.execute(
                    """
                    UPDATE automations SET watch_run_start = $2, watch_seen_until = $3, watch_fired_run = $4,
                                           watch_below_since = $5
                    WHERE id = $1
                    """, [id, watch.aboveSince, watch.seenUntil, watch.exhaustedRun, watch.belowSince])
            }
            return outcomes
        }
    }

    static func roundedWatts(_ watts: Double) -> String { AutomationRule.watts((watts * 10).rounded() / 10) }
}
