import Foundation
import Postgres
import Telemetry

/// An app user as `outletd user list` shows it (never its password hash).
public struct OwnerRecord: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var disabled: Bool
    public var createdAt: Date?
    /// Outlets the user owns.
    public var outletCount: Int
    /// Sessions neither expired nor revoked.
    public var activeSessions: Int
}

/// What the login path needs of a user: its id, bcrypt hash and whether it may log in.
public struct OwnerCredentials: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var passwordHash: String
    public var disabled: Bool
}

/// The user a valid bearer token stands for.
public struct OwnerSession: Sendable, Equatable {
    public var userID: Int64
    public var userName: String
    public var expiresAt: Date
    /// The session's row (`app_sessions.id`): what a live stream is checked by at each read.
    public var sessionID: Int64
}

/// An outlet as its owner sees it: the registry's row, its state and its newest reading.
public struct OwnedOutlet: Sendable, Equatable {
    public var code: String
    public var name: String
    public var description: String
    /// From `<prefix>/<code>/availability`; nil when the outlet never said.
    public var online: Bool?
    /// The state the outlet last reported (`on`/`off`), or nil.
    public var state: SwitchState?
    /// Power of the newest reading, W (`rollup_tails`), or nil before the first.
    public var powerWatts: Double?
    /// The newest of the newest reading and the last state or availability message.
    public var updatedAt: Date?
    /// The outlet's IANA time zone (its own, else `rollup_settings.time_zone`).
    public var timeZone: String
}

/// A local day of an outlet: its date (`YYYY-MM-DD`) in the outlet's time zone, and its [start, end) as instants.
public struct OwnedOutletDay: Sendable, Equatable {
    public var date: String
    public var timeZone: String
    public var start: Date
    public var end: Date
}

/// An outlet's figures over a period, from the hourly rollups.
public struct OwnedOutletFigures: Sendable, Equatable {
    /// Time-weighted average power, W; nil without data.
    public var averagePowerWatts: Double?
    public var peakPowerWatts: Double?
    public var energyWattHours: Double?
}

/// One local hour of an outlet's day (nil figures: no data that hour).
public struct OwnedOutletHour: Sendable, Equatable {
    /// 0–23, the local hour of the outlet's time zone.
    public var hour: Int
    public var figures: OwnedOutletFigures
    /// What the hour's energy cost (numeric text, six decimals), nil without a price.
    public var cost: String? = nil
}

/// A command as its requester sees it.
public struct OwnedCommand: Sendable, Equatable {
    public var id: Int64
    public var code: String
    public var status: CommandStatus
    public var reason: String?
}

/// Failed logins within the rate limit's window.
public struct LoginFailureCounts: Sendable, Equatable {
    /// For the user name tried (whether or not the user exists) from the client's address.
    public var userFromAddress: Int
    /// From the client's address, whatever the names.
    public var address: Int
    /// For the user name tried, from every address.
    public var user: Int
}

/// The SQL of the owner's app (migration 18). Every statement about outlets and commands is keyed by the owner's
/// id: another owner's outlet is simply not found, so a route cannot leak it by forgetting a check.
public struct OwnerStore {
    public let connection: PostgresConnection
    /// Whether the connection has the app's hot statements prepared (``prepareStatements(_:)``): then they run
    /// by name, planned once per connection, instead of parsed and planned at every call.
    public let prepared: Bool

    public init(connection: PostgresConnection, prepared: Bool = false) {
        self.connection = connection
        self.prepared = prepared
    }

    // MARK: Users (the CLI)

    /// Adds a user; throws ``DeviceStoreError`` when the name is taken or not `^[A-Za-z0-9_.@-]{1,64}$`.
    @discardableResult
    public func addUser(name: String, passwordHash: String) throws -> Int64 {
        do {
            let result = try connection.execute(
                "INSERT INTO app_users (name, password_hash) VALUES ($1, $2) RETURNING id", [name, passwordHash])
            guard let id = try result.int64(row: 0, column: 0) else { throw DeviceStoreError(message: "no user id") }
            return id
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw DeviceStoreError(message: "user \(name) exists")
        } catch let error as PostgresError where error.sqlState == "23514" {
            throw DeviceStoreError(message: "user name must be 1–64 of A-Z a-z 0-9 _ . @ -, not \"\(name)\"")
        }
    }

    /// Every user, by name.
    public func users() throws -> [OwnerRecord] {
        let result = try connection.execute(
            """
            SELECT u.id, u.name, u.disabled, u.created_at,
                   (SELECT count(*) FROM devices d WHERE d.owner_id = u.id),
                   (SELECT count(*) FROM app_sessions s
                    WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > clock_timestamp())
            FROM app_users u ORDER BY u.name
            """)
        return try (0..<result.rowCount).map { row in
            OwnerRecord(
                id: try result.int64(row: row, column: 0) ?? 0, name: result[row, 1] ?? "",
                disabled: try result.bool(row: row, column: 2) ?? false,
                createdAt: try result.date(row: row, column: 3),
                outletCount: try result.int(row: row, column: 4) ?? 0,
                activeSessions: try result.int(row: row, column: 5) ?? 0)
        }
    }

