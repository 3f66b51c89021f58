import Automations
import Foundation
import Postgres
import Telemetry

extension AutomationStore {
    private static let recordColumns = """
        SELECT a.id, a.kind, d.code, a.group_name, a.state, a.at_minute, a.days::text, a.fire_at, a.watts,
               a.hold_seconds, a.restore_margin_watts, a.restore_after_seconds, a.enabled, a.removed_at IS NOT NULL,
               a.created_by, a.created_at, a.next_due_at,
               CASE WHEN a.device_id IS NOT NULL THEN outletd_outlet_zone(a.device_id) END,
               (SELECT string_agg(md.code, ',' ORDER BY m.position) FROM automation_group_members m
                JOIN devices md ON md.id = m.device_id WHERE m.automation_id = a.id),
               f.id, f.due_at, f.recorded_at, f.result, f.state, f.command_id, c.status, f.reason, fd.code
        FROM automations a
        LEFT JOIN devices d ON d.id = a.device_id
        LEFT JOIN LATERAL (SELECT * FROM automation_firings x WHERE x.automation_id = a.id ORDER BY x.id DESC LIMIT 1) f
               ON true
        LEFT JOIN commands c ON c.id = f.command_id
        LEFT JOIN devices fd ON fd.id = f.device_id
        """

    /// Automations, oldest first: of outlet `code` (or the group limits it is in) when given, an owner's only for
    /// `owner`, removed ones only with `includingRemoved`.
    public func list(code: String? = nil, owner: Int64? = nil, includingRemoved: Bool = false) throws
        -> [AutomationRecord]
    {
        let result = try connection.execute(
            Self.recordColumns + """

                WHERE ($1::text IS NULL OR d.code = $1
                       OR a.id IN (SELECT m.automation_id FROM automation_group_members m JOIN devices md
                                   ON md.id = m.device_id WHERE md.code = $1))
                  AND ($2::bigint IS NULL OR (a.app_user_id = $2 AND d.owner_id = $2))
                  AND ($3 OR a.removed_at IS NULL)
                ORDER BY a.id
                """, [code, owner, includingRemoved])
        return try (0..<result.rowCount).map { try record(result, row: $0) }
    }

    /// One automation, or nil when there is none with `id` (or, for `owner`, none of theirs on an outlet they own).
    public func automation(_ id: Int64, owner: Int64? = nil) throws -> AutomationRecord? {
        let result = try connection.execute(
            Self.recordColumns + """

                WHERE a.id = $1 AND a.removed_at IS NULL
                  AND ($2::bigint IS NULL OR (a.app_user_id = $2 AND d.owner_id = $2))
                """, [id, owner])
        return result.rowCount == 1 ? try record(result, row: 0) : nil
    }

    public func withAutomation<T>(
        _ id: Int64, owner: Int64?, _ body: (AutomationStore, AutomationRecord?, Date) throws -> T
    ) throws -> T {
        try connection.transaction {
            let now = try databaseNow()
            return try body(self, try automation(id, owner: owner), now)
        }
    }

    /// Enables or disables automation `id`, due next at `nextDueAt`; a power rule enabled again starts afresh.
    public func saveEnabled(_ id: Int64, _ enabled: Bool, nextDueAt: Date?) throws {
        try connection.execute(
            """
            UPDATE automations SET enabled = $2, next_due_at = $3,
                   watch_run_start = CASE WHEN $2 THEN watch_run_start END
            WHERE id = $1
            """, [id, enabled, nextDueAt])
    }

    /// Removes automation `id`: it stops, its group's outlets are free for another group, its history stays.
    /// Returns false when there is no such automation (or, for `owner`, none of theirs).
    @discardableResult
    public func remove(_ id: Int64, owner: Int64? = nil) throws -> Bool {
        try connection.transaction {
            guard try automation(id, owner: owner) != nil else { return false }
            try connection.execute(
                "UPDATE automations SET removed_at = clock_timestamp(), enabled = false, next_due_at = NULL WHERE id = $1",
                [id])
            try connection.execute("DELETE FROM automation_group_members WHERE automation_id = $1", [id])
            return true
        }
    }

