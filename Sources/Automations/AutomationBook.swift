import Foundation
import Telemetry

/// What the owners' app and the CLI do with automations, through one entry point: add one (a timer `in` a while
/// counted from the database's clock, which the runners read), list them, show one, pause or resume, remove, read
/// what they did. The caller is an ``AutomationActor``: an owner sees and changes only their own automations, on
/// outlets they own; an operator all of them.
public struct AutomationBook<Store: AutomationBookStore> {
    public let store: Store

    public init(_ store: Store) {
        self.store = store
    }

    /// A rule as asked for: a timer may be due a while from now, by the database's clock.
    public enum Draft: Sendable, Equatable {
        case rule(AutomationRule)
        case timer(state: SwitchState, afterSeconds: Int)
    }

    /// Adds `draft` on outlet `code` (nil for a group limit) for `actor` and returns it as stored: nil when `actor`
    /// can no longer see it (an owner who released the outlet meanwhile). Throws ``AutomationError`` when it is
    /// refused (``AutomationBookStore/add(_:code:by:)`` says when).
    public func add(_ draft: Draft, code: String?, by actor: AutomationActor) throws -> AutomationRecord? {
        let rule: AutomationRule
        switch draft {
        case .rule(let given):
            rule = given
        case .timer(let state, let seconds):
            rule = .timer(state: state, at: try store.databaseNow().addingTimeInterval(Double(seconds)))
        }
        return try store.automation(try store.add(rule, code: code, by: actor), owner: actor.ownerID)
    }

    /// `actor`'s automations, oldest first: of outlet `code` (and the group limits it is in) when given, removed
    /// ones only with `includingRemoved`.
    public func list(code: String? = nil, for actor: AutomationActor, includingRemoved: Bool = false) throws
        -> [AutomationRecord]
    {
        try store.list(code: code, owner: actor.ownerID, includingRemoved: includingRemoved)
    }

    /// Automation `id`, or nil when there is none (or none of `actor`'s).
    public func automation(_ id: Int64, for actor: AutomationActor) throws -> AutomationRecord? {
        try store.automation(id, owner: actor.ownerID)
    }

    /// Pauses or resumes automation `id` and returns it, or nil when there is none (or none of `actor`'s). A
    /// resumed schedule counts from now.
    public func setEnabled(_ id: Int64, _ enabled: Bool, for actor: AutomationActor) throws -> AutomationRecord? {
        guard try store.setEnabled(id, enabled, owner: actor.ownerID) else { return nil }
        return try store.automation(id, owner: actor.ownerID)
    }

    /// Removes automation `id`; false when there is none (or none of `actor`'s).
    public func remove(_ id: Int64, for actor: AutomationActor) throws -> Bool {
        try store.remove(id, owner: actor.ownerID)
    }

    /// What automation `id` (every one when nil) did, newest first, at most `limit`.
    public func history(_ id: Int64?, for actor: AutomationActor, limit: Int) throws -> [AutomationFiring] {
        try store.history(id, owner: actor.ownerID, limit: limit)
    }
}

/// The SQL behind ``AutomationBook``, typed; `Storage`'s `AutomationStore` implements it. `owner` nil is an
/// operator's view (every automation).
public protocol AutomationBookStore {
    /// The database's clock: every instance and the CLI agree on "now".
    func databaseNow() throws -> Date

    /// Stores `rule` and returns its id; throws ``AutomationError`` for an invalid rule, an unknown outlet (or
    /// another owner's: `notFound`), an outlet already in a group limit, a group name in use, or an owner's outlet
    /// with ``AutomationRule/Limits/perOutletForOwners`` rules already.
    func add(_ rule: AutomationRule, code: String?, by actor: AutomationActor) throws -> Int64

    func list(code: String?, owner: Int64?, includingRemoved: Bool) throws -> [AutomationRecord]
    func automation(_ id: Int64, owner: Int64?) throws -> AutomationRecord?
    func setEnabled(_ id: Int64, _ enabled: Bool, owner: Int64?) throws -> Bool
    func remove(_ id: Int64, owner: Int64?) throws -> Bool
    func history(_ id: Int64?, owner: Int64?, limit: Int) throws -> [AutomationFiring]
}
