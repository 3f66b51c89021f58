import Alerts
import Foundation
import Postgres
import Runtime

/// Alerts' store in typed SQL (migration 28): the runner's set-based rounds and the outbox
/// (``Alerts/AlertStore``), and the owners' and operators' rules, incidents and channels
/// (`AlertSQLStore+Owner.swift`).
public struct AlertSQLStore: AlertStore {
    public let connection: PostgresConnection
    /// `alerts.max_messages_per_hour`: deliveries queued for one owner beyond this within an hour are recorded
    /// as failed (`messages per hour limit`) instead of sent.
    public var maxMessagesPerHour: Int

    public init(connection: PostgresConnection, maxMessagesPerHour: Int = 60) {
        self.connection = connection
        self.maxMessagesPerHour = maxMessagesPerHour
    }

    // MARK: The round

    /// The rules of kind $1 on their outlets: a rule on one outlet, or on each outlet of its owner; an owner's rule
    /// only while the owner owns the outlet. Columns: the rule's, `did` the outlet.
    static let subjects = """
        subjects AS (
            SELECT r.*, r.device_id AS did FROM alert_rules r
            WHERE r.kind = $1 AND r.enabled AND r.removed_at IS NULL AND r.device_id IS NOT NULL
            UNION ALL
            SELECT r.*, d.id FROM alert_rules r JOIN devices d ON d.owner_id = r.app_user_id
            WHERE r.kind = $1 AND r.enabled AND r.removed_at IS NULL AND r.device_id IS NULL
        ), s AS (
            SELECT subjects.*, d.code, d.name AS outlet_name, d.online, d.last_seen_at, d.reported_state,
                   coalesce(d.time_zone, (SELECT time_zone FROM rollup_settings LIMIT 1), 'UTC') AS zone
            FROM subjects JOIN devices d ON d.id = subjects.did
            WHERE subjects.app_user_id IS NULL OR d.owner_id = subjects.app_user_id
        )
        """

    /// The rule's columns, then met, since, observed, currency, then the watch (all statements end alike).
    static let ruleColumns = """
        s.id, s.kind, s.after_seconds, s.for_seconds, s.watts, s.amount::text, s.resolve_after_seconds
        """

