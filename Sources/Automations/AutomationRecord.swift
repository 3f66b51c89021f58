import Foundation
import Telemetry

/// An automation as `outletd automation list` and the owners' API show it.
public struct AutomationRecord: Sendable, Equatable {
    public var id: Int64
    public var rule: AutomationRule
    /// The outlet (nil for a group limit).
    public var code: String?
    public var enabled: Bool
    public var removed: Bool
    /// `operator:<user>` or `owner:<name>`.
    public var createdBy: String
    public var createdAt: Date?
    /// The next firing of a schedule or timer (nil: none).
    public var nextDueAt: Date?
    /// The zone a schedule's clock reads.
    public var timeZone: String?
    /// What it did last.
    public var lastFiring: AutomationFiring?

    public init(
        id: Int64, rule: AutomationRule, code: String?, enabled: Bool, removed: Bool, createdBy: String,
        createdAt: Date?, nextDueAt: Date?, timeZone: String?, lastFiring: AutomationFiring?
    ) {
        self.id = id
        self.rule = rule
        self.code = code
        self.enabled = enabled
        self.removed = removed
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.nextDueAt = nextDueAt
        self.timeZone = timeZone
        self.lastFiring = lastFiring
    }
}

/// One row of `automation history`.
public struct AutomationFiring: Sendable, Equatable {
    public var id: Int64
    public var automationID: Int64
    public var kind: AutomationKind
    public var code: String?
    public var dueAt: Date
    public var recordedAt: Date
    public var result: AutomationResult
    public var state: SwitchState?
    public var commandID: Int64?
    /// The command's status now (`confirmed`, `timed_out`, …).
    public var commandStatus: String?
    public var reason: String

    public init(
        id: Int64, automationID: Int64, kind: AutomationKind, code: String?, dueAt: Date, recordedAt: Date,
        result: AutomationResult, state: SwitchState?, commandID: Int64?, commandStatus: String?, reason: String
    ) {
        self.id = id
        self.automationID = automationID
        self.kind = kind
        self.code = code
        self.dueAt = dueAt
        self.recordedAt = recordedAt
        self.result = result
        self.state = state
        self.commandID = commandID
        self.commandStatus = commandStatus
        self.reason = reason
    }
}

/// What an owner's outlet does next by itself and what it did last: the owners' app's outlet detail.
public struct OutletAutomationGlance: Sendable, Equatable {
    /// The owner's enabled schedule or timer due soonest (its `nextDueAt` set), or nil.
    public var next: AutomationRecord?
    /// The newest firing of any of the owner's automations of the outlet (not removed), or nil.
    public var last: AutomationFiring?
    /// The zone the outlet's clock reads (IANA name).
    public var timeZone: String

    public init(next: AutomationRecord?, last: AutomationFiring?, timeZone: String) {
        self.next = next
        self.last = last
        self.timeZone = timeZone
    }
}

/// A refused automation request, said so an operator or owner can fix it.
public struct AutomationError: Error, Sendable, CustomStringConvertible, Equatable {
    public var message: String
    /// Whether the thing named does not exist (or is someone else's): the API's 404.
    public var notFound: Bool

    public init(_ message: String, notFound: Bool = false) {
        self.message = message
        self.notFound = notFound
    }

    public var description: String { message }
}

/// Who asks: an operator (the CLI, any outlet) or an owner of the app (their outlets only, not group limits).
public enum AutomationActor: Sendable, Equatable {
    /// An operator, by their login name (`$USER`).
    case operatorUser(name: String)
    case owner(id: Int64, name: String)

    public var createdBy: String {
        switch self {
        case .operatorUser(let name): "operator:\(name)"
        case .owner(_, let name): "owner:\(name)"
        }
    }

    public var ownerID: Int64? {
        if case .owner(let id, _) = self { return id }
        return nil
    }
}

/// What one evaluation recorded: a row of `automation_firings`.
public struct AutomationOutcome: Sendable, Equatable {
    public var automationID: Int64
    public var kind: AutomationKind
    public var code: String?
    public var result: AutomationResult
    public var commandID: Int64?
    public var dueAt: Date
    public var reason: String

    public init(
        automationID: Int64, kind: AutomationKind, code: String?, result: AutomationResult, commandID: Int64?,
        dueAt: Date, reason: String
    ) {
        self.automationID = automationID
        self.kind = kind
        self.code = code
        self.result = result
        self.commandID = commandID
        self.dueAt = dueAt
        self.reason = reason
    }
}
