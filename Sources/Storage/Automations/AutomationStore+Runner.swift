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

/// The runner's side (docs/AUTOMATIONS.md, "How a firing happens once"): each method is one transaction that locks
/// the rules it evaluates (`FOR UPDATE SKIP LOCKED`: another instance's runner skips them), records what they did
/// and requests the commands, and saves where the rules are, so that whatever instance evaluates next goes on from
/// there. A kill at any point leaves either all of a firing (row, command, new state) or none of it.
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

    /// Follows the readings of every over-power and idle rule since it last looked (at most the hold plus
    /// `slackSeconds` back), and switches off the outlets whose rule met.
    public func watchOutlets(instanceID: String, slackSeconds: Double = 60) throws -> [AutomationOutcome] {
        try connection.transaction {
            let rules = try connection.execute(
                """
                SELECT a.id, a.kind, a.device_id, d.code, a.watts, a.hold_seconds, a.watch_run_start,
                       a.watch_seen_until, a.watch_fired_run, d.reported_state = 'on', d.enabled,
                       a.app_user_id IS NULL OR a.app_user_id = d.owner_id, clock_timestamp()
                FROM automations a JOIN devices d ON d.id = a.device_id
                WHERE a.kind IN ('over-power', 'idle') AND a.enabled AND a.removed_at IS NULL
                ORDER BY a.id
                FOR UPDATE OF a SKIP LOCKED
                """)
            guard rules.rowCount > 0, let now = try rules.date(row: 0, column: 12) else { return [] }
            struct Rule {
                var id: Int64
                var kind: AutomationKind
                var target: Target
                var watts: Double
                var hold: Int
                var reportsOn: Bool
                var watch: PowerWatch
                var before: PowerWatch
                var since: Date
            }
            var list: [Rule] = []
            for row in 0..<rules.rowCount {
                guard let id = try rules.int64(row: row, column: 0),
                    let kind = AutomationKind(rawValue: rules[row, 1] ?? ""),
                    let watts = try rules.double(row: row, column: 4), let hold = try rules.int(row: row, column: 5)
                else { continue }
                var watch = PowerWatch(
                    runStart: try rules.date(row: row, column: 6), seenUntil: try rules.date(row: row, column: 7),
                    firedRun: try rules.date(row: row, column: 8))
                let before = watch
                let horizon = now.addingTimeInterval(-Double(hold) - slackSeconds)
                if (watch.seenUntil ?? .distantPast) < horizon {
                    // Not followed for longer than the rule can look back (a new rule, or no outletd ran).
                    watch.runStart = nil
                    watch.seenUntil = nil
                }
                list.append(
                    Rule(
                        id: id, kind: kind,
                        target: Target(
                            deviceID: try rules.int64(row: row, column: 2), code: rules[row, 3],
                            enabled: try rules.bool(row: row, column: 10) ?? false,
                            ownerStillOwns: try rules.bool(row: row, column: 11) ?? false),
                        watts: watts, hold: hold, reportsOn: try rules.bool(row: row, column: 9) ?? false,
                        watch: watch, before: before, since: max(watch.seenUntil ?? horizon, horizon)))
            }
            guard !list.isEmpty else { return [] }
            let samples = try connection.execute(
                """
                SELECT w.ordinal, s.measured_at, s.power_watts
                FROM unnest($1::integer[], $2::timestamptz[]) WITH ORDINALITY AS w(device_id, since, ordinal)
                CROSS JOIN LATERAL (
                    SELECT measured_at, power_watts FROM samples
                    WHERE device_id = w.device_id AND measured_at > w.since AND measured_at > $3
                    ORDER BY measured_at
                    LIMIT 5000) s
                ORDER BY w.ordinal, s.measured_at
                """,
                [list.map { $0.target.deviceID ?? 0 }, list.map(\.since), list.map(\.since).min() ?? .distantPast])
            var readings = Array(repeating: [PowerReading](), count: list.count)
            for row in 0..<samples.rowCount {
                guard let ordinal = try samples.int(row: row, column: 0),
                    let at = try samples.date(row: row, column: 1),
                    let watts = try samples.double(row: row, column: 2)
                else { continue }
                readings[ordinal - 1].append(PowerReading(at: at, watts: watts))
            }
            var outcomes: [AutomationOutcome] = []
            for index in list.indices {
                var rule = list[index]
                let condition: PowerWatch.Condition =
                    rule.kind == .overPower ? .atLeast(rule.watts) : .atMost(rule.watts)
                let met = rule.watch.follow(
                    readings[index], condition: condition, holdSeconds: rule.hold,
                    reportsOn: rule.kind == .idle ? rule.reportsOn : true)
                if let met, let start = rule.watch.runStart {
                    let watts = AutomationRule.watts((met.watts * 10).rounded() / 10)
                    let cause =
                        rule.kind == .overPower
                        ? "over-power: \(watts) W, at or above \(AutomationRule.watts(rule.watts)) W for "
                            + "\(AutomationDuration.format(Int(met.at.timeIntervalSince(start)))) (rule: \(AutomationDuration.format(rule.hold)))"
                        : "idle: \(watts) W, at or below \(AutomationRule.watts(rule.watts)) W while on for "
                            + "\(AutomationDuration.format(Int(met.at.timeIntervalSince(start)))) (rule: \(AutomationDuration.format(rule.hold)))"
                    if let outcome = try record(
                        id: rule.id, kind: rule.kind, target: rule.target, state: .off, dueAt: met.at, cause: cause,
                        result: .fired, instanceID: instanceID)
                    {
                        outcomes.append(outcome)
                    }
                }
                list[index] = rule
            }
            let changed = list.filter { $0.watch != $0.before }
            if !changed.isEmpty {
                try connection.execute(
                    """
                    UPDATE automations a
                    SET watch_run_start = u.run_start, watch_seen_until = u.seen_until, watch_fired_run = u.fired_run
                    FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[])
                         AS u(id, run_start, seen_until, fired_run)
                    WHERE a.id = u.id
                    """,
                    [
                        changed.map(\.id), changed.map(\.watch.runStart), changed.map(\.watch.seenUntil),
                        changed.map(\.watch.firedRun),
                    ])
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
