import Foundation

/// Whose alerts: an owner's (their rules, incidents and channels only) or the operator's (everything; the CLI).
public enum AlertScope: Sendable, Equatable {
    case owner(Int64)
    case operatorWide
}

/// A rule as the API and the CLI show it.
public struct AlertRuleRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var kind: AlertKind
    /// The outlet's code; nil: all the owner's outlets.
    public var outlet: String?
    /// The owner's name; nil: an operator's rule.
    public var owner: String?
    public var parameters: AlertParameters
    public var enabled: Bool
    public var createdBy: String
    public var createdAt: Date

    public init(
        id: Int64, kind: AlertKind, outlet: String?, owner: String?, parameters: AlertParameters, enabled: Bool,
        createdBy: String, createdAt: Date
    ) {
        self.id = id
        self.kind = kind
        self.outlet = outlet
        self.owner = owner
        self.parameters = parameters
        self.enabled = enabled
        self.createdBy = createdBy
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, outlet, owner, parameters, enabled
        case createdBy = "created_by"
        case createdAt = "created_at"
    }
}

/// An incident as the page, the API and the CLI show it.
public struct AlertIncidentRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var ruleID: Int64
    public var kind: AlertKind
    public var outlet: String?
    public var outletName: String?
    public var state: String
    public var openedAt: Date
    public var resolvedAt: Date?
    public var acknowledgedAt: Date?
    public var snoozedUntil: Date?
    public var observed: String?
    public var limit: String?
    public var currency: String?

    public init(
        id: Int64, ruleID: Int64, kind: AlertKind, outlet: String?, outletName: String?, state: String,
        openedAt: Date, resolvedAt: Date?, acknowledgedAt: Date?, snoozedUntil: Date?, observed: String?,
        limit: String?, currency: String?
    ) {
        self.id = id
        self.ruleID = ruleID
        self.kind = kind
        self.outlet = outlet
        self.outletName = outletName
        self.state = state
        self.openedAt = openedAt
        self.resolvedAt = resolvedAt
        self.acknowledgedAt = acknowledgedAt
        self.snoozedUntil = snoozedUntil
        self.observed = observed
        self.limit = limit
        self.currency = currency
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

/// A channel as its owner sees it: never its secret or its push keys.
public struct AlertChannelRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var kind: AlertChannelKind
    /// The email address or the webhook's URL; for Web Push the endpoint's origin only.
    public var target: String
    public var language: AlertLanguage
    public var enabled: Bool
    /// Set while the channel fails: since when, and the last error.
    public var failingSince: Date?
    public var lastError: String?
    public var lastSuccessAt: Date?

    public init(
        id: Int64, kind: AlertChannelKind, target: String, language: AlertLanguage, enabled: Bool,
        failingSince: Date?, lastError: String?, lastSuccessAt: Date?
    ) {
        self.id = id
        self.kind = kind
        self.target = target
        self.language = language
        self.enabled = enabled
        self.failingSince = failingSince
        self.lastError = lastError
        self.lastSuccessAt = lastSuccessAt
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, target, language, enabled
        case failingSince = "failing_since"
        case lastError = "last_error"
        case lastSuccessAt = "last_success_at"
    }
}

/// One line of `alert_history`.
public struct AlertHistoryRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var at: Date
    public var event: String
    public var incidentID: Int64
    public var kind: AlertKind
    public var outlet: String?
    public var owner: String?
    public var channel: String?
    public var detail: String?

    public init(
        id: Int64, at: Date, event: String, incidentID: Int64, kind: AlertKind, outlet: String?, owner: String?,
        channel: String?, detail: String?
    ) {
        self.id = id
        self.at = at
        self.event = event
        self.incidentID = incidentID
        self.kind = kind
        self.outlet = outlet
        self.owner = owner
        self.channel = channel
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case id, at, event, kind, outlet, owner, channel, detail
        case incidentID = "incident_id"
    }
}

/// A new channel, checked by its caller: the target's form for its kind, the webhook's address by the endpoint
/// guard.
public struct AlertChannelSpec: Sendable, Equatable {
    public var kind: AlertChannelKind
    public var target: String
    public var secret: String?
    public var p256dh: String?
    public var auth: String?
    public var language: AlertLanguage

    public init(
        kind: AlertChannelKind, target: String, secret: String? = nil, p256dh: String? = nil, auth: String? = nil,
        language: AlertLanguage = .en
    ) {
        self.kind = kind
        self.target = target
        self.secret = secret
        self.p256dh = p256dh
        self.auth = auth
        self.language = language
    }
}

/// Why a change was refused by the store.
public enum AlertStoreRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No such outlet of this owner (or no such outlet at all): the API answers 404.
    case noSuchOutlet
    /// The owner has `limit` rules, or channels, already.
    case tooMany(what: String, limit: Int)
    /// The same channel exists already.
    case duplicateChannel

    public var description: String {
        switch self {
        case .noSuchOutlet: "no such outlet"
        case .tooMany(let what, let limit): "at most \(limit) \(what) per owner"
        case .duplicateChannel: "that channel exists already"
        }
    }
}
