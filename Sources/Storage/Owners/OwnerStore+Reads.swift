import Foundation
import Postgres
import Telemetry

/// The reads the owners' page polls (the session, the outlet list, an outlet's detail), as statements the app's
/// connections prepare once (``OwnerStore/prepareStatements(_:)``). The list and the detail's outlet are read
/// together with the session the bearer token stands for, in one statement: the session's conditions are the same
/// as ``OwnerStore/session(token:)``'s, and the outlets are keyed by the user id that statement found, so an
/// unknown, expired or revoked token reads nothing.
extension OwnerStore {
    /// A statement of the app: its name on a prepared connection and its SQL.
    public struct Statement: Sendable {
        public let name: String
        public let sql: String
    }

    /// The session `token` stands for: `app_sessions` joined to its user, active and not disabled.
    static let activeSession = """
        SELECT u.id, u.name, s.expires_at, s.id AS session_id
        FROM app_sessions s JOIN app_users u ON u.id = s.user_id
        WHERE s.token_hash = sha256(convert_to($1, 'UTF8')) AND s.revoked_at IS NULL
          AND s.expires_at > clock_timestamp() AND NOT u.disabled
        """

    /// The zone an outlet's days are counted in, `d` being its `devices` row: what `outletd_outlet_zone(d.id)`
    /// (migration 21) returns, written out. A call of that SQL function cannot be inlined (it reads a table), so
    /// each execution of a statement that calls it plans it again: 0.14 ms of today's cost statement and 0.3 ms
    /// of the chart's (`pgbench -M prepared`, 6,000 owners, at idle).
    static let outletZone = "coalesce(d.time_zone, (SELECT time_zone FROM rollup_settings LIMIT 1), 'UTC')"

    /// The columns of ``OwnedOutlet``, `d` being the outlet's `devices` row.
    static let outletColumns = """
        d.code, d.name, d.description, d.online, d.reported_state, t.power_watts,
        GREATEST(t.measured_at, d.last_seen_at) AS updated_at,
        \(outletZone) AS time_zone
        """

    static let sessionStatement = Statement(name: "owner_session", sql: activeSession)

    /// $1 token: the session's four columns, then each outlet of its user (by name, code), or one row of NULL
    /// outlet columns when it has none; no row without an active session.
    static let sessionOutletsStatement = Statement(
        name: "owner_session_outlets",
        sql: """
            WITH who AS (\(activeSession))
            SELECT who.id, who.name, who.expires_at, who.session_id, o.*
            FROM who LEFT JOIN LATERAL (
                SELECT \(outletColumns)
                FROM devices d LEFT JOIN rollup_tails t ON t.device_id = d.id
                WHERE d.owner_id = who.id
            ) o ON true
            ORDER BY o.name, o.code
            """)

    /// $1 the session ids of the app's open live streams (``liveOutlets(sessions:)``): for each one still active
    /// (the conditions of ``session(token:)``), its position in $1 (from 1), then each outlet of its user (by name,
    /// code), or one row of NULL outlet columns when it has none. One statement for many open pages: by id, not by
    /// token, because hashing thousands of tokens was a third of its time.
    static let liveOutletsStatement = Statement(
        name: "owner_live_outlets",
        sql: """
            WITH who AS (
                SELECT w.ord, u.id
                FROM unnest($1::bigint[]) WITH ORDINALITY AS w(session, ord)
                JOIN app_sessions s ON s.id = w.session
                JOIN app_users u ON u.id = s.user_id
                WHERE s.revoked_at IS NULL AND s.expires_at > clock_timestamp() AND NOT u.disabled
            )
            SELECT who.ord, o.*
            FROM who LEFT JOIN LATERAL (
                SELECT \(outletColumns)
                FROM devices d LEFT JOIN rollup_tails t ON t.device_id = d.id
                WHERE d.owner_id = who.id
            ) o ON true
            ORDER BY who.ord, o.name, o.code
            """)

    static let outletStatement = Statement(
        name: "owner_outlet",
        sql: """
            SELECT \(outletColumns)
            FROM devices d LEFT JOIN rollup_tails t ON t.device_id = d.id
            WHERE d.owner_id = $1 AND d.code = $2
            """)