    /// Disables a user and revokes its sessions; false when there is no such user.
    public func disableUser(name: String) throws -> Bool {
        try connection.transaction {
            let result = try connection.execute(
                "UPDATE app_users SET disabled = true, updated_at = now() WHERE name = $1 RETURNING id", [name])
            guard result.rowCount == 1, let id = try result.int64(row: 0, column: 0) else { return false }
            try revokeSessions(userID: id)
            return true
        }
    }

    /// Sets a user's password hash and revokes its sessions; false when there is no such user.
    public func setPasswordHash(name: String, passwordHash: String) throws -> Bool {
        try connection.transaction {
            let result = try connection.execute(
                "UPDATE app_users SET password_hash = $2, updated_at = now() WHERE name = $1 RETURNING id",
                [name, passwordHash])
            guard result.rowCount == 1, let id = try result.int64(row: 0, column: 0) else { return false }
            try revokeSessions(userID: id)
            return true
        }
    }

    private func revokeSessions(userID: Int64) throws {
        try connection.execute(
            "UPDATE app_sessions SET revoked_at = clock_timestamp() WHERE user_id = $1 AND revoked_at IS NULL",
            [userID])
    }

    // MARK: Logins and sessions

    /// The credentials of `name`, or nil when there is no such user.
    public func credentials(name: String) throws -> OwnerCredentials? {
        let result = try connection.execute(
            "SELECT id, name, password_hash, disabled FROM app_users WHERE name = $1", [name])
        guard result.rowCount == 1, let id = try result.int64(row: 0, column: 0) else { return nil }
        return OwnerCredentials(
            id: id, name: result[0, 1] ?? "", passwordHash: result[0, 2] ?? "",
            disabled: try result.bool(row: 0, column: 3) ?? true)
    }

    /// Failed logins in the last `windowSeconds` for `userName` from `address`, from `address`, and for `userName`;
    /// forgets older ones.
    public func loginFailures(userName: String, address: String, windowSeconds: Double) throws -> LoginFailureCounts {
        let window = Int64(windowSeconds * 1_000)
        try connection.execute(
            "DELETE FROM app_login_failures WHERE failed_at < clock_timestamp() - $1 * interval '1 millisecond'",
            [window])
        let result = try connection.execute(
            """
            SELECT count(*) FILTER (WHERE user_name = $1 AND address = $2), count(*) FILTER (WHERE address = $2),
                   count(*) FILTER (WHERE user_name = $1)
            FROM app_login_failures
            WHERE (user_name = $1 OR address = $2) AND failed_at >= clock_timestamp() - $3 * interval '1 millisecond'
            """, [userName, address, window])
        return LoginFailureCounts(
            userFromAddress: try result.int(row: 0, column: 0) ?? 0, address: try result.int(row: 0, column: 1) ?? 0,
            user: try result.int(row: 0, column: 2) ?? 0)
    }

    /// Records a failed login of `userName` (existing or not) from `address`; returns the record's id.
    @discardableResult
    public func recordLoginFailure(userName: String, address: String) throws -> Int64 {
        let result = try connection.execute(
            "INSERT INTO app_login_failures (user_name, address) VALUES ($1, $2) RETURNING id", [userName, address])
        guard let id = try result.int64(row: 0, column: 0) else { throw DeviceStoreError(message: "no failure id") }
        return id
    }

    /// Deletes the record of one failed login.
    public func forgetLoginFailure(_ id: Int64) throws {
        try connection.execute("DELETE FROM app_login_failures WHERE id = $1", [id])
    }

    /// Forgets the failed logins of `userName` from `address` (after a successful one from there). Failures from
    /// other addresses stay: the owner's own login does not wipe a stranger's guessing elsewhere.
    public func clearLoginFailures(userName: String, address: String) throws {
        try connection.execute(
            "DELETE FROM app_login_failures WHERE user_name = $1 AND address = $2", [userName, address])
    }

    /// Stores a session for `token` (as its SHA-256) lasting `lifetimeSeconds`; returns when it expires. The user's
    /// ended sessions (expired or revoked) are deleted meanwhile, so the table holds what can still be used.
    public func createSession(userID: Int64, token: String, lifetimeSeconds: Double) throws -> Date {
        try connection.execute(
            """
            DELETE FROM app_sessions
            WHERE user_id = $1 AND (revoked_at IS NOT NULL OR expires_at <= clock_timestamp())
            """, [userID])
        let result = try connection.execute(
            """
            INSERT INTO app_sessions (user_id, token_hash, expires_at)
            VALUES ($1, sha256(convert_to($2, 'UTF8')), clock_timestamp() + $3 * interval '1 millisecond')
            RETURNING expires_at
            """, [userID, token, Int64(lifetimeSeconds * 1_000)])
        guard let expiresAt = try result.date(row: 0, column: 0) else {
            throw DeviceStoreError(message: "no session stored")
        }
        return expiresAt
    }

