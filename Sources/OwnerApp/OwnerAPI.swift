import Foundation
import Hummingbird
import HummingbirdAuth
import NIOCore
import Storage
import Telemetry

/// The owner's JSON API, `/api/v1` (openapi/outletd-app.yaml describes it). Every route but login sits behind
/// ``BearerTokenAuthenticator`` and `IsAuthenticatedMiddleware`, and every query it runs is keyed by the caller's
/// user id (``OwnerStore``): another owner's outlet or command is a 404, exactly like one that does not exist.
public struct OwnerAPI: Sendable {
    /// Login rate limit: failed logins counted over this window, seconds.
    public var loginWindowSeconds = 900.0
    /// At most this many failed logins per user name in the window; then 429 until the window moves on.
    public var maxFailuresPerUser = 5
    /// At most this many failed logins per client address in the window.
    public var maxFailuresPerAddress = 20
    /// How long a session lasts, seconds.
    public var sessionLifetimeSeconds: Double

    let database: OwnerDatabase

    public init(database: OwnerDatabase, sessionLifetimeSeconds: Double) {
        self.database = database
        self.sessionLifetimeSeconds = sessionLifetimeSeconds
    }

    /// Adds the routes to `router`.
    public func register(on router: Router<OwnerRequestContext>) {
        let api = router.group("api/v1")
        api.post("login", use: login)
        let owner = api.group()
            .add(middleware: BearerTokenAuthenticator(database: database))
            .add(middleware: IsAuthenticatedMiddleware<OwnerRequestContext>())
        owner.post("logout", use: logout)
        owner.get("outlets", use: listOutlets)
        owner.post("outlets", use: claimOutlet)
        owner.get("outlets/:code", use: showOutlet)
        owner.patch("outlets/:code", use: updateOutlet)
        owner.delete("outlets/:code", use: releaseOutlet)
        owner.get("outlets/:code/hourly", use: hourly)
        owner.put("outlets/:code/state", use: switchOutlet)
        owner.get("commands/:id", use: showCommand)
    }

    // MARK: Sessions

    @Sendable func login(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let body = try await Self.jsonObject(request, context: context)
        let userName = try Self.string(body, "username", maxLength: 64)
        let password = try Self.string(body, "password", maxLength: 1_024)
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        let api = self
        let outcome = try await database.run { store -> LoginOutcome in
            // The attempt counts as failed until the password matched, so that attempts made at the same time
            // each see the others: together they cannot get past the limit.
            let attempt = try store.recordLoginFailure(userName: userName, address: address)
            let failures = try store.loginFailures(
                userName: userName, address: address, windowSeconds: api.loginWindowSeconds)
            guard failures.user <= api.maxFailuresPerUser, failures.address <= api.maxFailuresPerAddress else {
                // Refused unheard: it does not count, or hammering would keep the name locked for ever.
                try store.forgetLoginFailure(attempt)
                return .rateLimited
            }
            let credentials = try store.credentials(name: userName)
            // An unknown or disabled user costs the same bcrypt as a wrong password: the answer and its time
            // tell nothing about which names exist.
            let matches = PasswordHasher.verify(password, hash: credentials?.passwordHash ?? PasswordHasher.decoy)
            guard let credentials, matches, !credentials.disabled else { return .refused }
            try store.clearLoginFailures(userName: userName)
            let token = SessionToken.make()
            let expiresAt = try store.createSession(
                userID: credentials.id, token: token, lifetimeSeconds: api.sessionLifetimeSeconds)
            return .loggedIn(token: token, expiresAt: expiresAt)
        }
        switch outcome {
        case .rateLimited:
            throw HTTPError(
                .tooManyRequests, headers: [.retryAfter: String(Int(loginWindowSeconds))],
                message: "too many failed logins; try again later")
        case .refused:
            throw HTTPError(.unauthorized, message: "wrong user name or password")
        case .loggedIn(let token, let expiresAt):
            return JSONOutput.object([
                ("token", .string(token)), ("expires_at", .string(JSONOutput.timestamp(expiresAt))),
            ])
            .response()
        }
    }

    enum LoginOutcome: Sendable {
        case rateLimited
        case refused
        case loggedIn(token: String, expiresAt: Date)
    }

