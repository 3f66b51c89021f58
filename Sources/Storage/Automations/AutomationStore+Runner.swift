import Foundation
import Postgres
import Telemetry

/// What one evaluation recorded: a row of `automation_firings`.
public struct AutomationOutcome: Sendable, Equatable {
    public var automationID: Int64
    public var kind: AutomationKind
    public var code: String?
    public var result: AutomationResult
    public var commandID: Int64?
    public var dueAt: Date
    public var reason: String
}

/// The runner's side (docs/AUTOMATIONS.md, "How a firing happens once"): each method is one transaction that keeps
/// other instances' runners off the rules it evaluates (the due ones `FOR UPDATE SKIP LOCKED`; the power rules as a
/// whole by an advisory lock), records what they did, requests the commands, and saves where the rules are, so that
/// whatever instance evaluates next goes on from there. A kill at any point leaves either all of a firing (row,
/// command, new state) or none of it.
extension AutomationStore {
    /// Fires or records as missed every schedule and timer due by now, at most `limit` rules at a time. A firing
    /// later than `catchUpSeconds` (no outletd ran when it was due) is recorded as missed instead.
    public func runDue(instanceID: String, catchUpSeconds: Double, limit: Int = 200) throws -> [AutomationOutcome] {
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
            var outcomes: [AutomationOutcome] = []
            for row in 0..<due.rowCount {
                guard let id = try due.int64(row: row, column: 0),
                    let kind = AutomationKind(rawValue: due[row, 1] ?? ""),
                    let state = due[row, 2].flatMap(SwitchState.init(rawValue:)),
                    var next = try due.date(row: row, column: 5), let now = try due.date(row: row, column: 11)
                else { continue }
                let target = Target(
                    deviceID: try due.int64(row: row, column: 6), code: due[row, 7],
                    enabled: try due.bool(row: row, column: 8) ?? false,
                    ownerStillOwns: try due.bool(row: row, column: 10) ?? false)
                let zone = TimeZone(identifier: due[row, 9] ?? "UTC") ?? .gmt
                let minute = try due.int(row: row, column: 3) ?? 0
                let days = (due[row, 4] ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
                    .split(separator: ",").compactMap { Int($0).flatMap(Weekday.init(isoNumber:)) }
                var dueAt: Date? = next
                // A rule due several times over (outletd was down for days) records each occurrence, bounded.
                var occurrences = 0
                while let at = dueAt, at <= now, occurrences < 400 {
                    occurrences += 1
                    let late = now.timeIntervalSince(at)
                    let what =
                        kind == .schedule
                        ? "schedule: \(state.rawValue) at \(Tariff.clock(minute)) \(Weekday.describe(days))"
                        : "timer: \(state.rawValue)"
                    if late > catchUpSeconds {
                        let reason =
                            "missed: \(what) was due \(Int(late)) s ago, while no outletd ran "
                            + "(automations.catch_up_seconds: \(Int(catchUpSeconds)))"
                        if let outcome = try record(
                            id: id, kind: kind, target: target, state: state, dueAt: at, cause: reason,
                            result: .missed, instanceID: instanceID)
                        {
                            outcomes.append(outcome)
                        }
                    } else if let outcome = try record(
                        id: id, kind: kind, target: target, state: state, dueAt: at,
                        cause: late < 1 ? what : "\(what) (\(Int(late)) s late, caught up at start)",
                        result: .fired, instanceID: instanceID)
                    {
                        outcomes.append(outcome)
                    }
                    dueAt =
                        kind == .schedule ? ScheduleClock.next(after: at, minute: minute, days: days, in: zone) : nil
                    if let following = dueAt { next = following }
                }
                try connection.execute("UPDATE automations SET next_due_at = $2 WHERE id = $1", [id, dueAt])
            }
            return outcomes
        }
    }

    /// The outlet a firing acts on, and whether it may.
    struct Target {
        var deviceID: Int64?
        var code: String?
        var enabled: Bool
        /// False when an owner made the rule and no longer owns the outlet.
        var ownerStillOwns: Bool
    }

    /// Records one firing (once: a second record of the same due instant is nothing) and, when it fires, requests
    /// its command. A rule that meets on a disabled outlet, or on an outlet its owner released, is recorded as
    /// skipped with the reason.
    func record(
        id: Int64, kind: AutomationKind, target: Target, state: SwitchState?, dueAt: Date, cause: String,
        result: AutomationResult, instanceID: String
    ) throws -> AutomationOutcome? {
        var result = result
        var reason = cause
        if result == .fired {
            if target.code == nil {
                result = .skipped
            } else if !target.enabled {
                result = .skipped
                reason = "disabled_device: outlet \(target.code ?? "?") is disabled; \(cause)"
            } else if !target.ownerStillOwns {
                result = .skipped
                reason = "not_owner: the owner who made the rule no longer owns the outlet; \(cause)"
            }
        }
        let inserted = try connection.execute(
            """
            INSERT INTO automation_firings (automation_id, due_at, result, device_id, state, reason, instance_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (automation_id, due_at, (coalesce(device_id, 0))) DO NOTHING
            RETURNING id
            """, [id, dueAt, result.rawValue, target.deviceID, state?.rawValue, reason, instanceID])
        guard let firingID = try inserted.rowCount == 1 ? inserted.int64(row: 0, column: 0) : nil else { return nil }
        var commandID: Int64?
        if result == .fired, let code = target.code, let state {
            let command = try CommandStore(connection: connection).enqueue(
                code: code, requested: state == .on ? .on : .off, source: .automation,
                requestedBy: "automation:\(id)", requestID: nil)
            try connection.execute("UPDATE commands SET cause = $2 WHERE id = $1", [command, cause])
            try connection.execute("UPDATE automation_firings SET command_id = $2 WHERE id = $1", [firingID, command])
            commandID = command
        }
        return AutomationOutcome(
            automationID: id, kind: kind, code: target.code, result: result, commandID: commandID, dueAt: dueAt,
            reason: reason)
    }
}