    /// Revokes the session of `token` (logout); false when it was not active.
    @discardableResult
    public func revokeSession(token: String) throws -> Bool {
        let result = try connection.execute(
            """
            UPDATE app_sessions SET revoked_at = clock_timestamp()
            WHERE token_hash = sha256(convert_to($1, 'UTF8')) AND revoked_at IS NULL
            """, [token])
        return result.affectedRows == 1
    }

    // MARK: Outlets, keyed by owner

    /// Claims the registered outlet `code` for `userID` with a name and description. With `claimKey` (stored form,
    /// ``Telemetry/ClaimKey``), only when it is the outlet's key. Nil when the code is not registered, another owner
    /// holds it or the key is wrong: the caller cannot tell which.
    public func claim(userID: Int64, code: String, claimKey: String?, name: String, description: String) throws
        -> OwnedOutlet?
    {
        let claimed = try connection.execute(
            """
            UPDATE devices SET owner_id = $1, name = $3, description = $4, updated_at = now(),
                               claimed_at = CASE WHEN owner_id IS NULL THEN now() ELSE claimed_at END
            WHERE code = $2 AND (owner_id IS NULL OR owner_id = $1) AND ($5::text IS NULL OR claim_key = $5)
            """, [userID, code, name, description, claimKey])
        guard claimed.affectedRows == 1 else { return nil }
        return try outlet(userID: userID, code: code)
    }

    /// Renames and/or re-describes `userID`'s outlet `code` (nil leaves a field as it is); nil when not theirs.
    public func update(userID: Int64, code: String, name: String?, description: String?) throws -> OwnedOutlet? {
        let updated = try connection.execute(
            """
            UPDATE devices SET name = coalesce($3, name), description = coalesce($4, description), updated_at = now()
            WHERE code = $2 AND owner_id = $1
            """, [userID, code, name, description])
        guard updated.affectedRows == 1 else { return nil }
        return try outlet(userID: userID, code: code)
    }

    /// Releases `userID`'s outlet `code` (it keeps its data and can be claimed again); false when not theirs. The
    /// automations they made on it are removed with it (their history stays): the next owner's outlet does not
    /// act on the last owner's rules.
    ///
    /// An automation is added under a lock on the outlet's row, after checking who owns it (`Automations`'
    /// `AutomationBook.add`, through ``AutomationStore/withNewRule(on:_:)``). The release takes that lock first, and
    /// removes the rules in a statement of its own, whose snapshot is taken once the lock is held: it sees every rule
    /// added before it, and an add waiting for the lock finds the outlet no longer theirs. (In one statement, the
    /// removal read the rules as of the statement's start: a rule committed while the release waited for the lock
    /// stayed live on the outlet.)
    public func release(userID: Int64, code: String) throws -> Bool {
        try connection.transaction {
            let released = try connection.execute(
                """
                UPDATE devices SET owner_id = NULL, claimed_at = NULL, updated_at = now()
                WHERE code = $2 AND owner_id = $1
                RETURNING id
                """, [userID, code])
            guard released.rowCount == 1, let deviceID = try released.int64(row: 0, column: 0) else { return false }
            try connection.execute(
                """
                UPDATE automations SET removed_at = clock_timestamp(), enabled = false, next_due_at = NULL
                WHERE device_id = $1 AND app_user_id = $2 AND removed_at IS NULL
                """, [deviceID, userID])
            return true
        }
    }

    // MARK: Switching, through the one command lifecycle

    /// Requests `requested` for `userID`'s outlet `code` through `outletd_enqueue_command` (source `app`), under a
    /// lock on the outlet's row so it cannot change hands in between. Nil when the outlet is not theirs.
    public func requestSwitch(userID: Int64, userName: String, code: String, requested: SwitchRequestValue) throws
        -> OwnedCommand?
    {
        try connection.transaction {
            let owned = try connection.execute(
                "SELECT 1 FROM devices WHERE owner_id = $1 AND code = $2 FOR UPDATE", [userID, code])
            guard owned.rowCount == 1 else { return nil }
            let id = try CommandStore(connection: connection).enqueue(
                code: code, requested: requested, source: .app, requestedBy: userName, requestID: nil)
            try connection.execute("UPDATE commands SET app_user_id = $1 WHERE id = $2", [userID, id])
            return try command(userID: userID, id: id)
        }
    }

    /// Command `id` if `userID` requested it in the app: still theirs after they release the outlet, never the
    /// outlet's next owner's.
    public func command(userID: Int64, id: Int64) throws -> OwnedCommand? {
        let result = try connection.execute(
            """
            SELECT c.id, d.code, c.status, c.reason FROM commands c JOIN devices d ON d.id = c.device_id
            WHERE c.id = $2 AND c.app_user_id = $1
            """, [userID, id])
        guard result.rowCount == 1, let commandID = try result.int64(row: 0, column: 0),
            let status = result[0, 2].flatMap(CommandStatus.init(rawValue:))
        else { return nil }
        return OwnedCommand(id: commandID, code: result[0, 1] ?? "", status: status, reason: result[0, 3])
    }
}
