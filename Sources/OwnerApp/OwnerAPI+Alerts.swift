import AlertChannels
import Alerts
import Config
import Foundation
import Hummingbird
import Postgres
import Storage
import Telemetry

/// An owner's alerts (docs/ALERTS.md): their incidents (acknowledge, snooze), their rules and their channels, through
/// the feature's entry point ``AlertBook`` in the owner's scope, so that another owner's id is the same 404 as one
/// that does not exist. Bodies are `Codable`; a bad value is a 400 saying which and why, a limit reached a 409.
extension OwnerAPI {
    static func noAlert(_ what: String) -> HTTPError { HTTPError(.notFound, message: "no such \(what)") }

    static func alertScope(_ context: OwnerRequestContext) throws -> (scope: AlertScope, name: String) {
        let session = try context.requireIdentity().session
        return (.owner(session.userID), session.userName)
    }

    /// Runs `body` with the owner's ``AlertBook`` on a database connection; its refusals become 400, 404 and 409.
    func alerts<T: Sendable>(_ body: @escaping @Sendable (AlertBook<AlertSQLStore>) throws -> T) async throws -> T {
        let maxMessages = settings.alerts.maxMessagesPerHour
        do {
            return try await database.run { store in
                try body(AlertBook(AlertSQLStore(connection: store.connection, maxMessagesPerHour: maxMessages)))
            }
        } catch let error as AlertBookError {
            switch error {
            case .invalid(let reason): throw HTTPError(.badRequest, message: reason)
            case .notFound(let what): throw Self.noAlert(what)
            case .refused(let refusal): throw HTTPError(.conflict, message: refusal.description)
            }
        }
    }

    /// The path's `{id}`; anything but a positive integer is a 404 like an unknown id.
    static func alertID(_ context: OwnerRequestContext, _ what: String) throws -> Int64 {
        let text = context.parameters.get("id") ?? ""
        guard text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(text),
            id > 0
        else { throw noAlert(what) }
        return id
    }

    // MARK: Incidents

    /// `GET /api/v1/alerts`: the open count (the page's badge) and the newest incidents (`?open=true`: open only).
    @Sendable func listAlerts(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let openOnly = request.uri.queryParameters["open"] == "true"
        let (count, incidents) = try await alerts { try $0.incidents(in: scope, openOnly: openOnly, limit: 100) }
        return try Self.answer(
            AlertListAnswer(openCount: count, incidents: incidents.map(AlertIncidentAnswer.init)), request,
            context: context)
    }

