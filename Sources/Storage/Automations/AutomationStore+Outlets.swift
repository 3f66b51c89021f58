import Foundation
import Postgres
import Runtime
import Telemetry

/// What a runner keeps of the over-power and idle rules it follows, between its rounds: where each rule is, and
/// what of that is in the database. A rule's row is written when its run starts, ends or fires, and otherwise at most
/// every ``AutomationStore/watchPersistSeconds``: the readings it has followed since are followed again, to the same
/// decisions, by whichever runner goes on from the row.
public struct PowerWatchMemory: Sendable {
    struct Entry: Sendable {
        /// What the row holds (as this runner last read or wrote it).
        var stored: PowerWatch
        /// Where the rule is: `stored` plus the readings followed since.
        var current: PowerWatch
        var storedAt: Date
    }

    var entries: [Int64: Entry] = [:]

    public init() {}
}

extension AutomationStore {
    /// The advisory lock of the power rules' evaluation: one runner at a time follows them, without a row lock per
    /// rule per round. (It was the migration's key until both came from ``AdvisoryLock``.)
    static let powerRulesLock = AdvisoryLock.Single.powerRules.rawValue

    /// How often a rule's row takes the readings followed when nothing else about it changed, seconds.
    public static let watchPersistSeconds = 5.0

    /// Follows the readings of every over-power and idle rule since it last looked (at most the hold plus
    /// `slackSeconds` back), and switches off the outlets whose rule met. Only outlets with readings stored since
    /// (`device_power_totals.last_measured_at`) are read. Nothing when another runner holds the evaluation.
    public func watchOutlets(
        instanceID: String, memory: inout PowerWatchMemory, slackSeconds: Double = 60
    ) throws -> [AutomationOutcome] {
        try connection.transaction {
            let locked = try connection.execute("SELECT pg_try_advisory_xact_lock($1)", [Self.powerRulesLock])
            guard try locked.bool(row: 0, column: 0) == true else { return [] }
            let rules = try connection.execute(
                """
                SELECT a.id, a.kind, a.device_id, d.code, a.watts, a.hold_seconds, a.watch_run_start,
                       a.watch_seen_until, a.watch_fired_run, d.reported_state = 'on', d.enabled,
                       a.app_user_id IS NULL OR a.app_user_id = d.owner_id, clock_timestamp(), t.last_measured_at
                FROM automations a
                JOIN devices d ON d.id = a.device_id
                LEFT JOIN device_power_totals t ON t.device_id = a.device_id
                WHERE a.kind IN ('over-power', 'idle') AND a.enabled AND a.removed_at IS NULL
                ORDER BY a.id
                """)
            guard rules.rowCount > 0, let now = try rules.date(row: 0, column: 12) else {
                memory.entries = [:]
                return []
            }
            struct Rule {
                var id: Int64
                var kind: AutomationKind
                var target: Target
                var watts: Double
                var hold: Int
                var reportsOn: Bool
                var watch: PowerWatch
                var stored: PowerWatch
                var storedAt: Date
                var since: Date
                var newest: Date?
            }
            var list: [Rule] = []
            for row in 0..<rules.rowCount {
                guard let id = try rules.int64(row: row, column: 0),
                    let kind = AutomationKind(rawValue: rules[row, 1] ?? ""),
                    let watts = try rules.double(row: row, column: 4), let hold = try rules.int(row: row, column: 5)
                else { continue }
                let stored = PowerWatch(
                    runStart: try rules.date(row: row, column: 6), seenUntil: try rules.date(row: row, column: 7),
                    firedRun: try rules.date(row: row, column: 8))
                // Where this runner left the rule, unless another wrote its row since.
                let remembered = memory.entries[id].flatMap { $0.stored == stored ? $0 : nil }
                var watch = remembered?.current ?? stored
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
                        watch: watch, stored: stored, storedAt: remembered?.storedAt ?? now,
                        since: max(watch.seenUntil ?? horizon, horizon), newest: try rules.date(row: row, column: 13)))
            }
            // Only outlets with readings newer than what their rule followed; the newest bounds the partitions read.
            let reading = list.indices.filter { index in
                list[index].newest.map { newest in newest > list[index].since } ?? false
            }
            var readings = Array(repeating: [PowerReading](), count: list.count)
            if !reading.isEmpty {
                let samples = try connection.execute(
                    """
                    SELECT w.ordinal, s.measured_at, s.power_watts
                    FROM unnest($1::integer[], $2::timestamptz[]) WITH ORDINALITY AS w(device_id, since, ordinal)
                    CROSS JOIN LATERAL (
                        SELECT measured_at, power_watts
                        FROM samples_between(
                            ARRAY[w.device_id], greatest(w.since, $3::timestamptz), $4::timestamptz + interval '1 microsecond')
                        WHERE measured_at > w.since AND measured_at > $3
                        ORDER BY measured_at
                        LIMIT 5000) s
                    ORDER BY w.ordinal, s.measured_at
                    """,
                    [
                        reading.map { list[$0].target.deviceID ?? 0 }, reading.map { list[$0].since },
                        reading.map { list[$0].since }.min() ?? .distantPast,
                        reading.compactMap { list[$0].newest }.max() ?? now,
                    ])
                for row in 0..<samples.rowCount {
                    guard let ordinal = try samples.int(row: row, column: 0),
                        let at = try samples.date(row: row, column: 1),
                        let watts = try samples.double(row: row, column: 2)
                    else { continue }
                    readings[reading[ordinal - 1]].append(PowerReading(at: at, watts: watts))
                }
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
                    let held = AutomationDuration.format(Int(met.at.timeIntervalSince(start)))
                    let limit = "\(AutomationRule.watts(rule.watts)) W"
                    let cause =
                        rule.kind == .overPower
                        ? "over-power: \(Self.roundedWatts(met.watts)) W, at or above \(limit) for \(held) "
                            + "(rule: \(AutomationDuration.format(rule.hold)))"
                        : "idle: \(Self.roundedWatts(met.watts)) W, at or below \(limit) while on for \(held) "
                            + "(rule: \(AutomationDuration.format(rule.hold)))"
                    if let outcome = try record(
                        id: rule.id, kind: rule.kind, target: rule.target, state: .off, dueAt: met.at, cause: cause,
                        result: .fired, instanceID: instanceID)
                    {
                        outcomes.append(outcome)
                    }
                }
                list[index] = rule
            }
            // Rows change when a run starts, ends or fires, and otherwise now and then.
            let writing = list.filter {
                $0.watch.runStart != $0.stored.runStart || $0.watch.firedRun != $0.stored.firedRun
                    || ($0.watch.seenUntil != $0.stored.seenUntil
                        && now.timeIntervalSince($0.storedAt) >= Self.watchPersistSeconds)
            }
            if !writing.isEmpty {
                try connection.execute(
                    """
                    UPDATE automations a
                    SET watch_run_start = u.run_start, watch_seen_until = u.seen_until, watch_fired_run = u.fired_run
                    FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[])
                         AS u(id, run_start, seen_until, fired_run)
                    WHERE a.id = u.id
                    """,
                    [
                        writing.map(\.id), writing.map(\.watch.runStart), writing.map(\.watch.seenUntil),
                        writing.map(\.watch.firedRun),
                    ])
            }
            let written = Set(writing.map(\.id))
            memory.entries = Dictionary(
                uniqueKeysWithValues: list.map { rule in
                    written.contains(rule.id)
                        ? (rule.id, .init(stored: rule.watch, current: rule.watch, storedAt: now))
                        : (rule.id, .init(stored: rule.stored, current: rule.watch, storedAt: rule.storedAt))
                })
            return outcomes
        }
    }
}