    /// Every statement ``prepareStatements(_:)`` prepares: these, the detail's and the chart's.
    public static let statements = [
        sessionStatement, sessionOutletsStatement, detailStatement, chartStatement, liveOutletsStatement,
        outletStatement, costBaseStatement, costTodayStatement,
    ]

    /// Prepares ``statements`` on `connection` (once per connection, right after it opens); an ``OwnerStore``
    /// made with `prepared: true` on it then runs them by name.
    public static func prepareStatements(_ connection: PostgresConnection) throws {
        for statement in statements { try connection.prepare(name: statement.name, sql: statement.sql) }
    }

    /// Runs `statement`: by name when the connection has it prepared, else as SQL.
    func run(_ statement: Statement, _ parameters: [(any PostgresBindable)?]) throws -> PostgresResult {
        prepared
            ? try connection.executePrepared(name: statement.name, parameters)
            : try connection.execute(statement.sql, parameters)
    }

    /// The outlets of `result`'s rows from `column` on (``outletColumns``' order); a row whose code is NULL is none.
    static func outlets(_ result: PostgresResult, from column: Int = 0) throws -> [OwnedOutlet] {
        try (0..<result.rowCount).compactMap { try outlet(result, row: $0, from: column) }
    }

    /// The outlet of `row` from `column` on, or nil when its code is NULL.
    private static func outlet(_ result: PostgresResult, row: Int, from column: Int) throws -> OwnedOutlet? {
        guard let code = result[row, column] else { return nil }
        return OwnedOutlet(
            code: code, name: result[row, column + 1] ?? "", description: result[row, column + 2] ?? "",
            online: try result.bool(row: row, column: column + 3),
            state: result[row, column + 4].flatMap(SwitchState.init(rawValue:)),
            powerWatts: try result.double(row: row, column: column + 5),
            updatedAt: try result.date(row: row, column: column + 6),
            timeZone: result[row, column + 7] ?? "UTC")
    }

    /// The session of the first row's first four columns, or nil when there is no row.
    static func session(_ result: PostgresResult) throws -> OwnerSession? {
        guard result.rowCount >= 1, let id = try result.int64(row: 0, column: 0),
            let expiresAt = try result.date(row: 0, column: 2), let sessionID = try result.int64(row: 0, column: 3)
        else { return nil }
        return OwnerSession(userID: id, userName: result[0, 1] ?? "", expiresAt: expiresAt, sessionID: sessionID)
    }

    // MARK: Sessions

    /// The session `token` stands for, or nil when it is unknown, expired or revoked, or its user disabled.
    public func session(token: String) throws -> OwnerSession? {
        let result = try run(Self.sessionStatement, [token])
        guard result.rowCount == 1 else { return nil }
        return try Self.session(result)
    }

    /// The session `token` stands for and its user's outlets, by name then code, in one statement; nil when
    /// ``session(token:)`` would be.
    public func sessionAndOutlets(token: String) throws -> (session: OwnerSession, outlets: [OwnedOutlet])? {
        let result = try run(Self.sessionOutletsStatement, [token])
        guard let session = try Self.session(result) else { return nil }
        return (session, try Self.outlets(result, from: 4))
    }

    /// For each of `sessions` (``OwnerSession/sessionID``) still active (as ``session(token:)`` would find it), its
    /// user's outlets by name then code, keyed by the session's index in `sessions`; an index is absent when its
    /// session has ended.
    public func liveOutlets(sessions: [Int64]) throws -> [Int: [OwnedOutlet]] {
        guard !sessions.isEmpty else { return [:] }
        let result = try run(Self.liveOutletsStatement, [sessions])
        var outlets: [Int: [OwnedOutlet]] = [:]
        outlets.reserveCapacity(sessions.count)
        for row in 0..<result.rowCount {
            guard let ordinal = try result.int64(row: row, column: 0), (1...Int64(sessions.count)).contains(ordinal)
            else { continue }
            // A row of NULL outlet columns: a session whose user has no outlet.
            let outlet = try Self.outlet(result, row: row, from: 1)
            outlets[Int(ordinal) - 1, default: []] += outlet.map { [$0] } ?? []
        }
        return outlets
    }

    // MARK: Outlets, keyed by owner

    /// The outlet `code` if `userID` owns it.
    public func outlet(userID: Int64, code: String) throws -> OwnedOutlet? {
        try Self.outlets(run(Self.outletStatement, [userID, code])).first
    }
}