    /// `POST /api/v1/alerts/{id}/ack`.
    @Sendable func acknowledgeAlert(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, name) = try Self.alertScope(context)
        let id = try Self.alertID(context, "alert")
        try await alerts { try $0.acknowledge(id, in: scope, by: "owner:\(name)") }
        return Response(status: .noContent)
    }

    /// `POST /api/v1/alerts/{id}/snooze` `{"seconds": 3600}` (0 ends a snooze; at most 7 days).
    @Sendable func snoozeAlert(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, name) = try Self.alertScope(context)
        let id = try Self.alertID(context, "alert")
        let body = try await Self.decodeBody(
            SnoozeBody.self, request, context: context, expectations: ["seconds": "a whole number of seconds"])
        try await alerts { try $0.snooze(id, seconds: body.seconds, in: scope, by: "owner:\(name)") }
        return Response(status: .noContent)
    }

    // MARK: Rules

    @Sendable func listAlertRules(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let rules = try await alerts { try $0.rules(in: scope) }
        return try Self.answer(rules.map(AlertRuleAnswer.init), request, context: context)
    }

    /// `PUT /api/v1/alert-rules` `{"kind": "offline", "outlet": "kitchen-1", "after_seconds": 300}`: sets the rule
    /// of that kind on that outlet (no `outlet`: all the owner's outlets), replacing the one there was.
    @Sendable func setAlertRule(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, name) = try Self.alertScope(context)
        let body = try await Self.decodeBody(
            AlertRuleBody.self, request, context: context, expectations: AlertRuleBody.expectations)
        if let outlet = body.outlet, !DeviceCode.isValid(outlet), AlertKind(rawValue: body.kind) != nil {
            throw HTTPError(.notFound, message: "no such outlet")
        }
        let maxRules = settings.alerts.maxRulesPerOwner
        let record = try await alerts {
            try $0.setRule(
                kind: body.kind, parameters: body.parameters, outlet: body.outlet, in: scope, by: "owner:\(name)",
                maxRules: maxRules)
        }
        return try Self.answer(AlertRuleAnswer(record), request, context: context)
    }

    @Sendable func removeAlertRule(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let id = try Self.alertID(context, "alert rule")
        try await alerts { try $0.removeRule(id, in: scope) }
        return Response(status: .noContent)
    }

    // MARK: Channels

    @Sendable func listAlertChannels(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let channels = try await alerts { try $0.channels(in: scope) }
        return try Self.answer(channels.map(AlertChannelAnswer.init), request, context: context)
    }

    /// `POST /api/v1/alert-channels`: `{"kind": "email", "target": "ana@example.com", "language": "pt-BR"}`,
    /// `{"kind": "webhook", "target": "https://…", "secret": "whsec_…"}` (the secret is the owner's, never answered),
    /// `{"kind": "webpush", "target": "<endpoint>", "p256dh": "…", "auth": "…"}` (the browser's subscription).
    @Sendable func addAlertChannel(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let body = try await Self.decodeBody(
            AlertChannelBody.self, request, context: context, expectations: AlertChannelBody.expectations)
        let spec = try body.spec()
        if spec.kind == .webhook || spec.kind == .webpush {
            // The private-address rule at once, with its reason (it is applied again at every send: a name may
            // resolve elsewhere later). A name that does not resolve now is taken and judged when sent.
            do {
                try await EndpointGuard.check(url: spec.target, allowPrivate: settings.alerts.webhookAllowPrivate)
            } catch {
                if case .permanent(let reason) = error { throw HTTPError(.badRequest, message: "target: \(reason)") }
            }
        }
        let maxChannels = settings.alerts.maxChannelsPerOwner
        let record = try await alerts { try $0.addChannel(spec, in: scope, maxChannels: maxChannels) }
        return try Self.answer(AlertChannelAnswer(record), status: .created, request, context: context)
    }

    /// `GET /api/v1/push/key`: `{"key": "<base64url>"}`, the VAPID public key (RFC 8292) a browser subscribes with
    /// (the page's `applicationServerKey`); 404 when Web Push is off (no `alerts.vapid_key_file`, or a key that
    /// cannot be read). The same file the daemon's sender uses, created once by whichever reads it first.
    @Sendable func pushKey(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        _ = try Self.alertScope(context)
        let path = settings.alerts.vapidKeyFile
        guard !path.isEmpty, let key = try? VAPIDKey.loadOrCreate(path: path) else {
            throw HTTPError(.notFound, message: "Web Push is not configured")
        }
        return try Self.answer(PushKeyAnswer(key: key.publicKeyBase64URL), request, context: context)
    }

    /// `PATCH /api/v1/alert-channels/{id}` `{"enabled": false}` pauses a channel (what is pending for it is dropped),
    /// `true` resumes it; answers the channel.
    @Sendable func setAlertChannelEnabled(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let id = try Self.alertID(context, "alert channel")
        let body = try await Self.decodeBody(
            AlertChannelUpdateBody.self, request, context: context, expectations: ["enabled": "true or false"])
        let channel = try await alerts { try $0.setChannelEnabled(id, body.enabled, in: scope) }
        return try Self.answer(AlertChannelAnswer(channel), request, context: context)
    }

    @Sendable func removeAlertChannel(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let (scope, _) = try Self.alertScope(context)
        let id = try Self.alertID(context, "alert channel")
        try await alerts { try $0.removeChannel(id, in: scope) }
        return Response(status: .noContent)
    }
}

// MARK: Bodies and answers

struct SnoozeBody: Decodable {
    var seconds: Int
}

struct AlertChannelUpdateBody: Decodable {
    var enabled: Bool
}

struct AlertRuleBody: Decodable {
    var kind: String
    var outlet: String?
    var afterSeconds: Int?
    var forSeconds: Int?
    var watts: Double?
    var amount: String?
    var resolveAfterSeconds: Int?

    enum CodingKeys: String, CodingKey {
        case kind, outlet, watts, amount
        case afterSeconds = "after_seconds"
        case forSeconds = "for_seconds"
        case resolveAfterSeconds = "resolve_after_seconds"
    }

    static let expectations = [
        "kind": "a kind of alert", "outlet": "an outlet's code", "after_seconds": "a whole number of seconds",
        "for_seconds": "a whole number of seconds", "watts": "a number of watts", "amount": "decimal text (\"120.50\")",
        "resolve_after_seconds": "a whole number of seconds",
    ]

    var parameters: AlertParameters {
        AlertParameters(
            afterSeconds: afterSeconds, forSeconds: forSeconds, watts: watts, amount: amount,
            resolveAfterSeconds: resolveAfterSeconds)
    }
}

struct AlertChannelBody: Decodable {
    var kind: String
    var target: String
    var secret: String?
    var p256dh: String?
    var auth: String?
    var language: String?

    static let expectations = [
        "kind": "webpush, webhook or email", "target": "text", "secret": "text", "p256dh": "text", "auth": "text",
        "language": "en or pt-BR",
    ]