    /// One statement per kind: every subject whose condition is met now or that has a watch.
    static func observation(_ kind: AlertKind) -> String {
        switch kind {
        case .offline:
            return """
                WITH \(subjects)
                SELECT \(ruleColumns), s.did, m.met, m.since, m.observed, NULL::text,
                       w.met_since, w.incident_id, w.clear_since
                FROM s LEFT JOIN device_power_totals t ON t.device_id = s.did
                LEFT JOIN alert_watches w ON w.rule_id = s.id AND w.device_key = s.did
                CROSS JOIN LATERAL (
                    SELECT make_interval(secs => coalesce(s.after_seconds::double precision, greatest(60, 3 *
                               CASE WHEN t.sample_count > 1 THEN extract(epoch FROM t.last_measured_at
                                   - t.first_measured_at) / (t.sample_count - 1) END))) AS after
                ) a
                CROSS JOIN LATERAL (
                    SELECT s.online IS FALSE AND (t.last_measured_at IS NULL OR t.last_measured_at <= s.last_seen_at)
                               AS said
                ) v
                CROSS JOIN LATERAL (
                    SELECT coalesce(v.said OR t.last_measured_at < now() - a.after, false) AS met,
                           CASE WHEN v.said THEN s.last_seen_at ELSE t.last_measured_at + a.after END AS since,
                           round(extract(epoch FROM now() - coalesce(t.last_measured_at, s.last_seen_at)))::bigint::text
                               AS observed
                ) m
                WHERE m.met OR w.rule_id IS NOT NULL
                """
        case .onTooLong:
            return """
                WITH \(subjects)
                SELECT \(ruleColumns), s.did, m.met, NULL::timestamptz,
                       round(extract(epoch FROM now() - coalesce(w.met_since, now())))::bigint::text, NULL::text,
                       w.met_since, w.incident_id, w.clear_since
                FROM s LEFT JOIN rollup_tails t ON t.device_id = s.did
                LEFT JOIN alert_watches w ON w.rule_id = s.id AND w.device_key = s.did
                CROSS JOIN LATERAL (
                    SELECT coalesce(CASE WHEN s.watts IS NULL THEN s.reported_state = 'on'
                                         ELSE t.power_watts > s.watts AND t.measured_at > now() - interval '10 minutes'
                                    END, false) AS met
                ) m
                WHERE m.met OR w.rule_id IS NOT NULL
                """
        case .standby:
            return """
                WITH \(subjects)
                SELECT \(ruleColumns), s.did, coalesce(b.standby_watts > s.watts, false), NULL::timestamptz,
                       round(b.standby_watts::numeric, 1)::text, NULL::text, w.met_since, w.incident_id, w.clear_since
                FROM s LEFT JOIN alert_watches w ON w.rule_id = s.id AND w.device_key = s.did
                CROSS JOIN LATERAL (
                    SELECT percentile_cont(0.05) WITHIN GROUP (ORDER BY h.min_power_watts) AS standby_watts
                    FROM power_rollups_hourly h
                    WHERE h.device_id = s.did AND h.bucket_start >= now() - interval '7 days'
                      AND h.min_power_watts IS NOT NULL
                ) b
                WHERE b.standby_watts > s.watts OR w.rule_id IS NOT NULL
                """
        case .budget:
            // Each outlet's month in its own zone, carried to the whole month at the pace so far; a rule on all
            // the owner's outlets is one subject (device key 0) with their sum.
            return """
                WITH \(subjects), per AS (
                    SELECT s.id AS rule_id, CASE WHEN s.device_id IS NULL THEN NULL ELSE s.did END AS did,
                           k.cost * extract(epoch FROM m.ends_at - m.starts_at)
                               / nullif(extract(epoch FROM now() - m.starts_at), 0) AS projected,
                           (SELECT t.currency FROM outlet_tariffs o JOIN tariffs t ON t.id = o.tariff_id
                            WHERE o.code = s.code) AS currency
                    FROM s CROSS JOIN LATERAL (
                        SELECT date_trunc('month', now(), s.zone) AS starts_at,
                               date_trunc('month', now(), s.zone) + interval '1 month' AS ends_at
                    ) m
                    CROSS JOIN LATERAL (SELECT sum(c.cost) AS cost FROM outletd_outlet_cost(s.code, m.starts_at, now()) c) k
                ), totals AS (
                    SELECT rule_id, did, sum(projected) AS projected, max(currency) AS currency
                    FROM per GROUP BY rule_id, did
                )
                SELECT r.id, r.kind, r.after_seconds, r.for_seconds, r.watts, r.amount::text, r.resolve_after_seconds,
                       x.did, coalesce(x.projected > r.amount, false), NULL::timestamptz,
                       round(x.projected, 2)::text, x.currency, w.met_since, w.incident_id, w.clear_since
                FROM totals x JOIN alert_rules r ON r.id = x.rule_id
                LEFT JOIN alert_watches w ON w.rule_id = r.id AND w.device_key = coalesce(x.did, 0)
                WHERE x.projected > r.amount OR w.rule_id IS NOT NULL
                """
        case .commandFailed:
            return """
                WITH \(subjects)
                SELECT \(ruleColumns), s.did, m.met, c.finished_at, c.status, NULL::text,
                       w.met_since, w.incident_id, w.clear_since
                FROM s LEFT JOIN alert_watches w ON w.rule_id = s.id AND w.device_key = s.did
                LEFT JOIN LATERAL (
                    SELECT c.status, c.finished_at FROM commands c
                    WHERE c.device_id = s.did AND c.source IN ('app', 'automation') AND c.finished_at IS NOT NULL
                      AND c.status <> 'superseded'
                    ORDER BY c.requested_at DESC LIMIT 1
                ) c ON true
                CROSS JOIN LATERAL (
                    SELECT coalesce(c.status IN ('timed_out', 'rejected', 'expired')
                                    AND c.finished_at > now() - interval '1 hour', false) AS met
                ) m
                WHERE m.met OR w.rule_id IS NOT NULL
                """
        }
    }

    public func evaluateRound(
        kinds: Set<AlertKind>, instanceID: String, decide: ([AlertObservation], Date) -> [AlertDecision]
    ) throws -> AlertRoundSummary? {
        try connection.transaction { () throws -> AlertRoundSummary? in
            let locked = try connection.execute(
                "SELECT pg_try_advisory_xact_lock($1), now()", [AdvisoryLock.Single.alertRounds.rawValue])
            guard try locked.bool(row: 0, column: 0) == true, let now = try locked.date(row: 0, column: 1) else {
                return nil
            }
            var observations: [AlertObservation] = []
            for kind in kinds.sorted() {
                let result = try connection.execute(Self.observation(kind), [kind.rawValue])
                for row in 0..<result.rowCount {
                    if let observation = try Self.observation(result, row: row) { observations.append(observation) }
                }
            }
            let decisions = decide(observations, now)
            var summary = try apply(decisions, instanceID: instanceID)
            summary.observed = observations.count
            return summary
        }
    }

