import Foundation
import Postgres
import Protocols
import Runtime
import Telemetry

/// A command outletd must publish to an outlet now.
public struct OutgoingCommand: Sendable, Equatable {
    public var id: Int64
    public var code: String
    public var protocolName: String
    public var state: SwitchState
}

/// A transition to publish on `<prefix>/<code>/set/result`.
public struct PendingResult: Sendable, Equatable {
    public var code: String
    public var result: SwitchResult
    /// Seconds from the command's request to this transition (nil for a request refused before it was stored).
    public var secondsSinceRequest: Double?

    public init(code: String, result: SwitchResult, secondsSinceRequest: Double? = nil) {
        self.code = code
        self.result = result
        self.secondsSinceRequest = secondsSinceRequest
    }
}

/// A command's row, as the CLI and the tests read it.
/// An outlet's switching state and its newest commands (`outletd switch CODE status`).
public struct SwitchStatus: Sendable, Equatable {
    public var code: String
    /// From its availability reports; nil before the first.
    public var online: Bool?
    /// What it last reported.
    public var reported: SwitchState?
    /// What was last asked of it.
    public var desired: SwitchState?
    /// Newest first.
    public var commands: [CommandRecord]
}

public struct CommandRecord: Sendable, Equatable {
    public var id: Int64
    public var code: String
    public var requested: String
    public var state: SwitchState?
    public var status: CommandStatus
    public var reason: String?
    public var source: String
    public var requestedBy: String?
    public var requestedAt: Date?
    public var sentAt: Date?
    public var finishedAt: Date?
}

