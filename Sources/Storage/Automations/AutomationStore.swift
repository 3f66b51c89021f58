import Automations
import Foundation
import Postgres
import Telemetry

/// The SQL of automations (migration 22): adding, listing, enabling, removing, history; and the runner's typed
/// reads and writes (``AutomationRuleStore``, AutomationStore+Runner.swift), whose decisions are `Automations`'.
/// The app and the CLI reach it through `Automations`' ``AutomationBook`` (``AutomationBookStore``).
public struct AutomationStore: AutomationBookStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    public func withNewRule<T>(on code: String?, _ body: (AutomationStore, Date, NewRuleOutlet?) throws -> T)
        throws -> T
    {
        try connection.transaction {
            let now = try databaseNow()
            guard let code else { return try body(self, now, nil) }
            let found = try connection.execute(
                "SELECT id, outletd_outlet_zone(id), owner_id FROM devices WHERE code = $1 FOR UPDATE", [code])
            guard found.rowCount == 1, let id = try found.int64(row: 0, column: 0) else {
                return try body(self, now, nil)
            }
            return try body(
                self, now,
                NewRuleOutlet(
                    deviceID: id, zone: TimeZone(identifier: found[0, 1] ?? "UTC"),
                    ownerID: try found.int64(row: 0, column: 2)))
        }
    }

    public func ownerRuleCount(deviceID: Int64) throws -> Int {
        let count = try connection.execute(
            """
            SELECT count(*) FROM automations
            WHERE device_id = $1 AND app_user_id IS NOT NULL AND removed_at IS NULL
              AND NOT (kind = 'timer' AND next_due_at IS NULL)
            """, [deviceID])
        return try count.int(row: 0, column: 0) ?? 0
    }

    public func groupLimit(named name: String) throws -> Int64? {
        let taken = try connection.execute(
            "SELECT id FROM automations WHERE group_name = $1 AND removed_at IS NULL ORDER BY id LIMIT 1", [name])
        return taken.rowCount > 0 ? try taken.int64(row: 0, column: 0) : nil
    }

    public func groupMembership(_ codes: [String]) throws -> [(code: String, registered: Bool, groupName: String?)] {
        let known = try connection.execute(
            """
            SELECT o.code, d.id IS NOT NULL, g.group_name
            FROM unnest($1::text[]) AS o(code)
            LEFT JOIN devices d ON d.code = o.code
            LEFT JOIN automation_group_members m ON m.device_id = d.id
            LEFT JOIN automations g ON g.id = m.automation_id
            """, [codes])
        return try (0..<known.rowCount).map { row in
            (known[row, 0] ?? "?", try known.bool(row: row, column: 1) ?? false, known[row, 2])
        }
    }

    public func insert(_ rule: AutomationRule, deviceID: Int64?, nextDueAt: Date?, by actor: AutomationActor) throws
        -> Int64
    {
        var columns = Columns()
        switch rule {
        case .schedule(let state, let minute, let days):
            columns.state = state.rawValue
            columns.atMinute = minute
            columns.days = days.map { Int64($0.isoNumber) }
        case .timer(let state, let at):
            columns.state = state.rawValue
            columns.fireAt = at
        case .overPower(let watts, let hold), .idle(let watts, let hold):
            columns.watts = watts
            columns.hold = hold
        case .groupLimit(let group):
            columns.groupName = group.name
            columns.watts = group.watts
            columns.hold = group.holdSeconds
            columns.marginWatts = group.restore?.marginWatts
            columns.after = group.restore?.afterSeconds
        }
        let inserted = try connection.execute(
            """
            INSERT INTO automations (kind, device_id, group_name, state, at_minute, days, fire_at, watts, hold_seconds,
                                     restore_margin_watts, restore_after_seconds, created_by, app_user_id, next_due_at)
            VALUES ($1, $2, $3, $4, $5, $6::smallint[], $7, $8, $9, $10, $11, $12, $13, $14)
            RETURNING id
            """,
            [
                rule.kind.rawValue, deviceID, columns.groupName, columns.state, columns.atMinute.map(Int64.init),
                columns.days, columns.fireAt, columns.watts, columns.hold.map(Int64.init), columns.marginWatts,
                columns.after.map(Int64.init), actor.createdBy, actor.ownerID, nextDueAt,
            ])
        guard let id = try inserted.int64(row: 0, column: 0) else { throw AutomationError("no id returned") }
        return id
    }

    /// A rule's columns, those of its kind set.
    private struct Columns {
        var groupName: String?
        var state: String?
        var atMinute: Int?
        var days: [Int64]?
        var fireAt: Date?
        var watts: Double?
        var hold: Int?
        var marginWatts: Double?
        var after: Int?
    }

    public func insertMembers(automationID: Int64, codes: [String]) throws {
        try connection.execute(
            """
            INSERT INTO automation_group_members (automation_id, device_id, position)
            SELECT $1, d.id, o.position - 1
            FROM unnest($2::text[]) WITH ORDINALITY AS o(code, position) JOIN devices d ON d.code = o.code
            """, [automationID, codes])
    }

    /// The database's clock: every instance and the CLI agree on "now".
    public func databaseNow() throws -> Date {
        guard let now = try connection.execute("SELECT clock_timestamp()").date(row: 0, column: 0) else {
            throw AutomationError("the database gave no time")
        }
        return now
    }
}
