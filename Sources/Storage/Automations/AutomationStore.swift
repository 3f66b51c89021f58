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

    /// Stores `rule` on outlet `code` (nil for a group limit) and returns its id. A schedule's first firing is the
    /// first after now (one made after today's time waits for its next day). Throws ``AutomationError`` for an
    /// invalid rule, an unknown outlet (or another owner's: `notFound`), an outlet already in a group limit, a group
    /// name in use, or an owner's outlet with ``AutomationRule/Limits/perOutletForOwners`` rules made in the app
    /// already (spent timers and the operator's rules do not count).
    public func add(_ rule: AutomationRule, code: String?, by actor: AutomationActor) throws -> Int64 {
        try connection.transaction {
            let now = try databaseNow()
            if let problem = rule.problem(now: now) { throw AutomationError(problem) }
            var deviceID: Int64?
            var zone: TimeZone?
            if case .groupLimit = rule {
                guard actor.ownerID == nil else { throw AutomationError("group limits are for operators") }
            } else {
                guard let code else { throw AutomationError("name the outlet") }
                let found = try connection.execute(
                    "SELECT id, outletd_outlet_zone(id), owner_id FROM devices WHERE code = $1 FOR UPDATE", [code])
                let ownerID = found.rowCount == 1 ? try found.int64(row: 0, column: 2) : nil
                guard found.rowCount == 1, let id = try found.int64(row: 0, column: 0),
                    actor.ownerID == nil || ownerID == actor.ownerID
                else { throw AutomationError("no outlet \(OwnerText.inert(code)) is registered", notFound: true) }
                deviceID = id
                zone = TimeZone(identifier: found[0, 1] ?? "UTC")
                if actor.ownerID != nil {
                    let count = try connection.execute(
                        """
                        SELECT count(*) FROM automations
                        WHERE device_id = $1 AND app_user_id IS NOT NULL AND removed_at IS NULL
                          AND NOT (kind = 'timer' AND next_due_at IS NULL)
                        """, [id])
                    let existing = try count.int(row: 0, column: 0) ?? 0
                    if existing >= AutomationRule.Limits.perOutletForOwners {
                        throw AutomationError(
                            "an outlet has at most \(AutomationRule.Limits.perOutletForOwners) automations; remove one first"
                        )
                    }
                }
            }
            var columns = Columns(kind: rule.kind)
            switch rule {
            case .schedule(let state, let minute, let days):
                guard let zone else { throw AutomationError("the outlet's time zone is not known to outletd") }
                columns.state = state.rawValue
                columns.atMinute = minute
                columns.days = days.map { Int64($0.isoNumber) }
                columns.nextDueAt = ScheduleClock.next(after: now, minute: minute, days: days, in: zone)
            case .timer(let state, let at):
                columns.state = state.rawValue
                columns.fireAt = at
                columns.nextDueAt = at
            case .overPower(let watts, let hold), .idle(let watts, let hold):
                columns.watts = watts
                columns.hold = hold
            case .groupLimit(let group):
                columns.groupName = group.name
                columns.watts = group.watts
                columns.hold = group.holdSeconds
                columns.marginWatts = group.restore?.marginWatts
                columns.after = group.restore?.afterSeconds
                let taken = try connection.execute(
                    "SELECT id FROM automations WHERE group_name = $1 AND removed_at IS NULL", [group.name])
                if taken.rowCount > 0 {
                    throw AutomationError(
                        "a group limit named \(group.name) exists (automation \(taken[0, 0] ?? "?")); remove it first")
                }
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
                    columns.after.map(Int64.init), actor.createdBy, actor.ownerID, columns.nextDueAt,
                ])
            guard let id = try inserted.int64(row: 0, column: 0) else { throw AutomationError("no id returned") }
            if case .groupLimit(let group) = rule { try addMembers(group, automationID: id) }
            return id
        }
    }

    private struct Columns {
        var kind: AutomationKind
        var groupName: String?
        var state: String?
        var atMinute: Int?
        var days: [Int64]?
        var fireAt: Date?
        var watts: Double?
        var hold: Int?
        var marginWatts: Double?
        var after: Int?
        var nextDueAt: Date?
    }

    private func addMembers(_ group: AutomationRule.GroupLimit, automationID: Int64) throws {
        let known = try connection.execute(
            """
            SELECT o.code, d.id, g.group_name
            FROM unnest($1::text[]) AS o(code)
            LEFT JOIN devices d ON d.code = o.code
            LEFT JOIN automation_group_members m ON m.device_id = d.id
            LEFT JOIN automations g ON g.id = m.automation_id
            """, [group.outlets])
        for row in 0..<known.rowCount {
            let code = known[row, 0] ?? "?"
            guard known[row, 1] != nil else { throw AutomationError("no outlet \(code) is registered") }
            if let other = known[row, 2] {
                throw AutomationError("outlet \(code) is already in group limit \(other); an outlet is in one at most")
            }
        }
        try connection.execute(
            """
            INSERT INTO automation_group_members (automation_id, device_id, position)
            SELECT $1, d.id, o.position - 1
            FROM unnest($2::text[]) WITH ORDINALITY AS o(code, position) JOIN devices d ON d.code = o.code
            """, [automationID, group.outlets])
    }

    /// The database's clock: every instance and the CLI agree on "now".
    public func databaseNow() throws -> Date {
        guard let now = try connection.execute("SELECT clock_timestamp()").date(row: 0, column: 0) else {
            throw AutomationError("the database gave no time")
        }
        return now
    }
}