    /// What automations did, newest first: of automation `id` (all when nil), an owner's only for `owner`.
    public func history(_ id: Int64? = nil, owner: Int64? = nil, limit: Int = 50) throws -> [AutomationFiring] {
        let result = try connection.execute(
            """
            SELECT f.id, f.automation_id, a.kind, d.code, f.due_at, f.recorded_at, f.result, f.state, f.command_id,
                   c.status, f.reason
            FROM automation_firings f
            JOIN automations a ON a.id = f.automation_id
            LEFT JOIN devices d ON d.id = f.device_id
            LEFT JOIN commands c ON c.id = f.command_id
            WHERE ($1::bigint IS NULL OR f.automation_id = $1)
              AND ($2::bigint IS NULL OR (a.app_user_id = $2 AND d.owner_id = $2))
            ORDER BY f.id DESC
            LIMIT $3
            """, [id, owner, Int64(limit)])
        return try (0..<result.rowCount).map { row in
            try firing(result, row: row, columns: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))
        }
    }

    private func firing(
        _ result: PostgresResult, row: Int, columns c: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)
    ) throws -> AutomationFiring {
        AutomationFiring(
            id: try result.int64(row: row, column: c.0) ?? 0,
            automationID: try result.int64(row: row, column: c.1) ?? 0,
            kind: AutomationKind(rawValue: result[row, c.2] ?? "") ?? .timer,
            code: result[row, c.3],
            dueAt: try result.date(row: row, column: c.4) ?? .distantPast,
            recordedAt: try result.date(row: row, column: c.5) ?? .distantPast,
            result: AutomationResult(rawValue: result[row, c.6] ?? "") ?? .skipped,
            state: result[row, c.7].flatMap(SwitchState.init(rawValue:)),
            commandID: try result.int64(row: row, column: c.8),
            commandStatus: result[row, c.9],
            reason: result[row, c.10] ?? "")
    }

    private func record(_ result: PostgresResult, row: Int) throws -> AutomationRecord {
        let kind = AutomationKind(rawValue: result[row, 1] ?? "") ?? .timer
        let state = result[row, 4].flatMap(SwitchState.init(rawValue:)) ?? .off
        let watts = try result.double(row: row, column: 8) ?? 0
        let hold = try result.int(row: row, column: 9) ?? 0
        let rule: AutomationRule
        switch kind {
        case .schedule:
            rule = .schedule(
                state: state, minute: try result.int(row: row, column: 5) ?? 0, days: Self.weekdays(result[row, 6]))
        case .timer:
            rule = .timer(state: state, at: try result.date(row: row, column: 7) ?? .distantPast)
        case .overPower:
            rule = .overPower(watts: watts, holdSeconds: hold)
        case .idle:
            rule = .idle(watts: watts, holdSeconds: hold)
        case .groupLimit:
            var restore: AutomationRule.Restore?
            if let margin = try result.double(row: row, column: 10), let after = try result.int(row: row, column: 11) {
                restore = .init(marginWatts: margin, afterSeconds: after)
            }
            rule = .groupLimit(
                .init(
                    name: result[row, 3] ?? "", watts: watts, holdSeconds: hold,
                    outlets: (result[row, 18] ?? "").split(separator: ",").map(String.init), restore: restore))
        }
        return AutomationRecord(
            id: try result.int64(row: row, column: 0) ?? 0, rule: rule, code: result[row, 2],
            enabled: try result.bool(row: row, column: 12) ?? false,
            removed: try result.bool(row: row, column: 13) ?? false,
            createdBy: result[row, 14] ?? "", createdAt: try result.date(row: row, column: 15),
            nextDueAt: try result.date(row: row, column: 16), timeZone: result[row, 17],
            lastFiring: result[row, 19] == nil
                ? nil
                : try firing(
                    result, row: row, columns: (19, 0, 1, 27, 20, 21, 22, 23, 24, 25, 26)))
    }
}
