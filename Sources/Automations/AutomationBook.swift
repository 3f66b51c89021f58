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
    /// can no longer see it (an owner who released the outlet meanwhile). A schedule's first firing is the first
    /// after now (one made after today's time waits for its next day).
    ///
    /// Throws ``AutomationError`` for an invalid rule, a group limit asked for by an owner, an unknown outlet (or
    /// another owner's: `notFound`), an outlet already in a group limit, a group name in use, or an owner's outlet
    /// with ``AutomationRule/Limits/perOutletForOwners`` rules made in the app already (spent timers and the
    /// operator's rules do not count). All of it is decided in one transaction that holds the outlet's row, which a
    /// release takes first (`OwnerStore.release`).
    public func add(_ draft: Draft, code: String?, by actor: AutomationActor) throws -> AutomationRecord? {
        let isGroup = if case .rule(.groupLimit) = draft { true } else { false }
        let id = try store.withNewRule(on: isGroup ? nil : code) { transaction, now, outlet -> Int64 in
            let rule: AutomationRule
            switch draft {
            case .rule(let given): rule = given
            case .timer(let state, let seconds):
                rule = .timer(state: state, at: now.addingTimeInterval(Double(seconds)))
            }
            if let problem = rule.problem(now: now) { throw AutomationError(problem) }
            var nextDue: Date?
            switch rule {
            case .schedule(_, let minute, let days):
                guard let zone = try Self.outlet(outlet, code, for: actor, transaction).zone else {
                    throw AutomationError("the outlet's time zone is not known to outletd")
                }
                nextDue = ScheduleClock.next(after: now, minute: minute, days: days, in: zone)
            case .timer(_, let at):
                _ = try Self.outlet(outlet, code, for: actor, transaction)
                nextDue = at
            case .overPower, .idle:
                _ = try Self.outlet(outlet, code, for: actor, transaction)
            case .groupLimit(let group):
                guard actor.ownerID == nil else { throw AutomationError("group limits are for operators") }
                if let other = try transaction.groupLimit(named: group.name) {
                    throw AutomationError(
                        "a group limit named \(group.name) exists (automation \(other)); remove it first")
                }
            }
            let id = try transaction.insert(rule, deviceID: outlet?.deviceID, nextDueAt: nextDue, by: actor)
            if case .groupLimit(let group) = rule {
                for member in try transaction.groupMembership(group.outlets) {
                    guard member.registered else { throw AutomationError("no outlet \(member.code) is registered") }
                    if let other = member.groupName {
                        throw AutomationError(
                            "outlet \(member.code) is already in group limit \(other); an outlet is in one at most")
                    }
                }
                try transaction.insertMembers(automationID: id, codes: group.outlets)
            }
            return id
        }
        return try store.automation(id, owner: actor.ownerID)
    }

    /// The outlet a rule names, when `actor` may give it rules; an owner's outlet may take only so many.
    private static func outlet(
        _ outlet: NewRuleOutlet?, _ code: String?, for actor: AutomationActor, _ transaction: Store
    ) throws -> NewRuleOutlet {
        guard let code else { throw AutomationError("name the outlet") }
        guard let outlet, actor.ownerID == nil || outlet.ownerID == actor.ownerID else {
            throw AutomationError("no outlet \(OwnerText.inert(code)) is registered", notFound: true)
        }
        if actor.ownerID != nil,
            try transaction.ownerRuleCount(deviceID: outlet.deviceID) >= AutomationRule.Limits.perOutletForOwners
        {
            throw AutomationError(
                "an outlet has at most \(AutomationRule.Limits.perOutletForOwners) automations; remove one first")
        }
        return outlet
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
    /// resumed schedule counts from now: what was due while it was paused does not fire.
    public func setEnabled(_ id: Int64, _ enabled: Bool, for actor: AutomationActor) throws -> AutomationRecord? {
        let found = try store.withAutomation(id, owner: actor.ownerID) { transaction, record, now -> Bool in
            guard let record else { return false }
            var nextDue = record.nextDueAt
            if enabled, !record.enabled, case .schedule(_, let minute, let days) = record.rule,
                let zone = TimeZone(identifier: record.timeZone ?? "UTC")
            {
                nextDue = ScheduleClock.next(after: now, minute: minute, days: days, in: zone)
            }
            try transaction.saveEnabled(id, enabled, nextDueAt: nextDue)
            return true
        }
        return found ? try store.automation(id, owner: actor.ownerID) : nil
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
/// operator's view (every automation). The `with…` methods are one transaction each, `body` given the store in it.
public protocol AutomationBookStore {
    /// Runs `body` in one transaction with the database's clock and outlet `code` (nil: none named, or none
    /// registered), its row locked for the transaction.
    func withNewRule<T>(on code: String?, _ body: (Self, Date, NewRuleOutlet?) throws -> T) throws -> T
    /// Rules an owner made in the app on outlet `deviceID`, not removed and not spent.
    func ownerRuleCount(deviceID: Int64) throws -> Int
    /// The group limit (not removed) named `name`, if any.
    func groupLimit(named name: String) throws -> Int64?
    /// Whether each of `codes` is registered, and the group limit it is in.
    func groupMembership(_ codes: [String]) throws -> [(code: String, registered: Bool, groupName: String?)]
    /// Stores `rule` as `actor`'s and returns its id.
    func insert(_ rule: AutomationRule, deviceID: Int64?, nextDueAt: Date?, by actor: AutomationActor) throws -> Int64
    /// Makes `codes` (least important first) the outlets of group limit `automationID`.
    func insertMembers(automationID: Int64, codes: [String]) throws

    /// Runs `body` in one transaction with automation `id` (nil: none, or none of `owner`'s) and the database's clock.
    func withAutomation<T>(_ id: Int64, owner: Int64?, _ body: (Self, AutomationRecord?, Date) throws -> T) throws
        -> T
    func saveEnabled(_ id: Int64, _ enabled: Bool, nextDueAt: Date?) throws

    func list(code: String?, owner: Int64?, includingRemoved: Bool) throws -> [AutomationRecord]
    func automation(_ id: Int64, owner: Int64?) throws -> AutomationRecord?
    func remove(_ id: Int64, owner: Int64?) throws -> Bool
    func history(_ id: Int64?, owner: Int64?, limit: Int) throws -> [AutomationFiring]
}

/// The outlet a new rule names, as its row says.
public struct NewRuleOutlet: Sendable, Equatable {
    public var deviceID: Int64
    /// The zone its clock reads (nil: one outletd does not know).
    public var zone: TimeZone?
    public var ownerID: Int64?

    public init(deviceID: Int64, zone: TimeZone?, ownerID: Int64?) {
        self.deviceID = deviceID
        self.zone = zone
        self.ownerID = ownerID
    }
}