    static func observation(_ result: PostgresResult, row: Int) throws -> AlertObservation? {
        guard let ruleID = try result.int64(row: row, column: 0), let kind = AlertKind(rawValue: result[row, 1] ?? "")
        else { return nil }
        let parameters = AlertParameters(
            afterSeconds: try result.int(row: row, column: 2), forSeconds: try result.int(row: row, column: 3),
            watts: try result.double(row: row, column: 4), amount: result[row, 5],
            resolveAfterSeconds: try result.int(row: row, column: 6))
        let deviceID = try result.int(row: row, column: 7).map { Int32($0) }
        let incidentID = try result.int64(row: row, column: 13)
        let metSince = try result.date(row: row, column: 12)
        let clearSince = try result.date(row: row, column: 14)
        let watch =
            metSince == nil && incidentID == nil && clearSince == nil
            ? nil : AlertWatch(metSince: metSince, incidentID: incidentID, clearSince: clearSince)
        return AlertObservation(
            subject: AlertSubject(ruleID: ruleID, deviceID: deviceID),
            rule: AlertRule(stored: kind, parameters: parameters), met: try result.bool(row: row, column: 8) ?? false,
            since: try result.date(row: row, column: 9), observed: result[row, 10], currency: result[row, 11],
            watch: watch)
    }

