import Foundation

/// What the owners' app and the CLI do with alerts, through one entry point (as `AutomationBook` is for automations):
/// set and remove rules, read, acknowledge and snooze incidents, read the history, add, pause and remove channels.
/// Every call names its ``AlertScope``: an owner reaches only their own rules, incidents and channels (another
/// owner's id is ``AlertBookError/notFound(_:)``, as one that does not exist); the operator's scope reaches the
/// operator's and, through the CLI, everyone's. The values are decided here (kinds, bounds, the snooze's length);
/// the store holds typed SQL only.
public struct AlertBook<Store: AlertBookStore> {
    public let store: Store

    public init(_ store: Store) {
        self.store = store
    }

    /// The longest snooze, in seconds: 7 days.
    public static var maxSnoozeSeconds: Int { 604_800 }

    /// Sets the rule of `kind` on outlet `outlet` (nil: every outlet of the scope's owner), replacing the one there
    /// was. `operatorRule`: told on the operator's channels rather than the owner's.
    public func setRule(
        kind: String, parameters: AlertParameters, outlet: String?, in scope: AlertScope, by actor: String,
        operatorRule: Bool = false, maxRules: Int
    ) throws -> AlertRuleRecord {
        guard let kind = AlertKind(rawValue: kind) else {
            throw AlertBookError.invalid(
                "kind: expected one of \(AlertKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if case .operatorWide = scope, outlet == nil {
            throw AlertBookError.invalid("name an outlet, or an owner for all of an owner's outlets")
        }
        let rule: AlertRule
        do {
            rule = try AlertRule.validated(kind: kind, parameters: parameters, wholeFleet: outlet == nil)
        } catch {
            throw AlertBookError.invalid(error.description)
        }
        return try Self.refused(
            store.setRule(
                scope, code: outlet, rule: rule, createdBy: actor, operatorRule: operatorRule, maxRules: maxRules))
    }

    public func rules(in scope: AlertScope, outlet: String? = nil) throws -> [AlertRuleRecord] {
        try store.rules(scope, outlet: outlet)
    }

    /// Removes rule `id`; its open incidents resolve.
    public func removeRule(_ id: Int64, in scope: AlertScope) throws {
        guard try store.removeRule(scope, id: id) else { throw AlertBookError.notFound("alert rule") }
    }

    /// The open count (the page's badge) and the newest incidents.
    public func incidents(in scope: AlertScope, openOnly: Bool = false, limit: Int = 100) throws
        -> (openCount: Int, incidents: [AlertIncidentRecord])
    {
        (try store.openIncidentCount(scope), try store.incidents(scope, openOnly: openOnly, limit: limit))
    }

    public func acknowledge(_ id: Int64, in scope: AlertScope, by actor: String) throws {
        guard try store.acknowledge(scope, id: id, by: actor) else { throw AlertBookError.notFound("alert") }
    }

    /// Snoozes incident `id` for `seconds` from `now` (0 ends a snooze; at most ``maxSnoozeSeconds``).
    public func snooze(_ id: Int64, seconds: Int, now: Date = Date(), in scope: AlertScope, by actor: String) throws {
        guard (0...Self.maxSnoozeSeconds).contains(seconds) else {
            throw AlertBookError.invalid("seconds: must be within 0…\(Self.maxSnoozeSeconds)")
        }
        let until = seconds == 0 ? nil : now.addingTimeInterval(Double(seconds))
        guard try store.snooze(scope, id: id, until: until, by: actor) else { throw AlertBookError.notFound("alert") }
    }

    public func history(in scope: AlertScope, incidentID: Int64? = nil, limit: Int = 100) throws
        -> [AlertHistoryRecord]
    {
        try store.history(scope, incidentID: incidentID, limit: limit)
    }

    public func channels(in scope: AlertScope) throws -> [AlertChannelRecord] {
        try store.channels(scope)
    }

    /// Adds a channel (its target already checked by the caller against the private-address rule, which needs the
    /// network).
    public func addChannel(_ spec: AlertChannelSpec, in scope: AlertScope, maxChannels: Int) throws
        -> AlertChannelRecord
    {
        try Self.refused(store.addChannel(scope, spec, maxChannels: maxChannels))
    }

    /// Pauses (`enabled` false: no deliveries, those pending dropped) or resumes channel `id`; returns it.
    public func setChannelEnabled(_ id: Int64, _ enabled: Bool, in scope: AlertScope) throws -> AlertChannelRecord {
        guard try store.setChannelEnabled(scope, id: id, enabled: enabled),
            let channel = try store.channels(scope).first(where: { $0.id == id })
        else { throw AlertBookError.notFound("alert channel") }
        return channel
    }

    /// Removes channel `id`; its pending deliveries are dropped.
    public func removeChannel(_ id: Int64, in scope: AlertScope) throws {
        guard try store.removeChannel(scope, id: id) else { throw AlertBookError.notFound("alert channel") }
    }

    private static func refused<T>(_ result: Result<T, AlertStoreRefusal>) throws -> T {
        switch result {
        case .success(let value): return value
        case .failure(.noSuchOutlet): throw AlertBookError.notFound("outlet")
        case .failure(let refusal): throw AlertBookError.refused(refusal)
        }
    }
}

/// Why ``AlertBook`` did nothing: a value out of bounds (the reason says which), an id or outlet not in the scope
/// (whether it exists or not), or a limit or a duplicate.
public enum AlertBookError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String)
    case notFound(String)
    case refused(AlertStoreRefusal)

    public var description: String {
        switch self {
        case .invalid(let reason): reason
        case .notFound(let what): "no such \(what)"
        case .refused(let refusal): refusal.description
        }
    }
}

/// What ``AlertBook`` needs of the database: typed SQL in an owner's (or the operator's) scope, implemented by
/// Storage (`AlertSQLStore+Owner.swift`).
public protocol AlertBookStore {
    func rules(_ scope: AlertScope, outlet: String?) throws -> [AlertRuleRecord]
    func setRule(
        _ scope: AlertScope, code: String?, rule: AlertRule, createdBy: String, operatorRule: Bool, maxRules: Int
    ) throws -> Result<AlertRuleRecord, AlertStoreRefusal>
    func removeRule(_ scope: AlertScope, id: Int64) throws -> Bool
    func incidents(_ scope: AlertScope, openOnly: Bool, limit: Int) throws -> [AlertIncidentRecord]
    func openIncidentCount(_ scope: AlertScope) throws -> Int
    func acknowledge(_ scope: AlertScope, id: Int64, by: String) throws -> Bool
    func snooze(_ scope: AlertScope, id: Int64, until: Date?, by: String) throws -> Bool
    func history(_ scope: AlertScope, incidentID: Int64?, limit: Int) throws -> [AlertHistoryRecord]
    func channels(_ scope: AlertScope) throws -> [AlertChannelRecord]
    func addChannel(_ scope: AlertScope, _ spec: AlertChannelSpec, maxChannels: Int) throws
        -> Result<AlertChannelRecord, AlertStoreRefusal>
    func setChannelEnabled(_ scope: AlertScope, id: Int64, enabled: Bool) throws -> Bool
    func removeChannel(_ scope: AlertScope, id: Int64) throws -> Bool
}
