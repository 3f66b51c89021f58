import Config
import Foundation
import Hummingbird
import HummingbirdAuth
import NIOCore
import Storage
import Telemetry

/// The owner's JSON API, `/api/v1` (openapi/outletd-app.yaml describes it). Every route but login sits behind
/// ``BearerTokenAuthenticator`` and `IsAuthenticatedMiddleware`, except the two the page polls (the outlet list and
/// an outlet's detail), which look the session up in their own statement under the same conditions (401 alike);
/// every query is keyed by the caller's user id (``OwnerStore``): another owner's outlet or command is a 404,
/// exactly like one that does not exist.
/// docs/SECURITY.md says what each defence is and which test proves it.
public struct OwnerAPI: Sendable {
    /// The API's rules: sessions, claims and the rate limits.
    public struct Settings: Sendable {
        /// How long a session lasts, seconds.
        public var sessionLifetimeSeconds: Double
        /// Whether a claim needs the outlet's claim key (`app.claim_requires_key`).
        public var claimRequiresKey = true
        /// Failed logins are counted over this window, seconds.
        public var loginWindowSeconds = 900.0
        /// The login limits (``OwnerAPI/login(_:context:)``).
        public var loginLimits = LoginLimits()
        /// Failed claims are counted over this window, seconds.
        public var claimWindowSeconds = 900.0
        /// At most this many failed claims per owner in the window; then 429.
        public var maxClaimFailuresPerOwner = 10
        /// At most this many failed claims per client address in the window, whoever is logged in.
        public var maxClaimFailuresPerAddress = 30
        /// How long the detail's cost figures for today are kept (``CostCache``), seconds; 0: priced every time.
        public var costCacheSeconds = 60.0
        /// Alerts' per-owner limits (`alerts.*`).
        public var alerts = OutletdConfiguration.AlertSettings()
        /// What one owner may hold of the app at once (``OwnerShare``).
        var ownerShare = OwnerShare.Limits()

        public init(sessionLifetimeSeconds: Double, claimRequiresKey: Bool = true) {
            self.sessionLifetimeSeconds = sessionLifetimeSeconds
            self.claimRequiresKey = claimRequiresKey
        }
    }

    /// Failed logins allowed in the window, per key (docs/SECURITY.md, "Logins").
    public struct LoginLimits: Sendable {
        /// For one name from one address: the owner's own typos, or a stranger's guesses from one place.
        var userFromAddress = FailureLimiter.Limit(kind: "name and address", maxFailures: 5)
        /// From one address, whatever the names.
        var address = FailureLimiter.Limit(kind: "address", maxFailures: 20)
        /// For one name from every address: a ceiling far above what an owner meets.
        var user = FailureLimiter.Limit(kind: "name", maxFailures: 100)
    }

    let database: OwnerDatabase
    let settings: Settings
    let passwords: PasswordChecker
    let metrics: AppMetrics
    let loginLimiter: FailureLimiter
    let claimLimiter: FailureLimiter
    let costCache: CostCache
    let live: LiveHub
    let share: OwnerShare

    init(database: OwnerDatabase, settings: Settings, passwords: PasswordChecker, live: LiveHub, metrics: AppMetrics) {
        self.database = database
        self.live = live
        self.settings = settings
        self.passwords = passwords
        self.metrics = metrics
        loginLimiter = FailureLimiter(windowSeconds: settings.loginWindowSeconds)
        claimLimiter = FailureLimiter(windowSeconds: settings.claimWindowSeconds)
        costCache = CostCache(lifetimeSeconds: settings.costCacheSeconds)
        share = OwnerShare(limits: settings.ownerShare)
    }

