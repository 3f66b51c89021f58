import Automations
import Foundation
import Postgres
import Runtime
import Telemetry

extension AutomationStore {
    public func withGroupLimits<T>(_ body: (AutomationStore, [GroupLimitRow]) throws -> T) throws -> T? {
        try connection.transaction {
            let locked = try connection.execute(
                "SELECT pg_try_advisory_xact_lock($1)", [AdvisoryLock.Single.groupRules.rawValue])
            guard try locked.bool(row: 0, column: 0) == true else { return nil }
            let groups = try connection.execute(
                """
                SELECT a.id, a.group_name, a.watts, a.hold_seconds, a.restore_margin_watts, a.restore_after_seconds,
                       a.watch_run_start, a.watch_seen_until, a.watch_fired_run, a.watch_below_since, clock_timestamp()
                FROM automations a
                WHERE a.kind = 'group-limit' AND a.enabled AND a.removed_at IS NULL
                ORDER BY a.id
                """)
            var rows: [GroupLimitRow] = []
            for row in 0..<groups.rowCount {
                guard let id = try groups.int64(row: row, column: 0), let now = try groups.date(row: row, column: 10),
                    let watts = try groups.double(row: row, column: 2), let hold = try groups.int(row: row, column: 3)
                else { continue }
                var restore: AutomationRule.Restore?
                if let margin = try groups.double(row: row, column: 4), let after = try groups.int(row: row, column: 5)
                {
                    restore = .init(marginWatts: margin, afterSeconds: after)
                }
                rows.append(
                    GroupLimitRow(
                        id: id, name: groups[row, 1] ?? "", watts: watts, holdSeconds: hold, restore: restore,
                        stored: GroupWatch(
                            members: [], runStart: try groups.date(row: row, column: 6),
                            belowSince: try groups.date(row: row, column: 9),
                            firedRun: try groups.date(row: row, column: 8),
                            seenUntil: try groups.date(row: row, column: 7)),
                        now: now))
            }
            return try body(self, rows)
        }
    }

    public func groupMembers(automationID: Int64, asOf: Date) throws -> [GroupMemberRow] {
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
            """, [automationID, asOf])
        return try (0..<members.rowCount).map { row in
            GroupMemberRow(
                deviceID: try members.int64(row: row, column: 0) ?? 0,
                enabled: try members.bool(row: row, column: 4) ?? false,
                member: .init(
                    code: members[row, 1] ?? "", watts: try members.double(row: row, column: 5),
                    shedAt: try members.date(row: row, column: 2), shedWatts: try members.double(row: row, column: 3)))
        }
    }

    public func groupReadings(deviceIDs: [Int64], since: Date) throws -> [(member: Int, reading: PowerReading)] {
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
        for row in 0..<samples.rowCount {
            guard let ordinal = try samples.int(row: row, column: 0), let at = try samples.date(row: row, column: 1),
                let power = try samples.double(row: row, column: 2)
            else { continue }
            readings.append((ordinal - 1, PowerReading(at: at, watts: power)))
        }
        return readings
    }

    public func saveGroup(automationID: Int64, _ watch: GroupWatch, deviceIDs: [Int64]) throws {
        try connection.execute(
            """
            UPDATE automation_group_members m SET shed_at = u.shed_at, shed_watts = u.shed_watts
            FROM unnest($2::integer[], $3::timestamptz[], $4::double precision[]) AS u(device_id, shed_at, shed_watts)
            WHERE m.automation_id = $1 AND m.device_id = u.device_id
              AND (m.shed_at IS DISTINCT FROM u.shed_at OR m.shed_watts IS DISTINCT FROM u.shed_watts)
            """, [automationID, deviceIDs, watch.members.map(\.shedAt), watch.members.map(\.shedWatts)])
        try connection.execute(
            """
            UPDATE automations SET watch_run_start = $2, watch_seen_until = $3, watch_fired_run = $4,
                                   watch_below_since = $5
            WHERE id = $1
            """, [automationID, watch.runStart, watch.seenUntil, watch.firedRun, watch.belowSince])
    }
}