    /// Writes a round's decisions: new incidents, resolutions, their events, the watches and the deliveries.
    func apply(_ decisions: [AlertDecision], instanceID: String) throws -> AlertRoundSummary {
        var summary = AlertRoundSummary()
        guard !decisions.isEmpty else { return summary }
        var watches: [AlertSubject: AlertWatch?] = [:]
        for decision in decisions { watches[decision.observation.subject] = decision.watch }
        // Open.
        let opening = decisions.compactMap { decision -> (AlertObservation, Date)? in
            guard case .open(let since) = decision.action else { return nil }
            return (decision.observation, since)
        }
        var events: [(incidentID: Int64, event: String)] = []
        if !opening.isEmpty {
            let result = try connection.execute(
                """
                INSERT INTO alert_incidents (rule_id, app_user_id, device_id, kind, condition_since, observed,
                                             limit_text, currency)
                SELECT o.rule_id, r.app_user_id, o.device_id, r.kind, o.since, o.observed, o.limit_text, o.currency
                FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[], $4::text[], $5::text[], $6::text[])
                     AS o(rule_id, device_id, since, observed, limit_text, currency)
                JOIN alert_rules r ON r.id = o.rule_id
                ON CONFLICT DO NOTHING
                RETURNING id, rule_id, device_id
                """,
                [
                    opening.map(\.0.subject.ruleID), opening.map { $0.0.subject.deviceID.map(Int64.init) },
                    opening.map(\.1), opening.map(\.0.observed), opening.map { Self.limit($0.0.rule) },
                    opening.map(\.0.currency),
                ])
            for row in 0..<result.rowCount {
                guard let id = try result.int64(row: row, column: 0),
                    let ruleID = try result.int64(row: row, column: 1)
                else { continue }
                let subject = AlertSubject(
                    ruleID: ruleID, deviceID: try result.int(row: row, column: 2).map { Int32($0) })
                if var watch = watches[subject] ?? nil {
                    watch.incidentID = id
                    watches[subject] = watch
                }
                events.append((id, "opened"))
                summary.opened += 1
            }
        }
        // Resolve.
        let resolving = decisions.compactMap { decision -> Int64? in
            guard case .resolve(let id, _) = decision.action else { return nil }
            return id
        }
        if !resolving.isEmpty {
            let result = try connection.execute(
                """
                UPDATE alert_incidents SET state = 'resolved', resolved_at = now()
                WHERE id = ANY($1::bigint[]) AND state = 'open' RETURNING id
                """, [resolving])
            for row in 0..<result.rowCount {
                if let id = try result.int64(row: row, column: 0) { events.append((id, "resolved")) }
            }
            summary.resolved = result.rowCount
        }
        // Watches: kept ones upserted, the rest deleted.
        let kept = watches.compactMap { subject, watch in watch.map { (subject, $0) } }
        let gone = watches.filter { $0.value == nil }.map(\.key)
        if !gone.isEmpty {
            try connection.execute(
                """
                DELETE FROM alert_watches w USING unnest($1::bigint[], $2::integer[]) AS x(rule_id, device_key)
                WHERE w.rule_id = x.rule_id AND w.device_key = x.device_key
                """, [gone.map(\.ruleID), gone.map { Int64($0.deviceID ?? 0) }])
        }
        if !kept.isEmpty {
            try connection.execute(
                """
                INSERT INTO alert_watches (rule_id, device_key, met_since, incident_id, clear_since)
                SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[], $4::bigint[], $5::timestamptz[])
                ON CONFLICT (rule_id, device_key) DO UPDATE
                SET met_since = EXCLUDED.met_since, incident_id = EXCLUDED.incident_id,
                    clear_since = EXCLUDED.clear_since
                """,
                [
                    kept.map(\.0.ruleID), kept.map { Int64($0.0.deviceID ?? 0) }, kept.map(\.1.metSince),
                    kept.map(\.1.incidentID), kept.map(\.1.clearSince),
                ])
        }
        guard !events.isEmpty else { return summary }
        try connection.execute(
            """
            INSERT INTO alert_events (incident_id, event, instance_id)
            SELECT * , $3 FROM unnest($1::bigint[], $2::text[])
            """, [events.map(\.incidentID), events.map(\.event), instanceID])
        // The outbox: each event once per enabled channel of the incident's owner (or the operator's), but none
        // while the incident is snoozed; beyond the owner's messages per hour, recorded as failed.
        let queued = try connection.execute(
            """
            WITH e AS (
                SELECT e.incident_id, e.event, e.n, i.app_user_id FROM unnest($1::bigint[], $2::text[])
                    WITH ORDINALITY AS e(incident_id, event, n)
                JOIN alert_incidents i ON i.id = e.incident_id
                WHERE i.snoozed_until IS NULL OR i.snoozed_until <= now()
            ), c AS (
                SELECT e.incident_id, e.event, ch.id AS channel_id,
                       row_number() OVER (PARTITION BY e.app_user_id ORDER BY e.n, ch.id)
                       + (SELECT count(*) FROM alert_deliveries d JOIN alert_channels c2 ON c2.id = d.channel_id
                          WHERE c2.app_user_id IS NOT DISTINCT FROM e.app_user_id
                            AND d.created_at > now() - interval '1 hour') AS nth
                FROM e JOIN alert_channels ch ON ch.app_user_id IS NOT DISTINCT FROM e.app_user_id
                     AND ch.enabled AND ch.removed_at IS NULL AND ch.kind <> 'page'
            )
            INSERT INTO alert_deliveries (incident_id, channel_id, event, occurred_at, status, last_error, finished_at)
            SELECT c.incident_id, c.channel_id, c.event, now(),
                   CASE WHEN c.nth > $3 THEN 'failed' ELSE 'pending' END,
                   CASE WHEN c.nth > $3 THEN 'messages per hour limit' END,
                   CASE WHEN c.nth > $3 THEN now() END
            FROM c
            ON CONFLICT DO NOTHING
            """, [events.map(\.incidentID), events.map(\.event), maxMessagesPerHour])
        summary.queued = queued.affectedRows ?? 0
        return summary
    }

    /// The rule's limit as a message states it.
    static func limit(_ rule: AlertRule) -> String? {
        switch rule.kind {
        case .offline: rule.parameters.afterSeconds.map(String.init)
        case .onTooLong: rule.parameters.forSeconds.map(String.init)
        case .standby: rule.parameters.watts.map { String($0) }
        case .budget: rule.parameters.amount
        case .commandFailed: nil
        }
    }

    // MARK: The outbox