    /// The channel, its fields checked for its kind (a webhook's address is checked again, against private
    /// addresses, each time it is sent to).
    func spec() throws -> AlertChannelSpec {
        guard let kind = AlertChannelKind(rawValue: kind), kind != .page else {
            throw HTTPError(.badRequest, message: "kind: expected webpush, webhook or email")
        }
        let language = try language.map { text -> AlertLanguage in
            guard let language = AlertLanguage(rawValue: text) else {
                throw HTTPError(.badRequest, message: "language: expected en or pt-BR")
            }
            return language
        }
        let field = OwnerText.Rule(maxScalars: 2_048, maxBytes: 2_048, allowsEmpty: false)
        for (name, value) in [("target", target), ("secret", secret), ("p256dh", p256dh), ("auth", auth)] {
            if let value, let problem = OwnerText.problem(value, field) {
                throw HTTPError(.badRequest, message: "\(name): \(problem)")
            }
        }
        switch kind {
        case .email:
            let parts = target.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !target.contains(where: \.isWhitespace)
            else { throw HTTPError(.badRequest, message: "target: expected an email address") }
            guard secret == nil, p256dh == nil, auth == nil else {
                throw HTTPError(.badRequest, message: "an email channel takes only target and language")
            }
        case .webhook:
            guard let url = URL(string: target), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw HTTPError(.badRequest, message: "target: expected an http(s) URL")
            }
            guard let secret, secret.hasPrefix("whsec_"), secret.count >= 30 else {
                throw HTTPError(
                    .badRequest, message: "secret: expected a Standard Webhooks secret (\"whsec_\" and base64)")
            }
        case .webpush:
            guard let url = URL(string: target), url.scheme == "https", url.host != nil else {
                throw HTTPError(.badRequest, message: "target: expected the subscription's https endpoint")
            }
            guard p256dh != nil, auth != nil else {
                throw HTTPError(.badRequest, message: "p256dh and auth: required for webpush")
            }
        case .page: break
        }
        return AlertChannelSpec(
            kind: kind, target: target, secret: secret, p256dh: p256dh, auth: auth, language: language ?? .en)
    }
}

struct PushKeyAnswer: Encodable {
    var key: String
}

struct AlertListAnswer: Encodable {
    var openCount: Int
    var incidents: [AlertIncidentAnswer]

    enum CodingKeys: String, CodingKey {
        case openCount = "open_count"
        case incidents
    }
}

struct AlertIncidentAnswer: Encodable {
    var id: Int64
    var ruleID: Int64
    var kind: String
    var outlet: String?
    var outletName: String?
    var state: String
    var openedAt: String
    var resolvedAt: String?
    var acknowledgedAt: String?
    var snoozedUntil: String?
    var observed: String?
    var limit: String?
    var currency: String?

    init(_ record: AlertIncidentRecord) {
        id = record.id
        ruleID = record.ruleID
        kind = record.kind.rawValue
        outlet = record.outlet
        outletName = record.outletName
        state = record.state
        openedAt = JSONOutput.timestamp(record.openedAt)
        resolvedAt = record.resolvedAt.map(JSONOutput.timestamp)
        acknowledgedAt = record.acknowledgedAt.map(JSONOutput.timestamp)
        snoozedUntil = record.snoozedUntil.map(JSONOutput.timestamp)
        observed = record.observed
        limit = record.limit
        currency = record.currency
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, outlet, state, observed, limit, currency
        case ruleID = "rule_id"
        case outletName = "outlet_name"
        case openedAt = "opened_at"
        case resolvedAt = "resolved_at"
        case acknowledgedAt = "acknowledged_at"
        case snoozedUntil = "snoozed_until"
    }
}

struct AlertRuleAnswer: Encodable {
    var id: Int64
    var kind: String
    var outlet: String?
    var parameters: AlertParameters
    var enabled: Bool
    var createdAt: String

    init(_ record: AlertRuleRecord) {
        id = record.id
        kind = record.kind.rawValue
        outlet = record.outlet
        parameters = record.parameters
        enabled = record.enabled
        createdAt = JSONOutput.timestamp(record.createdAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, outlet, parameters, enabled
        case createdAt = "created_at"
    }
}

struct AlertChannelAnswer: Encodable {
    var id: Int64
    var kind: String
    var target: String
    var language: String
    var enabled: Bool
    var failing: Bool
    var failingSince: String?
    var lastError: String?

    init(_ record: AlertChannelRecord) {
        id = record.id
        kind = record.kind.rawValue
        target = record.target
        language = record.language.rawValue
        enabled = record.enabled
        failing = record.failingSince != nil
        failingSince = record.failingSince.map(JSONOutput.timestamp)
        lastError = record.lastError
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, target, language, enabled, failing
        case failingSince = "failing_since"
        case lastError = "last_error"
    }
}