    /// Adds the routes to `router`.
    func register(on router: Router<OwnerRequestContext>) {
        let api = router.group("api/v1")
        api.post("login", use: login)
        // The routes the page polls or reloads look the session up in the statement that reads what they answer.
        // Each request with a token counts in its owner's share (``OwnerShare``) before it reaches the database.
        let polled = api.group().add(middleware: OwnerShareMiddleware(share: share))
        polled.get("outlets", use: listOutlets)
        polled.get("outlets/:code", use: showOutlet)
        polled.get("outlets/:code/hourly", use: hourly)
        // The page's live values: one stream per page, its session checked at every read (``LiveHub``).
        api.get("live", use: liveOutlets)
        let owner = api.group()
            .add(middleware: OwnerShareMiddleware(share: share))
            .add(middleware: BearerTokenAuthenticator(database: database))
            .add(middleware: IsAuthenticatedMiddleware<OwnerRequestContext>())
            .add(middleware: OwnerShareMiddleware.Learning(share: share))
        owner.post("logout", use: logout)
        owner.post("outlets", use: claimOutlet)
        owner.patch("outlets/:code", use: updateOutlet)
        owner.delete("outlets/:code", use: releaseOutlet)
        owner.put("outlets/:code/state", use: switchOutlet)
        owner.get("commands/:id", use: showCommand)
        owner.get("outlets/:code/automations", use: listAutomations)
        owner.post("outlets/:code/automations", use: addAutomation)
        owner.get("automations/:id", use: showAutomation)
        owner.patch("automations/:id", use: updateAutomation)
        owner.delete("automations/:id", use: removeAutomation)
        owner.get("automations/:id/history", use: automationHistory)
        owner.get("alerts", use: listAlerts)
        owner.post("alerts/:id/ack", use: acknowledgeAlert)
        owner.post("alerts/:id/snooze", use: snoozeAlert)
        owner.get("alert-rules", use: listAlertRules)
        owner.put("alert-rules", use: setAlertRule)
        owner.delete("alert-rules/:id", use: removeAlertRule)
        owner.get("alert-channels", use: listAlertChannels)
        owner.post("alert-channels", use: addAlertChannel)
        owner.patch("alert-channels/:id", use: setAlertChannelEnabled)
        owner.delete("alert-channels/:id", use: removeAlertChannel)
        owner.get("push/key", use: pushKey)
    }

    // MARK: Outlets

    /// The bearer token of `request`; 401, as ``BearerTokenAuthenticator`` and `IsAuthenticatedMiddleware` answer,
    /// when there is none. For the routes that look their session up themselves, in their own statement.
    static func token(_ request: Request) throws -> String {
        guard let token = BearerTokenAuthenticator.bearerToken(request.headers[.authorization]) else {
            throw HTTPError(.unauthorized)
        }
        return token
    }

    /// What `parse` reads from a request whose route looks its session up itself; when it fails, 401 without an
    /// active session for `token` (as behind the authenticator, whatever else is wrong), else its error.
    func parsed<T>(_ token: String, _ parse: () throws -> T) async throws -> T {
        do {
            return try parse()
        } catch {
            guard try await database.run({ try $0.session(token: token) }) != nil else {
                throw HTTPError(.unauthorized)
            }
            throw error
        }
    }

    @Sendable func listOutlets(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try Self.token(request)
        guard let (session, outlets) = try await database.run({ try $0.sessionAndOutlets(token: token) }) else {
            throw HTTPError(.unauthorized)
        }
        share.learn(token: token, userID: session.userID)
        return try Self.answer(outlets.map(OutletAnswer.init), request, context: context)
    }