/// The SQL of switching: every statement the relay and the CLI run against `commands`, `command_transitions` and
/// the state columns of `devices`. All parameterised; every status change is a conditional `UPDATE` guarded by
/// ``CommandEvent/appliesTo``, so two instances never make the same transition twice.
public struct CommandStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Records the confirmation timeout and offline expiry this instance runs with (read by `request_switch` for
    /// `expires_at` and by the `outlets_out_of_sync` view).
    public func writeSettings(confirmTimeoutSeconds: Double, offlineExpirySeconds: Double) throws {
        try connection.execute(
            """
            UPDATE command_settings SET confirm_timeout = $1 * interval '1 millisecond',
                                        offline_expiry = $2 * interval '1 millisecond'
            WHERE id = 1
            """, [Int64(confirmTimeoutSeconds * 1_000), Int64(offlineExpirySeconds * 1_000)])
    }

    /// Records a request (see `outletd_enqueue_command` in sql/0003_commands.sql) and returns the command id.
    /// Throws ``DeviceStoreError`` when the code is not registered.
    public func enqueue(
        code: String, requested: SwitchRequestValue, source: CommandSource, requestedBy: String?, requestID: String?
    ) throws -> Int64 {
        do {
            let result = try connection.execute(
                "SELECT outletd_enqueue_command($1, $2, $3, $4, $5)",
                [code, requested.rawValue, source.rawValue, requestedBy, requestID])
            guard let id = try result.int64(row: 0, column: 0) else {
                throw DeviceStoreError(message: "no command id returned")
            }
            return id
        } catch let error as PostgresError where error.sqlState == "P0002" {
            throw DeviceStoreError(message: "no device \(code) is registered")
        }
    }

    /// Claims every queued command whose outlet is enabled and not known to be offline, marks it sent by
    /// `instanceID` with a confirmation deadline, and returns what to publish. Rows another instance is claiming
    /// are skipped (`FOR UPDATE SKIP LOCKED`), so each command is published once.
    public func claimSendable(instanceID: String, confirmTimeoutSeconds: Double) throws -> [OutgoingCommand] {
        let result = try connection.execute(
            """
            WITH candidates AS (
                SELECT c.id FROM commands c JOIN devices d ON d.id = c.device_id
                WHERE c.status = ANY($1::text[]) AND d.enabled AND d.online IS DISTINCT FROM false
                  AND c.expires_at > clock_timestamp()
                ORDER BY c.id
                FOR UPDATE OF c SKIP LOCKED
            )
            UPDATE commands c
            SET status = $2, sent_at = clock_timestamp(), sent_by = $3,
                confirm_deadline = clock_timestamp() + $4 * interval '1 millisecond'
            FROM candidates k, devices d
            WHERE c.id = k.id AND d.id = c.device_id
            RETURNING c.id, d.code, d.protocol, c.state
            """,
            [
                CommandEvent.send.appliesTo.map(\.rawValue), CommandEvent.send.target.rawValue, instanceID,
                Int64(confirmTimeoutSeconds * 1_000),
            ])
        return try Self.outgoing(result)
    }

    /// Commands this instance sent that still wait for confirmation (re-sent after a restart: switching to an
    /// absolute state is idempotent).
    public func unconfirmed(sentBy instanceID: String) throws -> [OutgoingCommand] {
        let result = try connection.execute(
            """
            SELECT c.id, d.code, d.protocol, c.state FROM commands c JOIN devices d ON d.id = c.device_id
            WHERE c.status = 'sent' AND c.sent_by = $1 AND c.confirm_deadline > clock_timestamp()
            ORDER BY c.id
            """, [instanceID])
        return try Self.outgoing(result)
    }

    /// Stores an outlet's state report and applies it to its pending command. Returns the decision taken, or nil
    /// when the code is not registered.
    @discardableResult
    public func recordStateReport(code: String, report: StateReport) throws -> StateReportDecision? {
        try connection.transaction {
            let device = try connection.execute(
                """
                UPDATE devices SET reported_state = $2, reported_at = clock_timestamp(), last_seen_at = clock_timestamp()
                WHERE code = $1 RETURNING id
                """, [code, report.state.rawValue])
            guard device.rowCount == 1, let deviceID = try device.int64(row: 0, column: 0) else { return nil }
            let pending = try connection.execute(
                """
                SELECT id, status, state FROM commands
                WHERE device_id = $1 AND status IN ('queued', 'sent') AND ($2::bigint IS NULL OR id = $2)
                ORDER BY id DESC LIMIT 1
                FOR UPDATE
                """, [deviceID, report.commandID])
            guard pending.rowCount == 1, let id = try pending.int64(row: 0, column: 0),
                let status = pending[0, 1].flatMap(CommandStatus.init(rawValue:)),
                let requested = pending[0, 2].flatMap(SwitchState.init(rawValue:))
            else { return StateReportDecision.none }
            let decision = StateReportDecision(status: status, commandID: id, requested: requested, report: report)
            switch decision {
            case .confirm: try transition([id], .confirm, reason: nil)
            case .reject(let reason): try transition([id], .reject, reason: reason)
            case .none: break
            }
            return decision
        }
    }

    /// Stores an outlet's availability; returns false when the code is not registered.
    @discardableResult
    public func recordAvailability(code: String, online: Bool) throws -> Bool {
        let result = try connection.execute(
            "UPDATE devices SET online = $2, last_seen_at = clock_timestamp() WHERE code = $1", [code, online])
        return result.affectedRows == 1
    }

    /// Applies `event` to the commands `ids` that are still in a status it applies to, and, when `codes` is
    /// given, that were sent to one of those outlets; returns how many changed.
    @discardableResult
    public func transition(_ ids: [Int64], _ event: CommandEvent, reason: String?, ofOutlets codes: [String]? = nil)
        throws -> Int
    {
        let target = event.target
        let result = try connection.execute(
            """
            UPDATE commands SET status = $2, reason = COALESCE($3, reason),
                                finished_at = CASE WHEN $4 THEN clock_timestamp() END
            WHERE id = ANY($1::bigint[]) AND status = ANY($5::text[])
              AND ($6::text[] IS NULL OR device_id IN (SELECT id FROM devices WHERE code = ANY($6::text[])))
            """, [ids, target.rawValue, reason, target.isFinal, event.appliesTo.map(\.rawValue), codes])
        return result.affectedRows ?? 0
    }

    /// Times out sent commands past their confirmation deadline and expires held ones past their expiry.
    /// Returns how many of each.
    public func sweep() throws -> (timedOut: Int, expired: Int) {
        let timedOut = try connection.execute(
            """
            UPDATE commands SET status = $2, reason = $3, finished_at = clock_timestamp()
            WHERE status = ANY($1::text[]) AND confirm_deadline <= clock_timestamp()
            """,
            [
                CommandEvent.timeOut.appliesTo.map(\.rawValue), CommandEvent.timeOut.target.rawValue,
                CommandReason(.noConfirmation, "no confirmation from the outlet").description,
            ])
        let expired = try connection.execute(
            """
            UPDATE commands SET status = $2, reason = $3, finished_at = clock_timestamp()
            WHERE status = ANY($1::text[]) AND expires_at <= clock_timestamp()
            """,
            [
                CommandEvent.expire.appliesTo.map(\.rawValue), CommandEvent.expire.target.rawValue,
                CommandReason(.offline, "the outlet stayed offline until the command expired").description,
            ])
        return (timedOut.affectedRows ?? 0, expired.affectedRows ?? 0)
    }

    /// Claims up to `limit` unpublished transitions (oldest first) and hands them to `publish` in order, inside
    /// one transaction under an advisory lock: several instances take turns, so the results of one command reach
    /// the broker in the order of its transitions. Returns false when another instance holds the lock (it
    /// publishes what it claims; call again later for the rest).
    public func publishResults(limit: Int = 500, _ publish: (PendingResult) -> Void) throws -> Bool {
        try connection.transaction {
            let locked = try connection.execute("SELECT pg_try_advisory_xact_lock($1)", [Self.resultsLockKey])
            guard try locked.bool(row: 0, column: 0) == true else { return false }
            let result = try connection.execute(
                """
                WITH next AS (
                    SELECT id FROM command_transitions WHERE published_at IS NULL ORDER BY id LIMIT $1
                )
                UPDATE command_transitions t SET published_at = clock_timestamp()
                FROM next, commands c, devices d
                WHERE t.id = next.id AND c.id = t.command_id AND d.id = c.device_id
                RETURNING t.id, d.code, t.status, t.command_id, c.state, c.request_id, c.source, c.requested_by,
                          t.reason, to_char(t.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                          extract(epoch FROM t.at - c.requested_at)::float8
                """, [Int64(limit)])
            var rows: [(Int64, PendingResult)] = []
            for row in 0..<result.rowCount {
                guard let id = try result.int64(row: row, column: 0), let code = result[row, 1],
                    let status = result[row, 2].flatMap(CommandStatus.init(rawValue:))
                else { continue }
                let switchResult = SwitchResult(
                    result: status.resultName, commandID: try result.int64(row: row, column: 3),
                    state: result[row, 4].flatMap(SwitchState.init(rawValue:)), requestID: result[row, 5],
                    source: result[row, 6], requestedBy: result[row, 7], reason: result[row, 8], at: result[row, 9])
                rows.append(
                    (
                        id,
                        PendingResult(
                            code: code, result: switchResult,
                            secondsSinceRequest: try result.double(row: row, column: 10))
                    ))
            }
            for (_, pending) in rows.sorted(by: { $0.0 < $1.0 }) { publish(pending) }
            return true
        }
    }

    /// The advisory lock key of ``publishResults(limit:_:)`` ("outletd results").
    static let resultsLockKey = AdvisoryLock.Single.commandResults.rawValue

    /// The columns ``record(_:row:)`` reads, of `commands c JOIN devices d`.
    static let recordColumns = """
        c.id, d.code, c.requested, c.state, c.status, c.reason, c.source, c.requested_by, c.requested_at,
        c.sent_at, c.finished_at
        """

    static func record(_ result: PostgresResult, row: Int) throws -> CommandRecord? {
        guard let id = try result.int64(row: row, column: 0),
            let status = result[row, 4].flatMap(CommandStatus.init(rawValue:))
        else { return nil }
        return CommandRecord(
            id: id, code: result[row, 1] ?? "", requested: result[row, 2] ?? "",
            state: result[row, 3].flatMap(SwitchState.init(rawValue:)), status: status, reason: result[row, 5],
            source: result[row, 6] ?? "", requestedBy: result[row, 7],
            requestedAt: try result.date(row: row, column: 8), sentAt: try result.date(row: row, column: 9),
            finishedAt: try result.date(row: row, column: 10))
    }

    /// One command, or nil.
    public func find(_ id: Int64) throws -> CommandRecord? {
        let result = try connection.execute(
            "SELECT \(Self.recordColumns) FROM commands c JOIN devices d ON d.id = c.device_id WHERE c.id = $1", [id])
        return result.rowCount == 1 ? try Self.record(result, row: 0) : nil
    }

    /// An outlet's switching state: what it last said (availability, on/off), what was last asked, and its
    /// newest `limit` commands, newest first. Nil when no such outlet is registered.
    public func switchStatus(code: String, limit: Int) throws -> SwitchStatus? {
        let outlet = try connection.execute(
            "SELECT online, reported_state, desired_state FROM devices WHERE code = $1", [code])
        guard outlet.rowCount == 1 else { return nil }
        let commands = try connection.execute(
            """
            SELECT \(Self.recordColumns) FROM commands c JOIN devices d ON d.id = c.device_id
            WHERE d.code = $1 ORDER BY c.requested_at DESC, c.id DESC LIMIT $2
            """, [code, Int64(limit)])
        return SwitchStatus(
            code: code, online: try outlet.bool(row: 0, column: 0),
            reported: outlet[0, 1].flatMap(SwitchState.init(rawValue:)),
            desired: outlet[0, 2].flatMap(SwitchState.init(rawValue:)),
            commands: try (0..<commands.rowCount).compactMap { try Self.record(commands, row: $0) })
    }

    private static func outgoing(_ result: PostgresResult) throws -> [OutgoingCommand] {
        try (0..<result.rowCount).compactMap { row in
            guard let id = try result.int64(row: row, column: 0), let code = result[row, 1],
                let state = result[row, 3].flatMap(SwitchState.init(rawValue:))
            else { return nil }
            return OutgoingCommand(id: id, code: code, protocolName: result[row, 2] ?? "native", state: state)
        }
    }
}
