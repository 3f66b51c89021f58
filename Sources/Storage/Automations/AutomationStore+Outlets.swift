import Automations
import Foundation
import Postgres
import Runtime
import Telemetry

extension AutomationStore {
    public func withPowerRules<T>(_ body: (AutomationStore, [PowerRuleRow]) throws -> T) throws -> T? {
        try connection.transaction {
            let locked = try connection.execute(
                "SELECT pg_try_advisory_xact_lock($1)", [AdvisoryLock.Single.powerRules.rawValue])
            guard try locked.bool(row: 0, column: 0) == true else { return nil }
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
            var rows: [PowerRuleRow] = []
            for row in 0..<rules.rowCount {
                guard let id = try rules.int64(row: row, column: 0),
                    let kind = AutomationKind(rawValue: rules[row, 1] ?? ""),
                    let watts = try rules.double(row: row, column: 4), let hold = try rules.int(row: row, column: 5),
                    let now = try rules.date(row: row, column: 12)
                else { continue }
                rows.append(
                    PowerRuleRow(
                        id: id, kind: kind, watts: watts, holdSeconds: hold,
                        stored: PowerWatch(
                            runStart: try rules.date(row: row, column: 6),
                            seenUntil: try rules.date(row: row, column: 7),
                            firedRun: try rules.date(row: row, column: 8)),
                        target: AutomationTarget(
                            deviceID: try rules.int64(row: row, column: 2), code: rules[row, 3],
                            enabled: try rules.bool(row: row, column: 10) ?? false,
                            ownerStillOwns: try rules.bool(row: row, column: 11) ?? false),
                        reportsOn: try rules.bool(row: row, column: 9) ?? false,
                        newestReading: try rules.date(row: row, column: 13), now: now))
            }
            return try body(self, rows)
        }
    }

    /// Through `samples_between`, which decodes only the compacted days the range overlaps; the earliest `since`
    /// and `until` bound the partitions read.
    public func readings(_ outlets: [(deviceID: Int64, since: Date)], until: Date) throws -> [[PowerReading]] {
        var readings = Array(repeating: [PowerReading](), count: outlets.count)
        guard !outlets.isEmpty else { return readings }
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
            [outlets.map(\.deviceID), outlets.map(\.since), outlets.map(\.since).min() ?? .distantPast, until])
        for row in 0..<samples.rowCount {
            guard let ordinal = try samples.int(row: row, column: 0), readings.indices.contains(ordinal - 1),
                let at = try samples.date(row: row, column: 1), let watts = try samples.double(row: row, column: 2)
            else { continue }
            readings[ordinal - 1].append(PowerReading(at: at, watts: watts))
        }
        return readings
    }

    public func savePowerWatches(_ watches: [(automationID: Int64, watch: PowerWatch)]) throws {
        try connection.execute(
            """
            UPDATE automations a
            SET watch_run_start = u.run_start, watch_seen_until = u.seen_until, watch_fired_run = u.fired_run
            FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[])
                 AS u(id, run_start, seen_until, fired_run)
            WHERE a.id = u.id
            """,
            [
                watches.map(\.automationID), watches.map(\.watch.runStart), watches.map(\.watch.seenUntil),
                watches.map(\.watch.firedRun),
            ])
    }
}