    /// Claims an outlet by its code and the claim key on its label (or `CODE:KEY` in `code`, as a QR code on the
    /// label carries it). Unknown code, wrong key and someone else's outlet: the same 404. Failed claims are limited
    /// per owner and per client address (429 with `Retry-After`).
    @Sendable func claimOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let body = try await Self.decodeBody(
            ClaimBody.self, request, context: context, expectations: ClaimBody.expectations)
        var code = try Self.required(
            body.code, "code", OwnerText.Rule(maxScalars: 200, maxBytes: 200, allowsEmpty: false))
        var keyText = try Self.checked(body.claimKey, "claim_key", OwnerText.Rule(maxScalars: 64, maxBytes: 64))
        if keyText == nil, let combined = ClaimKey.splitCombined(code) { (code, keyText) = combined }
        guard DeviceCode.isValid(code) else {
            metrics.claim("invalid")
            throw HTTPError(.badRequest, message: "code: 1–64 of A-Z a-z 0-9 _ -")
        }
        let name = try Self.required(body.name, "name", Self.nameRule)
        let description = try Self.checked(body.description, "description", Self.descriptionRule) ?? ""
        var key: String?
        if let keyText {
            guard let normalized = ClaimKey.normalized(keyText) else {
                metrics.claim("invalid")
                throw HTTPError(
                    .badRequest,
                    message: "claim_key: expected the 12 letters and digits on the label, like K7QF-3MZP-X2CD")
            }
            key = normalized
        } else if settings.claimRequiresKey {
            metrics.claim("invalid")
            throw HTTPError(
                .badRequest, message: "claim_key: required (the key printed on the outlet's label beside its code)")
        }
        let reservation = claimLimiter.reserve([
            (.init(kind: "owner", maxFailures: settings.maxClaimFailuresPerOwner), "owner \(userID)"),
            (
                .init(kind: "address", maxFailures: settings.maxClaimFailuresPerAddress),
                "address \(context.clientAddress)"
            ),
        ])
        guard case .granted(let ticket) = reservation else {
            metrics.claim("rate_limited")
            var seconds = 60
            if case .refused(let retryAfter, _) = reservation { seconds = retryAfter }
            throw HTTPError(
                .tooManyRequests, headers: [.retryAfter: String(seconds)],
                message: "too many failed claims; check the code and key on the label and try again later")
        }
        let outlet: OwnedOutlet?
        let (claimCode, claimKey) = (code, key)
        do {
            outlet = try await database.run {
                try $0.claim(
                    userID: userID, code: claimCode, claimKey: claimKey, name: name, description: description)
            }
        } catch {
            claimLimiter.forgive(ticket)
            throw error
        }
        guard let outlet else {
            metrics.claim("not_found")
            throw Self.noOutlet(code)
        }
        claimLimiter.forgive(ticket)
        costCache.forget(code: outlet.code)
        metrics.claim("claimed")
        return try Self.answer(OutletAnswer(outlet), status: .created, request, context: context)
    }

    @Sendable func showOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try Self.token(request)
        let (code, from, to) = try await parsed(token) { () throws -> (String, Date?, Date?) in
            let code = try Self.code(context)
            let from = try Self.instant(request, "from")
            let to = try Self.instant(request, "to")
            if (from == nil) != (to == nil) {
                throw HTTPError(.badRequest, message: "from, to: give both or neither")
            }
            if let from, let to, !(from < to && to.timeIntervalSince(from) <= 366 * 86_400) {
                throw HTTPError(.badRequest, message: "to: must be after from, by at most 366 days")
            }
            return (code, from, to)
        }
        // A period asked for prices up to a year of rollups: one such at a time per owner (``OwnerShare``).
        var period: OwnerShare.Ticket?
        if from != nil {
            guard let ticket = share.admit(share.key(token: token), pricesPeriod: true) else {
                throw OwnerShare.refusal(pricesPeriod: true)
            }
            period = ticket
        }
        defer { if let period { share.leave(period) } }
        let (costCache, share) = (costCache, share)
        // The session, the outlet, its figures and its automations in one statement; the cost in one more, unless kept.
        let found = try await database.run { store -> (OwnedOutletDetail, OwnedOutletCost)?? in
            guard let (session, detail) = try store.detail(token: token, code: code, from: from, to: to) else {
                return nil
            }
            share.learn(token: token, userID: session.userID)
            guard let detail else { return .some(nil) }
            let (userID, start, end) = (session.userID, detail.from, detail.to)
            // Today's figures (no period asked) may come from the cache: the outlet was found as this owner's above.
            let priced =
                from == nil
                ? try costCache.today(CostCache.Key(userID: userID, code: code, from: start, to: end), pricing: store)
                : try store.cost(userID: userID, code: code, from: start, to: end)
            guard let cost = priced else { return .some(nil) }
            return (detail, cost)
        }
        guard let found else { throw HTTPError(.unauthorized) }
        guard let (detail, cost) = found else { throw Self.noOutlet(code) }
        return try Self.answer(OutletDetailAnswer(detail, cost: cost), request, context: context)
    }

    @Sendable func updateOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        let body = try await Self.decodeBody(
            OutletUpdateBody.self, request, context: context,
            expectations: OutletUpdateBody.expectations)
        let name = try Self.checked(body.name, "name", Self.nameRule)
        let description = try Self.checked(body.description, "description", Self.descriptionRule)
        guard
            let outlet = try await database.run({
                try $0.update(userID: userID, code: code, name: name, description: description)
            })
        else { throw Self.noOutlet(code) }
        costCache.forget(code: code)
        return try Self.answer(OutletAnswer(outlet), request, context: context)
    }

    @Sendable func releaseOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let code = try Self.code(context)
        guard try await database.run({ try $0.release(userID: userID, code: code) }) else { throw Self.noOutlet(code) }
        costCache.forget(code: code)
        return Response(status: .noContent)
    }

    @Sendable func hourly(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try Self.token(request)
        let (code, date) = try await parsed(token) { (try Self.code(context), try Self.date(request, "date")) }
        let share = share
        // The session, the outlet's day and its hours in one statement.
        let found = try await database.run { store -> (OwnedOutletDay, [OwnedOutletHour])?? in
            guard let (session, chart) = try store.chart(token: token, code: code, date: date) else { return nil }
            share.learn(token: token, userID: session.userID)
            return .some(chart.map { ($0.day, $0.hours) })
        }
        guard let found else { throw HTTPError(.unauthorized) }
        guard let (day, hours) = found else { throw Self.noOutlet(code) }
        return try Self.answer(HourlyAnswer(day, hours), request, context: context)
    }

    // MARK: Switching

    @Sendable func switchOutlet(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let session = try context.requireIdentity().session
        let code = try Self.code(context)
        let body = try await Self.decodeBody(
            SwitchBody.self, request, context: context, expectations: SwitchBody.expectations)
        let text = try Self.required(body.state, "state", OwnerText.Rule(maxScalars: 16, maxBytes: 16))
        guard let requested = SwitchRequestValue(rawValue: text) else {
            throw HTTPError(.badRequest, message: "state: must be on, off or toggle")
        }
        guard
            let command = try await database.run({
                try $0.requestSwitch(
                    userID: session.userID, userName: session.userName, code: code, requested: requested)
            })
        else { throw Self.noOutlet(code) }
        return try Self.answer(CommandAnswer(command), status: .accepted, request, context: context)
    }

    /// A command the caller made in the app; any other id is a 404.
    @Sendable func showCommand(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let userID = try context.requireIdentity().session.userID
        let text = context.parameters.get("id") ?? ""
        guard text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(text),
            id > 0, let command = try await database.run({ try $0.command(userID: userID, id: id) })
        else { throw HTTPError(.notFound, message: "no such command") }
        return try Self.answer(CommandAnswer(command), request, context: context)
    }

    // MARK: Shapes

    /// `outlet` as ``OutletAnswer`` encodes it, written straight into `buffer`: each live event carries its owner's
    /// outlets this way, without a tree of values (and its strings and arrays) per outlet per event.
    static func write(_ outlet: OwnedOutlet, to buffer: inout ByteBuffer) {
        buffer.writeStaticString("{\"code\":")
        JSONOutput.writeString(outlet.code, to: &buffer)
        buffer.writeStaticString(",\"name\":")
        JSONOutput.writeString(outlet.name, to: &buffer)
        buffer.writeStaticString(",\"description\":")
        JSONOutput.writeString(outlet.description, to: &buffer)
        buffer.writeStaticString(",\"online\":")
        JSONOutput.optional(outlet.online).write(to: &buffer)
        buffer.writeStaticString(",\"state\":")
        JSONOutput.optional(outlet.state?.rawValue).write(to: &buffer)
        buffer.writeStaticString(",\"power_watts\":")
        JSONOutput.optional(outlet.powerWatts).write(to: &buffer)
        buffer.writeStaticString(",\"updated_at\":")
        JSONOutput.optional(outlet.updatedAt).write(to: &buffer)
        buffer.writeStaticString(",\"timezone\":")
        JSONOutput.writeString(outlet.timeZone, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "}"))
    }
}
