import Foundation
import Hummingbird
import Storage
import Telemetry

/// Logging in, and the limits that keep a stranger from guessing passwords or locking an owner out
/// (docs/SECURITY.md, "Logins").
///
/// Failed logins count over ``OwnerAPI/Settings/loginWindowSeconds`` (15 minutes) under three keys: the name tried
/// from the client's address (5), the address whatever the names (20), and the name from every address (100, a
/// ceiling far above what an owner meets, against guessing spread over many addresses). A login over any of them
/// is refused unheard (429, `Retry-After`) and does not count. So a stranger cannot lock an owner out from
/// elsewhere short of a hundred addresses' worth of failures, and the owner's own mistakes lock only their own
/// address. PostgreSQL keeps the counts (`app_login_failures`), so every instance sees them; a
/// ``FailureLimiter`` in memory keeps the same counts for this instance and answers a flood without a query.
extension OwnerAPI {
    enum LoginOutcome: Sendable {
        case rateLimited
        case refused
        case loggedIn(token: String, expiresAt: Date, userID: Int64)
    }

    /// What the database said before the password was checked.
    enum LoginCheck: Sendable {
        case rateLimited(key: String, limit: FailureLimiter.Limit)
        case check(failureID: Int64, credentials: OwnerCredentials?)
    }

    @Sendable func login(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let body = try await Self.decodeBody(
            LoginBody.self, request, context: context, expectations: LoginBody.expectations)
        let userName = try Self.required(body.username, "username", Self.userNameRule)
        guard let password = body.password else { throw HTTPError(.badRequest, message: "password: required") }
        guard password.utf8.count <= Self.passwordMaxBytes else {
            throw HTTPError(.badRequest, message: "password: at most \(Self.passwordMaxBytes) bytes")
        }
        let address = context.clientAddress
        let keys = loginKeys(userName: userName, address: address)
        guard case .granted(let ticket) = loginLimiter.reserve(keys) else {
            metrics.login("rate_limited")
            throw tooManyLogins
        }
        // A login that could not be checked now costs nothing more, the database's time included.
        if passwords.isFull {
            loginLimiter.forgive(ticket)
            metrics.login("busy")
            throw Self.busy
        }
        let outcome: LoginOutcome
        do {
            outcome = try await login(userName: userName, password: password, address: address, keys: keys)
        } catch {
            loginLimiter.forgive(ticket)
            throw error
        }
        switch outcome {
        case .rateLimited:
            loginLimiter.forgive(ticket)
            metrics.login("rate_limited")
            throw tooManyLogins
        case .refused:
            metrics.login("refused")
            throw HTTPError(.unauthorized, message: "wrong user name or password")
        case .loggedIn(let token, let expiresAt, let userID):
            loginLimiter.forgive(ticket)
            share.learn(token: token, userID: userID)
            loginLimiter.clear(keys[0].1)
            metrics.login("ok")
            return try Self.answer(
                LoginAnswer(token: token, expiresAt: JSONOutput.timestamp(expiresAt)), request, context: context)
        }
    }

    /// The three keys a login counts under, the name-and-address one first.
    func loginKeys(userName: String, address: String) -> [(FailureLimiter.Limit, String)] {
        [
            (settings.loginLimits.userFromAddress, "name+address \(userName) \(address)"),
            (settings.loginLimits.address, "address \(address)"),
            (settings.loginLimits.user, "name \(userName)"),
        ]
    }

    static let busy = HTTPError(
        .serviceUnavailable, headers: [.retryAfter: "1"], message: "too many logins at once; try again in a second")

    var tooManyLogins: HTTPError {
        HTTPError(
            .tooManyRequests, headers: [.retryAfter: String(Int(settings.loginWindowSeconds))],
            message: "too many failed logins; try again later")
    }

    private func login(
        userName: String, password: String, address: String, keys: [(FailureLimiter.Limit, String)]
    ) async throws -> LoginOutcome {
        let settings = self.settings
        let check = try await database.run { store -> LoginCheck in
            // The attempt counts as failed until the password matched, so that attempts made at the same time
            // each see the others: together they cannot get past the limit.
            let attempt = try store.recordLoginFailure(userName: userName, address: address)
            let failures = try store.loginFailures(
                userName: userName, address: address, windowSeconds: settings.loginWindowSeconds)
            for (count, index) in [(failures.userFromAddress, 0), (failures.address, 1), (failures.user, 2)]
            where count > keys[index].0.maxFailures {
                // Refused unheard: it does not count, or hammering would keep the name locked for ever.
                try store.forgetLoginFailure(attempt)
                return .rateLimited(key: keys[index].1, limit: keys[index].0)
            }
            return .check(failureID: attempt, credentials: try store.credentials(name: userName))
        }
        guard case .check(let failureID, let credentials) = check else {
            if case .rateLimited(let key, let limit) = check {
                // Other instances' failures put it over: this instance answers the next ones itself.
                loginLimiter.block(key, limit: limit, forSeconds: Int(settings.loginWindowSeconds))
            }
            return .rateLimited
        }
        // An unknown or disabled user costs the same bcrypt as a wrong password: the answer and its time tell
        // nothing about which names exist. The check runs on the password threads, never the database's.
        let matches: Bool
        do {
            matches = try await passwords.verify(password, hash: credentials?.passwordHash ?? PasswordHasher.decoy)
        } catch is PasswordChecker.Busy {
            _ = try? await database.run { try $0.forgetLoginFailure(failureID) }
            metrics.login("busy")
            throw Self.busy
        }
        guard let credentials, matches, !credentials.disabled else { return .refused }
        let lifetime = settings.sessionLifetimeSeconds
        return try await database.run { store in
            try store.forgetLoginFailure(failureID)
            try store.clearLoginFailures(userName: userName, address: address)
            let token = SessionToken.make()
            let expiresAt = try store.createSession(
                userID: credentials.id, token: token, lifetimeSeconds: lifetime)
            return .loggedIn(token: token, expiresAt: expiresAt, userID: credentials.id)
        }
    }

    @Sendable func logout(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try context.requireIdentity().token
        _ = try await database.run { try $0.revokeSession(token: token) }
        return Response(status: .noContent)
    }
}

/// An opaque session token: 32 random bytes from the system's CSPRNG, base64url without padding (43 characters).
/// Only its SHA-256 is stored.
enum SessionToken {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        for _ in 0..<4 { withUnsafeBytes(of: generator.next() as UInt64) { bytes += $0 } }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
