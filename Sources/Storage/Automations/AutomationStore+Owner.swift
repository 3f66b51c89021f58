import Automations
import Foundation
import Postgres
import Telemetry

extension AutomationStore {
    /// The laterals a glance reads for outlet `device` (an expression of its `devices.id`) and owner `owner` (of its
    /// `app_users.id`): `n`, the owner's enabled schedule or timer due soonest; `l`, the newest firing of the owner's
    /// automations of the outlet (not removed) and `c`, its command. An owner's outlet has at most
    /// ``AutomationRule/Limits/perOutletForOwners`` automations not removed, each read through `automations_device`
    /// and its newest firing through `automation_firings_by_automation`.
    public static func glanceJoins(device: String, owner: String) -> String {
        """
        LEFT JOIN LATERAL (
            SELECT a.* FROM automations a
            WHERE a.device_id = \(device) AND a.app_user_id = \(owner) AND a.removed_at IS NULL AND a.enabled
              AND a.next_due_at IS NOT NULL AND a.kind IN ('schedule', 'timer')
            ORDER BY a.next_due_at, a.id LIMIT 1
        ) n ON true
        LEFT JOIN LATERAL (
            SELECT f.id, f.automation_id, a.kind, f.due_at, f.recorded_at, f.result, f.state, f.command_id,
                   f.reason
            FROM automations a
            CROSS JOIN LATERAL (
                SELECT x.* FROM automation_firings x WHERE x.automation_id = a.id ORDER BY x.id DESC LIMIT 1
            ) f
            WHERE a.device_id = \(device) AND a.app_user_id = \(owner) AND a.removed_at IS NULL
            ORDER BY f.id DESC LIMIT 1
        ) l ON true
        LEFT JOIN commands c ON c.id = l.command_id
        """
    }

    /// The 20 columns ``glance(_:row:from:code:)`` reads, from ``glanceJoins(device:owner:)`` and `zone` (an
    /// expression of the outlet's IANA time zone).
    public static func glanceColumns(zone: String) -> String {
        """
        n.id, n.kind, n.state, n.at_minute, n.days::text, n.fire_at, n.next_due_at, n.created_by, n.created_at,
        \(zone), l.id, l.automation_id, l.kind, l.due_at, l.recorded_at, l.result, l.state, l.command_id, c.status,
        l.reason
        """
    }

    /// The glance of outlet `code` in `row` of `result`, its ``glanceColumns(zone:)`` from `column` on.
    public static func glance(_ result: PostgresResult, row: Int, from column: Int, code: String) throws
        -> OutletAutomationGlance
    {
        func at(_ offset: Int) -> Int { column + offset }
        let zone = result[row, at(9)] ?? "UTC"
        var glance = OutletAutomationGlance(next: nil, last: nil, timeZone: zone)
        if let id = try result.int64(row: row, column: at(0)),
            let kind = AutomationKind(rawValue: result[row, at(1)] ?? ""),
            let state = result[row, at(2)].flatMap(SwitchState.init(rawValue:))
        {
            let rule: AutomationRule
            if kind == .schedule {
                rule = .schedule(
                    state: state, minute: try result.int(row: row, column: at(3)) ?? 0,
                    days: weekdays(result[row, at(4)]))
            } else {
                rule = .timer(state: state, at: try result.date(row: row, column: at(5)) ?? .distantPast)
            }
            glance.next = AutomationRecord(
                id: id, rule: rule, code: code, enabled: true, removed: false, createdBy: result[row, at(7)] ?? "",
                createdAt: try result.date(row: row, column: at(8)),
                nextDueAt: try result.date(row: row, column: at(6)), timeZone: zone, lastFiring: nil)
        }
        if let id = try result.int64(row: row, column: at(10)) {
            glance.last = AutomationFiring(
                id: id, automationID: try result.int64(row: row, column: at(11)) ?? 0,
                kind: AutomationKind(rawValue: result[row, at(12)] ?? "") ?? .timer, code: code,
                dueAt: try result.date(row: row, column: at(13)) ?? .distantPast,
                recordedAt: try result.date(row: row, column: at(14)) ?? .distantPast,
                result: AutomationResult(rawValue: result[row, at(15)] ?? "") ?? .skipped,
                state: result[row, at(16)].flatMap(SwitchState.init(rawValue:)),
                commandID: try result.int64(row: row, column: at(17)), commandStatus: result[row, at(18)],
                reason: result[row, at(19)] ?? "")
        }
        return glance
    }
}
