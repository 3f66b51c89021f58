import Foundation
import Telemetry

/// A firing a rule decided on, ready to record: what met (``cause``), and what comes of it (``result``,
/// ``reason``) once the outlet's state is taken into account.
public struct PlannedFiring: Sendable, Equatable {
    public var automationID: Int64
    public var kind: AutomationKind
    public var target: AutomationTarget
    /// The state to switch the outlet to (nil: nothing to switch, as for a group with nothing to shed).
    public var state: SwitchState?
    /// The instant it was due: a schedule's or timer's time, or the reading that met a power rule.
    public var dueAt: Date
    /// What met, in words: the command's `cause`.
    public var cause: String
    public var result: AutomationResult
    /// The history's reason: the cause, after why it was skipped when it was.
    public var reason: String

    /// A firing of `result` for `cause`. A rule that fires on no outlet, on a disabled one or on one its owner
    /// released is recorded as skipped, the reason first saying why (`disabled_device: …`, `not_owner: …`).
    public init(
        automationID: Int64, kind: AutomationKind, target: AutomationTarget, state: SwitchState?, dueAt: Date,
        cause: String, result: AutomationResult
    ) {
        self.automationID = automationID
        self.kind = kind
        self.target = target
        self.state = state
        self.dueAt = dueAt
        self.cause = cause
        self.result = result
        self.reason = cause
        guard result == .fired else { return }
        if target.code == nil {
            self.result = .skipped
        } else if !target.enabled {
            self.result = .skipped
            self.reason = "disabled_device: outlet \(target.code ?? "?") is disabled; \(cause)"
        } else if !target.ownerStillOwns {
            self.result = .skipped
            self.reason = "not_owner: the owner who made the rule no longer owns the outlet; \(cause)"
        }
    }

    /// What the runner reports once it is recorded.
    public func outcome(_ recorded: RecordedFiring) -> AutomationOutcome {
        AutomationOutcome(
            automationID: automationID, kind: kind, code: target.code, result: result, commandID: recorded.commandID,
            dueAt: dueAt, reason: reason)
    }
}