    @Sendable func logout(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try context.requireIdentity().token
        _ = try await database.run { try $0.revokeSession(token: token) }
        return Response(status: .noContent)
    }

    // MARK: Outlets

    @Sendable func listOutlets(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let outlets = try await database.run { try $0.outlets(userID: userID) }
        return JSONOutput.array(outlets.map { .object(Self.members($0)) }).response()
    }

    @Sendable func claimOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let body = try await Self.jsonObject(request, context: context)
        let code = try Self.string(body, "code", maxLength: DeviceCode.maximumLength)
        guard DeviceCode.isValid(code) else {
            throw HTTPError(.badRequest, message: "code: 1–64 of A-Z a-z 0-9 _ -")
        }
        let name = try Self.string(body, "name", maxLength: Self.nameMaxLength, allowEmpty: false)
        let description = try Self.optionalString(body, "description", maxLength: Self.descriptionMaxLength) ?? ""
        guard
            let outlet = try await database.run({
                try $0.claim(userID: userID, code: code, name: name, description: description)
            })
        else { throw Self.noOutlet(code) }
        return JSONOutput.object(Self.members(outlet)).response(.created)
    }

    @Sendable func showOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        let from = try Self.instant(request, "from")
        let to = try Self.instant(request, "to")
        if (from == nil) != (to == nil) { throw HTTPError(.badRequest, message: "from, to: give both or neither") }
        if let from, let to, !(from < to && to.timeIntervalSince(from) <= 366 * 86_400) {
            throw HTTPError(.badRequest, message: "to: must be after from, by at most 366 days")
        }
        let found = try await database.run { store -> (OwnedOutlet, OwnedOutletFigures, Date, Date)? in
            guard let outlet = try store.outlet(userID: userID, code: code) else { return nil }
            var period = (from, to)
            if from == nil, let today = try store.localDay(userID: userID, code: code, date: nil) {
                period = (today.start, today.end)
            }
            guard let start = period.0, let end = period.1,
                let figures = try store.figures(userID: userID, code: code, from: start, to: end)
            else { return nil }
            return (outlet, figures, start, end)
        }
        guard let (outlet, figures, start, end) = found else { throw Self.noOutlet(code) }
        return JSONOutput.object(
            Self.members(outlet) + [
                ("from", .string(JSONOutput.timestamp(start))), ("to", .string(JSONOutput.timestamp(end))),
            ] + Self.members(figures)
        ).response()
    }

    @Sendable func updateOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        let body = try await Self.jsonObject(request, context: context)
        let name = try Self.optionalString(body, "name", maxLength: Self.nameMaxLength, allowEmpty: false)
        let description = try Self.optionalString(body, "description", maxLength: Self.descriptionMaxLength)
        guard
            let outlet = try await database.run({
                try $0.update(userID: userID, code: code, name: name, description: description)
            })
        else { throw Self.noOutlet(code) }
        return JSONOutput.object(Self.members(outlet)).response()
    }

    @Sendable func releaseOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        guard try await database.run({ try $0.release(userID: userID, code: code) }) else { throw Self.noOutlet(code) }
        return Response(status: .noContent)
    }

    @Sendable func hourly(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        let date = request.uri.queryParameters["date"].map(String.init)
        if let date, !Self.isDate(date) { throw HTTPError(.badRequest, message: "date: expected YYYY-MM-DD") }
        guard let day = try await database.run({ try $0.hourly(userID: userID, code: code, date: date) }) else {
            throw Self.noOutlet(code)
        }
        let hours = day.hours.map { hour -> JSONOutput in
            .object([("hour", .integer(Int64(hour.hour)))] + Self.members(hour.figures))
        }
        return JSONOutput.object([
            ("date", .string(day.date)), ("timezone", .string(day.timeZone)), ("hours", .array(hours)),
        ])
        .response()
    }

    // MARK: Switching

    @Sendable func switchOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let session = try context.requireIdentity().session
        let code = try Self.code(context)
        let body = try await Self.jsonObject(request, context: context)
        let text = try Self.string(body, "state", maxLength: 16)
        guard let requested = SwitchRequestValue(rawValue: text) else {
            throw HTTPError(.badRequest, message: "state: must be on, off or toggle")
        }
        guard
            let command = try await database.run({
                try $0.requestSwitch(
                    userID: session.userID, userName: session.userName, code: code, requested: requested)
            })
        else { throw Self.noOutlet(code) }
        return JSONOutput.object(Self.members(command)).response(.accepted)
    }

    @Sendable func showCommand(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let text = context.parameters.get("id") ?? ""
        guard let id = Int64(text), id > 0,
            let command = try await database.run({ try $0.command(userID: userID, id: id) })
        else { throw HTTPError(.notFound, message: "no command \(text)") }
        return JSONOutput.object(Self.members(command)).response()
    }

    // MARK: Shapes

    static let nameMaxLength = 100
    static let descriptionMaxLength = 500

    static func members(_ outlet: OwnedOutlet) -> [(String, JSONOutput)] {
        [
            ("code", .string(outlet.code)), ("name", .string(outlet.name)),
            ("description", .string(outlet.description)),
            ("online", .optional(outlet.online)), ("state", .optional(outlet.state?.rawValue)),
            ("power_watts", .optional(outlet.powerWatts)), ("updated_at", .optional(outlet.updatedAt)),
            ("timezone", .string(outlet.timeZone)),
        ]
    }

    static func members(_ figures: OwnedOutletFigures) -> [(String, JSONOutput)] {
        [
            ("average_power_watts", .optional(figures.averagePowerWatts)),
            ("peak_power_watts", .optional(figures.peakPowerWatts)), ("energy_wh", .optional(figures.energyWattHours)),
        ]
    }

    static func members(_ command: OwnedCommand) -> [(String, JSONOutput)] {
        [("command_id", .integer(command.id)), ("status", .string(command.status.rawValue))]
            + (command.reason.map { [("reason", JSONOutput.string($0))] } ?? [])
    }

    // MARK: Reading requests

    static func noOutlet(_ code: String) -> HTTPError {
        HTTPError(.notFound, message: "no outlet \(code)")
    }

    /// The `{code}` of the path; a code that cannot exist is a 404 like any other unknown one.
    static func code(_ context: OwnerRequestContext) throws -> String {
        let code = context.parameters.get("code") ?? ""
        guard DeviceCode.isValid(code) else { throw noOutlet(code) }
        return code
    }

    /// The body as a JSON object, or 400 saying what is wrong with it.
    static func jsonObject(_ request: Request, context: OwnerRequestContext) async throws -> [String: JSONValue] {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: context.maxUploadSize)
        } catch {
            throw HTTPError(.contentTooLarge, message: "body: larger than \(context.maxUploadSize) bytes")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "body: not JSON (\(error))")
        }
        guard case .object(let members) = value else {
            throw HTTPError(.badRequest, message: "body: expected a JSON object, got \(value.typeName)")
        }
        return members
    }

    static func string(
        _ body: [String: JSONValue], _ field: String, maxLength: Int, allowEmpty: Bool = true
    ) throws -> String {
        guard let value = try optionalString(body, field, maxLength: maxLength, allowEmpty: allowEmpty) else {
            throw HTTPError(.badRequest, message: "\(field): required")
        }
        return value
    }

    static func optionalString(
        _ body: [String: JSONValue], _ field: String, maxLength: Int, allowEmpty: Bool = true
    ) throws -> String? {
        guard let value = body[field], !value.isNull else { return nil }
        guard case .string(let text) = value else {
            throw HTTPError(.badRequest, message: "\(field): expected a string, got \(value.typeName)")
        }
        guard text.count <= maxLength else {
            throw HTTPError(.badRequest, message: "\(field): at most \(maxLength) characters")
        }
        guard allowEmpty || !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw HTTPError(.badRequest, message: "\(field): must not be empty")
        }
        return text
    }

    /// Query parameter `name` as an RFC 3339 instant (`2026-11-25T03:00:00Z`), nil when absent.
    static func instant(_ request: Request, _ name: String) throws -> Date? {
        guard let text = request.uri.queryParameters[name[...]] else { return nil }
        guard let date = RFC3339.date(from: text) else {
            throw HTTPError(.badRequest, message: "\(name): expected an RFC 3339 time like 2026-11-25T03:00:00Z")
        }
        return date
    }

    /// Whether `text` is a real calendar date `YYYY-MM-DD`.
    static func isDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...9_999).contains(year), (1...12).contains(month)
        else { return false }
        return (1...RFC3339.daysInMonth(year: year, month: month)).contains(day)
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
