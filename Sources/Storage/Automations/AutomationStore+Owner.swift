import Foundation
import Postgres
import Telemetry

/// What an owner's outlet does next by itself and what it did last: the owners' app's outlet detail.
public struct OutletAutomationGlance: Sendable, Equatable {
    /// The owner's enabled schedule or timer due soonest (its `nextDueAt` set), or nil.
    public var next: AutomationRecord?
    /// The newest firing of any of the owner's automations of the outlet (not removed), or nil.
    public var last: AutomationFiring?
    /// The zone the outlet's clock reads (IANA name).
    public var timeZone: String
}

extension AutomationStore {
    /// ``glance(code:owner:prepared:)``'s statement ($1 code, $2 owner), and its name where the owners' app's
    /// connections prepare it (``OwnerStore/prepareStatements(_:)``).
    public static let glanceStatementName = "owner_glance"
    public static let glanceSQL = """
        SELECT n.id, n.kind, n.state, n.at_minute, n.days::text, n.fire_at, n.next_due_at, n.created_by,
               n.created_at, outletd_outlet_zone(d.id),
               l.id, l.automation_id, l.kind, l.due_at, l.recorded_at, l.result, l.state, l.command_id, c.status,
               l.reason
        FROM devices d
        LEFT JOIN LATERAL (
            SELECT a.* FROM automations a
            WHERE a.device_id = d.id AND a.app_user_id = $2 AND a.removed_at IS NULL AND a.enabled
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
            WHERE a.device_id = d.id AND a.app_user_id = $2 AND a.removed_at IS NULL
            ORDER BY f.id DESC LIMIT 1
        ) l ON true
        LEFT JOIN commands c ON c.id = l.command_id
        WHERE d.code = $1 AND d.owner_id = $2
        """

    /// The next and the last automation of outlet `code` among those `owner` made, or nil when the outlet is not
    /// theirs. One statement: an owner's outlet has at most ``AutomationRule/Limits/perOutletForOwners`` automations
    /// not removed, each read through `automations_device` and its newest firing through
    /// `automation_firings_by_automation`. `prepared`: the connection has it prepared (the app's do).
    public func glance(code: String, owner: Int64, prepared: Bool = false) throws -> OutletAutomationGlance? {
        let result =
            prepared
            ? try connection.executePrepared(name: Self.glanceStatementName, [code, owner])
            : try connection.execute(Self.glanceSQL, [code, owner])
        guard result.rowCount == 1 else { return nil }
        let zone = result[0, 9] ?? "UTC"
        var glance = OutletAutomationGlance(next: nil, last: nil, timeZone: zone)
        if let id = try result.int64(row: 0, column: 0), let kind = AutomationKind(rawValue: result[0, 1] ?? ""),
            let state = result[0, 2].flatMap(SwitchState.init(rawValue:))
        {
            let rule: AutomationRule
            if kind == .schedule {
                let days = (result[0, 4] ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
                    .split(separator: ",").compactMap { Int($0).flatMap(Weekday.init(isoNumber:)) }
                rule = .schedule(state: state, minute: try result.int(row: 0, column: 3) ?? 0, days: days)
            } else {
                rule = .timer(state: state, at: try result.date(row: 0, column: 5) ?? .distantPast)
            }
            glance.next = AutomationRecord(
                id: id, rule: rule, code: code, enabled: true, removed: false, createdBy: result[0, 7] ?? "",
                createdAt: try result.date(row: 0, column: 8), nextDueAt: try result.date(row: 0, column: 6),
                timeZone: zone, lastFiring: nil)
        }
        if let id = try result.int64(row: 0, column: 10) {
            glance.last = AutomationFiring(
                id: id, automationID: try result.int64(row: 0, column: 11) ?? 0,
                kind: AutomationKind(rawValue: result[0, 12] ?? "") ?? .timer, code: code,
                dueAt: try result.date(row: 0, column: 13) ?? .distantPast,
                recordedAt: try result.date(row: 0, column: 14) ?? .distantPast,
                result: AutomationResult(rawValue: result[0, 15] ?? "") ?? .skipped,
                state: result[0, 16].flatMap(SwitchState.init(rawValue:)),
                commandID: try result.int64(row: 0, column: 17), commandStatus: result[0, 18],
                reason: result[0, 19] ?? "")
        }
        return glance
    }
}