    public func claimDeliveries(limit: Int, leaseSeconds: Double) throws -> [AlertDeliveryJob] {
        let result = try connection.execute(
            """
            WITH due AS (
                SELECT id FROM alert_deliveries
                WHERE status = 'pending' AND next_attempt_at <= clock_timestamp()
                ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
            ), claimed AS (
                UPDATE alert_deliveries d
                SET attempts = d.attempts + 1, next_attempt_at = clock_timestamp() + make_interval(secs => $2)
                FROM due WHERE d.id = due.id
                RETURNING d.id, d.attempts, d.incident_id, d.channel_id, d.event, d.occurred_at
            )
            SELECT c.id, c.attempts, c.incident_id, c.channel_id, ch.kind, ch.target, ch.secret, ch.p256dh, ch.auth,
                   ch.language, i.kind, c.event, coalesce(nullif(dv.name, ''), dv.code), i.observed, i.limit_text,
                   i.currency, c.occurred_at
            FROM claimed c JOIN alert_channels ch ON ch.id = c.channel_id
            JOIN alert_incidents i ON i.id = c.incident_id
            LEFT JOIN devices dv ON dv.id = i.device_id
            ORDER BY c.id
            """, [limit, leaseSeconds])
        return try (0..<result.rowCount).compactMap { row -> AlertDeliveryJob? in
            guard let id = try result.int64(row: row, column: 0), let attempts = try result.int(row: row, column: 1),
                let incidentID = try result.int64(row: row, column: 2),
                let channelID = try result.int64(row: row, column: 3),
                let channel = AlertChannelKind(rawValue: result[row, 4] ?? ""),
                let kind = AlertKind(rawValue: result[row, 10] ?? ""),
                let event = AlertEventKind(rawValue: result[row, 11] ?? ""),
                let occurredAt = try result.date(row: row, column: 16)
            else { return nil }
            return AlertDeliveryJob(
                id: id, attempts: attempts, incidentID: incidentID, channelID: channelID, channel: channel,
                target: result[row, 5] ?? "", secret: result[row, 6], p256dh: result[row, 7], auth: result[row, 8],
                language: AlertLanguage(rawValue: result[row, 9] ?? "") ?? .en,
                facts: AlertFacts(
                    kind: kind, event: event, outlet: result[row, 12], observed: result[row, 13],
                    limit: result[row, 14], currency: result[row, 15]),
                occurredAt: occurredAt)
        }
    }

    public func finishDelivery(_ job: AlertDeliveryJob, outcome: AlertDeliveryOutcome) throws {
        let (status, next, error): (String, Date?, String?) =
            switch outcome {
            case .sent: ("sent", nil, nil)
            case .retry(let at, let error): ("pending", at, error)
            case .failed(let error): ("failed", nil, error)
            }
        // Errors are kept short: a receiver's answer could be long, and it is shown to the owner.
        let shortError = error.map { String($0.prefix(300)) }
        try connection.execute(
            """
            WITH d AS (
                UPDATE alert_deliveries
                SET status = $2, next_attempt_at = coalesce($3, next_attempt_at), last_error = $4,
                    finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE clock_timestamp() END
                WHERE id = $1 AND status = 'pending'
                RETURNING incident_id, channel_id
            ), ch AS (
                UPDATE alert_channels c
                SET failing_since = CASE WHEN $2 = 'sent' THEN NULL ELSE coalesce(c.failing_since, clock_timestamp()) END,
                    last_error = $4,
                    last_success_at = CASE WHEN $2 = 'sent' THEN clock_timestamp() ELSE c.last_success_at END
                FROM d WHERE c.id = d.channel_id
            )
            INSERT INTO alert_events (incident_id, event, channel_id, detail)
            SELECT d.incident_id, CASE WHEN $2 = 'sent' THEN 'delivered' ELSE 'delivery_failed' END, d.channel_id,
                   CASE WHEN $2 = 'pending' THEN 'attempt ' || $5 || ': ' || $4 ELSE $4 END
            FROM d
            """, [job.id, status, next, shortError, job.attempts])
    }

    public func returnClaims(_ jobs: [AlertDeliveryJob]) throws {
        guard !jobs.isEmpty else { return }
        try connection.execute(
            """
            UPDATE alert_deliveries SET attempts = attempts - 1, next_attempt_at = clock_timestamp()
            WHERE id = ANY ($1::bigint[]) AND status = 'pending' AND attempts > 0
            """, [jobs.map(\.id)])
    }

    public func stillToSend(_ jobs: [AlertDeliveryJob]) throws -> [AlertDeliveryJob] {
        guard !jobs.isEmpty else { return [] }
        let result = try connection.execute(
            """
            SELECT d.id FROM alert_deliveries d JOIN alert_channels ch ON ch.id = d.channel_id
            WHERE d.id = ANY ($1::bigint[]) AND d.status = 'pending' AND ch.enabled AND ch.removed_at IS NULL
            """, [jobs.map(\.id)])
        let ids = Set(try (0..<result.rowCount).compactMap { try result.int64(row: $0, column: 0) })
        return jobs.filter { ids.contains($0.id) }
    }
}
