import Alerts
import Foundation
import Postgres

/// Rules, incidents and channels as owners (through the app) and operators (through the CLI) see and change them.
/// Every statement of an owner's scope is keyed by the owner's id, so another owner's rule, incident or channel
/// is simply not found (the API answers 404).
extension AlertSQLStore: AlertBookStore {
    /// `$n` is the scope's owner id (NULL: the operator, who sees everything).
    static func scoped(_ column: String, _ parameter: Int) -> String {
        "($\(parameter)::bigint IS NULL OR \(column) = $\(parameter))"
    }

    static func ownerID(_ scope: AlertScope) -> Int64? {
        if case .owner(let id) = scope { return id }
        return nil
    }

    // MARK: Rules

    public func rules(_ scope: AlertScope, outlet: String? = nil) throws -> [AlertRuleRecord] {
        let result = try connection.execute(
            """
            SELECT r.id, r.kind, d.code, u.name, r.after_seconds, r.for_seconds, r.watts, r.amount::text,
                   r.resolve_after_seconds, r.enabled, r.created_by, r.created_at
            FROM alert_rules r LEFT JOIN devices d ON d.id = r.device_id LEFT JOIN app_users u ON u.id = r.app_user_id
            WHERE r.removed_at IS NULL AND \(Self.scoped("r.app_user_id", 1)) AND ($2::text IS NULL OR d.code = $2)
            ORDER BY r.id
            """, [Self.ownerID(scope), outlet])
        return try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0), let kind = AlertKind(rawValue: result[row, 1] ?? ""),
                let createdAt = try result.date(row: row, column: 11)
            else { return nil }
            return AlertRuleRecord(
                id: id, kind: kind, outlet: result[row, 2], owner: result[row, 3],
                parameters: AlertParameters(
                    afterSeconds: try result.int(row: row, column: 4), forSeconds: try result.int(row: row, column: 5),
                    watts: try result.double(row: row, column: 6), amount: result[row, 7],
                    resolveAfterSeconds: try result.int(row: row, column: 8)),
                enabled: try result.bool(row: row, column: 9) ?? false, createdBy: result[row, 10] ?? "",
                createdAt: createdAt)
        }
    }

    /// Sets the rule of `rule.kind` on outlet `code` (nil: all the owner's outlets), replacing the one there was.
    /// In an owner's scope the outlet must be theirs; in the operator's, a rule on an owned outlet belongs to its
    /// owner unless `operatorRule` (then it is the operator's, told on the operator's channels). At most
    /// `maxRules` rules per owner.
    public func setRule(
        _ scope: AlertScope, code: String?, rule: AlertRule, createdBy: String, operatorRule: Bool = false,
        maxRules: Int
    ) throws -> Result<AlertRuleRecord, AlertStoreRefusal> {
        try connection.transaction { () throws -> Result<AlertRuleRecord, AlertStoreRefusal> in
            var ownerID = Self.ownerID(scope)
            var deviceID: Int64?
            if let code {
                let outlet = try connection.execute(
                    "SELECT id, owner_id FROM devices WHERE code = $1 AND \(Self.scoped("owner_id", 2)) FOR UPDATE",
                    [code, ownerID])
                guard outlet.rowCount == 1, let id = try outlet.int64(row: 0, column: 0) else {
                    return .failure(.noSuchOutlet)
                }
                deviceID = id
                if scope == .operatorWide && !operatorRule { ownerID = try outlet.int64(row: 0, column: 1) }
            } else if ownerID == nil {
                return .failure(.noSuchOutlet)
            }
            if let ownerID {
                // Rules of one owner are set one at a time, so the count below holds.
                try connection.execute("SELECT 1 FROM app_users WHERE id = $1 FOR UPDATE", [ownerID])
                let count = try connection.execute(
                    """
                    SELECT count(*) FROM alert_rules WHERE app_user_id = $1 AND removed_at IS NULL
                      AND NOT (coalesce(device_id, 0) = coalesce($2::integer, 0) AND kind = $3)
                    """, [ownerID, deviceID, rule.kind.rawValue])
                if (try count.int(row: 0, column: 0) ?? 0) >= maxRules {
                    return .failure(.tooMany(what: "alert rules", limit: maxRules))
                }
            }
            let p = rule.parameters
            let saved = try connection.execute(
                """
                WITH old AS (
                    UPDATE alert_rules SET after_seconds = $4, for_seconds = $5, watts = $6, amount = $7::numeric,
                           resolve_after_seconds = $8, enabled = true, created_by = $9, updated_at = clock_timestamp()
                    WHERE coalesce(app_user_id, 0) = coalesce($1::bigint, 0) AND coalesce(device_id, 0) = coalesce($2, 0)
                      AND kind = $3 AND removed_at IS NULL
                    RETURNING id
                ), new AS (
                    INSERT INTO alert_rules (app_user_id, device_id, kind, after_seconds, for_seconds, watts, amount,
                                             resolve_after_seconds, created_by)
                    SELECT $1, $2, $3, $4, $5, $6, $7::numeric, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM old)
                    RETURNING id
                )
                SELECT id FROM old UNION ALL SELECT id FROM new
                """,
                [
                    ownerID, deviceID, rule.kind.rawValue, p.afterSeconds, p.forSeconds, p.watts, p.amount,
                    rule.resolveAfterSeconds, createdBy,
                ])
            guard saved.rowCount == 1, let id = try saved.int64(row: 0, column: 0),
                let record = try rules(.operatorWide).first(where: { $0.id == id })
            else { return .failure(.noSuchOutlet) }
            return .success(record)
        }
    }

    /// Removes rule `id`; its open incidents resolve and the runner forgets it. False when not in the scope.
    public func removeRule(_ scope: AlertScope, id: Int64) throws -> Bool {
        try connection.transaction {
            let removed = try connection.execute(
                """
                UPDATE alert_rules SET removed_at = clock_timestamp()
                WHERE id = $1 AND removed_at IS NULL AND \(Self.scoped("app_user_id", 2)) RETURNING id
                """, [id, Self.ownerID(scope)])
            guard removed.rowCount == 1 else { return false }
            try connection.execute(
                """
                WITH r AS (
                    UPDATE alert_incidents SET state = 'resolved', resolved_at = now()
                    WHERE rule_id = $1 AND state = 'open' RETURNING id
                )
                INSERT INTO alert_events (incident_id, event, detail) SELECT id, 'resolved', 'rule removed' FROM r
                """, [id])
            try connection.execute("DELETE FROM alert_watches WHERE rule_id = $1", [id])
            return true
        }
    }

    // MARK: Incidents

    /// The scope's incidents, newest first: open ones only, or the `limit` newest.
    public func incidents(_ scope: AlertScope, openOnly: Bool = false, limit: Int = 100) throws
        -> [AlertIncidentRecord]
    {
        let result = try connection.execute(
            """
            SELECT i.id, i.rule_id, i.kind, d.code, d.name, i.state, i.opened_at, i.resolved_at, i.acknowledged_at,
                   i.snoozed_until, i.observed, i.limit_text, i.currency
            FROM alert_incidents i LEFT JOIN devices d ON d.id = i.device_id
            WHERE \(Self.scoped("i.app_user_id", 1)) AND (NOT $2 OR i.state = 'open')
            ORDER BY i.id DESC LIMIT $3
            """, [Self.ownerID(scope), openOnly, limit])
        return try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0), let ruleID = try result.int64(row: row, column: 1),
                let kind = AlertKind(rawValue: result[row, 2] ?? ""),
                let openedAt = try result.date(row: row, column: 6)
            else { return nil }
            return AlertIncidentRecord(
                id: id, ruleID: ruleID, kind: kind, outlet: result[row, 3], outletName: result[row, 4],
                state: result[row, 5] ?? "", openedAt: openedAt, resolvedAt: try result.date(row: row, column: 7),
                acknowledgedAt: try result.date(row: row, column: 8),
                snoozedUntil: try result.date(row: row, column: 9), observed: result[row, 10],
                limit: result[row, 11], currency: result[row, 12])
        }
    }

    /// Acknowledges incident `id` (once; again is a no-op); false when not in the scope.
    public func acknowledge(_ scope: AlertScope, id: Int64, by: String) throws -> Bool {
        let result = try connection.execute(
            """
            WITH i AS (
                SELECT id, acknowledged_at FROM alert_incidents WHERE id = $1 AND \(Self.scoped("app_user_id", 2))
                FOR UPDATE
            ), a AS (
                UPDATE alert_incidents x SET acknowledged_at = clock_timestamp(), acknowledged_by = $3
                FROM i WHERE x.id = i.id AND i.acknowledged_at IS NULL RETURNING x.id
            ), e AS (
                INSERT INTO alert_events (incident_id, event, detail) SELECT id, 'acknowledged', $3 FROM a
            )
            SELECT id FROM i
            """, [id, Self.ownerID(scope), by])
        return result.rowCount == 1
    }

    /// Snoozes incident `id` until `until` (nil: ends a snooze): nothing is delivered for it until then.
    public func snooze(_ scope: AlertScope, id: Int64, until: Date?, by: String) throws -> Bool {
        let result = try connection.execute(
            """
            WITH a AS (
                UPDATE alert_incidents SET snoozed_until = $3
                WHERE id = $1 AND \(Self.scoped("app_user_id", 2)) RETURNING id
            ), e AS (
                INSERT INTO alert_events (incident_id, event, detail)
                SELECT id, 'snoozed', $4 || ' until ' || coalesce($3::timestamptz::text, 'now') FROM a
            )
            SELECT id FROM a
            """, [id, Self.ownerID(scope), until, by])
        return result.rowCount == 1
    }

    /// How many of the scope's incidents are open: the page's badge.
    public func openIncidentCount(_ scope: AlertScope) throws -> Int {
        let result = try connection.execute(
            "SELECT count(*) FROM alert_incidents i WHERE i.state = 'open' AND \(Self.scoped("i.app_user_id", 1))",
            [Self.ownerID(scope)])
        return try result.int(row: 0, column: 0) ?? 0
    }

    /// `alert_history`, newest first: the scope's events, or one incident's.
    public func history(_ scope: AlertScope, incidentID: Int64? = nil, limit: Int = 100) throws
        -> [AlertHistoryRecord]
    {
        let result = try connection.execute(
            """
            SELECT h.id, h.at, h.event, h.incident_id, h.kind, h.code, h.owner, h.channel, h.detail
            FROM alert_history h JOIN alert_incidents i ON i.id = h.incident_id
            WHERE \(Self.scoped("i.app_user_id", 1)) AND ($2::bigint IS NULL OR h.incident_id = $2)
            ORDER BY h.id DESC LIMIT $3
            """, [Self.ownerID(scope), incidentID, limit])
        return try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0), let at = try result.date(row: row, column: 1),
                let incident = try result.int64(row: row, column: 3),
                let kind = AlertKind(rawValue: result[row, 4] ?? "")
            else { return nil }
            return AlertHistoryRecord(
                id: id, at: at, event: result[row, 2] ?? "", incidentID: incident, kind: kind, outlet: result[row, 5],
                owner: result[row, 6], channel: result[row, 7], detail: result[row, 8])
        }
    }

    // MARK: Channels

    public func channels(_ scope: AlertScope) throws -> [AlertChannelRecord] {
        let result = try connection.execute(
            """
            SELECT id, kind, target, language, enabled, failing_since, last_error, last_success_at
            FROM alert_channels WHERE removed_at IS NULL AND \(Self.scoped("app_user_id", 1)) ORDER BY id
            """, [Self.ownerID(scope)])
        return try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0),
                let kind = AlertChannelKind(rawValue: result[row, 1] ?? "")
            else { return nil }
            let target = result[row, 2] ?? ""
            return AlertChannelRecord(
                id: id, kind: kind, target: kind == .webpush ? Self.origin(target) : target,
                language: AlertLanguage(rawValue: result[row, 3] ?? "") ?? .en,
                enabled: try result.bool(row: row, column: 4) ?? false,
                failingSince: try result.date(row: row, column: 5), lastError: result[row, 6],
                lastSuccessAt: try result.date(row: row, column: 7))
        }
    }

    /// A push endpoint's origin: its path is a capability of the push service, not for display.
    static func origin(_ endpoint: String) -> String {
        guard let url = URL(string: endpoint), let scheme = url.scheme, let host = url.host else { return "" }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// Adds a channel to the scope (the operator's when `.operatorWide`); at most `maxChannels` per owner.
    public func addChannel(_ scope: AlertScope, _ spec: AlertChannelSpec, maxChannels: Int) throws
        -> Result<AlertChannelRecord, AlertStoreRefusal>
    {
        try connection.transaction { () throws -> Result<AlertChannelRecord, AlertStoreRefusal> in
            let ownerID = Self.ownerID(scope)
            if let ownerID { try connection.execute("SELECT 1 FROM app_users WHERE id = $1 FOR UPDATE", [ownerID]) }
            let count = try connection.execute(
                """
                SELECT count(*), count(*) FILTER (WHERE kind = $2 AND target = $3) FROM alert_channels
                WHERE removed_at IS NULL AND app_user_id IS NOT DISTINCT FROM $1
                """, [ownerID, spec.kind.rawValue, spec.target])
            if (try count.int(row: 0, column: 1) ?? 0) > 0 { return .failure(.duplicateChannel) }
            if (try count.int(row: 0, column: 0) ?? 0) >= maxChannels {
                return .failure(.tooMany(what: "alert channels", limit: maxChannels))
            }
            let inserted = try connection.execute(
                """
                INSERT INTO alert_channels (app_user_id, kind, target, secret, p256dh, auth, language)
                VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
                """,
                [ownerID, spec.kind.rawValue, spec.target, spec.secret, spec.p256dh, spec.auth, spec.language.rawValue])
            guard let id = try inserted.int64(row: 0, column: 0),
                let record = try channels(scope).first(where: { $0.id == id })
            else { return .failure(.duplicateChannel) }
            return .success(record)
        }
    }

    /// Removes channel `id`: its pending deliveries are dropped with it. False when not in the scope.
    public func removeChannel(_ scope: AlertScope, id: Int64) throws -> Bool {
        let result = try connection.execute(
            """
            WITH c AS (
                UPDATE alert_channels SET removed_at = clock_timestamp(), secret = NULL, p256dh = NULL, auth = NULL
                WHERE id = $1 AND removed_at IS NULL AND app_user_id IS NOT DISTINCT FROM $2 RETURNING id
            ), d AS (
                UPDATE alert_deliveries x SET status = 'failed', last_error = 'channel removed',
                       finished_at = clock_timestamp()
                FROM c WHERE x.channel_id = c.id AND x.status = 'pending'
            )
            SELECT id FROM c
            """, [id, Self.ownerID(scope)])
        return result.rowCount == 1
    }

    /// Pauses (`enabled` false) or resumes channel `id`. A paused channel gets no deliveries: those pending when it is
    /// paused are dropped (failed, "channel paused"), so that resuming it does not send old news. False when not in
    /// the scope.
    public func setChannelEnabled(_ scope: AlertScope, id: Int64, enabled: Bool) throws -> Bool {
        let result = try connection.execute(
            """
            WITH c AS (
                UPDATE alert_channels SET enabled = $3
                WHERE id = $1 AND removed_at IS NULL AND app_user_id IS NOT DISTINCT FROM $2 RETURNING id
            ), d AS (
                UPDATE alert_deliveries x SET status = 'failed', last_error = 'channel paused',
                       finished_at = clock_timestamp()
                FROM c WHERE x.channel_id = c.id AND x.status = 'pending' AND NOT $3
            )
            SELECT id FROM c
            """, [id, Self.ownerID(scope), enabled])
        return result.rowCount == 1
    }

    /// The owner's id by name (the CLI's `--owner`).
    public func ownerID(name: String) throws -> Int64? {
        let result = try connection.execute("SELECT id FROM app_users WHERE name = $1", [name])
        return result.rowCount == 1 ? try result.int64(row: 0, column: 0) : nil
    }
}
