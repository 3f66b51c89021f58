import Automations
import Foundation
import Postgres
import Telemetry

/// The runner's side (docs/AUTOMATIONS.md, "How a firing happens once"): the typed SQL of ``AutomationRuleStore``.
/// Each `with…` method is one transaction that keeps other instances' runners off the rules it reads (the due ones
/// `FOR UPDATE SKIP LOCKED`; the power rules and the group limits as a whole by an advisory lock each); what the
/// round records and saves in it commits with it, so that whatever instance evaluates next goes on from there. A
/// kill at any point leaves either all of a firing (row, command, new state) or none of it. What fires, and why, is
/// decided in `Automations` (``AutomationRound``).
extension AutomationStore: AutomationRuleStore, AutomationRuleTransaction {
    public typealias Transaction = AutomationStore

    public func withRulesDue<T>(limit: Int, _ body: (AutomationStore, [DueRule]) throws -> T) throws -> T {
        try connection.transaction {
            let due = try connection.execute(
                """
                SELECT a.id, a.kind, a.state, a.at_minute, a.days::text, a.next_due_at, d.id, d.code, d.enabled,
                       outletd_outlet_zone(d.id), a.app_user_id IS NULL OR a.app_user_id = d.owner_id,
                       clock_timestamp()
                FROM automations a JOIN devices d ON d.id = a.device_id
                WHERE a.enabled AND a.removed_at IS NULL AND a.next_due_at IS NOT NULL
                  AND a.next_due_at <= clock_timestamp()
                ORDER BY a.next_due_at
                LIMIT $1
                FOR UPDATE OF a SKIP LOCKED
                """, [Int64(limit)])
            var rules: [DueRule] = []
            for row in 0..<due.rowCount {
                guard let id = try due.int64(row: row, column: 0),
                    let kind = AutomationKind(rawValue: due[row, 1] ?? ""),
                    let state = due[row, 2].flatMap(SwitchState.init(rawValue:)),
                    let next = try due.date(row: row, column: 5), let now = try due.date(row: row, column: 11)
                else { continue }
                rules.append(
                    DueRule(
                        id: id, kind: kind, state: state, minute: try due.int(row: row, column: 3) ?? 0,
                        days: Self.weekdays(due[row, 4]), nextDueAt: next,
                        target: AutomationTarget(
                            deviceID: try due.int64(row: row, column: 6), code: due[row, 7],
                            enabled: try due.bool(row: row, column: 8) ?? false,
                            ownerStillOwns: try due.bool(row: row, column: 10) ?? false),
                        zone: TimeZone(identifier: due[row, 9] ?? "UTC") ?? .gmt, now: now))
            }
            return try body(self, rules)
        }
    }

    public func saveNextDue(automationID: Int64, _ next: Date?) throws {
        try connection.execute("UPDATE automations SET next_due_at = $2 WHERE id = $1", [automationID, next])
    }

    public func record(_ firing: PlannedFiring, instanceID: String) throws -> RecordedFiring? {
        let inserted = try connection.execute(
            """
            INSERT INTO automation_firings (automation_id, due_at, result, device_id, state, reason, instance_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (automation_id, due_at, (coalesce(device_id, 0))) DO NOTHING
            RETURNING id
            """,
            [
                firing.automationID, firing.dueAt, firing.result.rawValue, firing.target.deviceID,
                firing.state?.rawValue, firing.reason, instanceID,
            ])
        guard let firingID = try inserted.rowCount == 1 ? inserted.int64(row: 0, column: 0) : nil else { return nil }
        guard firing.result == .fired, let code = firing.target.code, let state = firing.state else {
            return RecordedFiring(commandID: nil)
        }
        let command = try CommandStore(connection: connection).enqueue(
            code: code, requested: state == .on ? .on : .off, source: .automation,
            requestedBy: "automation:\(firing.automationID)", requestID: nil)
        try connection.execute("UPDATE commands SET cause = $2 WHERE id = $1", [command, firing.cause])
        try connection.execute("UPDATE automation_firings SET command_id = $2 WHERE id = $1", [firingID, command])
        return RecordedFiring(commandID: command)
    }

    /// `{1,2,3}` (ISO weekday numbers) as weekdays.
    static func weekdays(_ text: String?) -> [Weekday] {
        (text ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
            .split(separator: ",").compactMap { Int($0).flatMap(Weekday.init(isoNumber:)) }
    }
}
