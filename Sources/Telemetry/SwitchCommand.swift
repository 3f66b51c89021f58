/// The on/off state of an outlet's relay.
public enum SwitchState: String, Sendable, CaseIterable, Codable {
    case on
    case off

    /// The other state.
    public var toggled: SwitchState { self == .on ? .off : .on }

    /// `true` for ``on``.
    public var isOn: Bool { self == .on }

    /// The state `isOn` names.
    public init(isOn: Bool) {
        self = isOn ? .on : .off
    }
}

/// What an operator asks for: a state, or the opposite of the outlet's current one.
public enum SwitchRequestValue: String, Sendable, CaseIterable {
    case on
    case off
    /// Resolved when the request is accepted: the opposite of the desired state (the latest accepted request), else
    /// of the reported state. Rejected when neither is known.
    case toggle
}

/// An operator's request, as parsed from `<prefix>/<code>/set` (or built by the CLI).
public struct SwitchRequest: Sendable, Equatable {
    public var value: SwitchRequestValue
    /// The operator's own correlation id, echoed on every result (at most 128 characters).
    public var requestID: String?
    /// Who asked (free text, at most 128 characters), stored in the audit trail.
    public var requestedBy: String?

    public init(value: SwitchRequestValue, requestID: String? = nil, requestedBy: String? = nil) {
        self.value = value
        self.requestID = requestID
        self.requestedBy = requestedBy
    }
}

/// What an outlet said about its relay on `<prefix>/<code>/state`.
public struct StateReport: Sendable, Equatable {
    public var state: SwitchState
    /// The command this report answers, when the firmware names it (the native protocol may; most firmwares do not).
    public var commandID: Int64?

    public init(state: SwitchState, commandID: Int64? = nil) {
        self.state = state
        self.commandID = commandID
    }
}

/// Where a command came from.
public enum CommandSource: String, Sendable, CaseIterable {
    case mqtt
    case sql
    case cli
    /// The owner's app (`PUT /api/v1/outlets/{code}/state`).
    case app
    /// A rule that met (docs/AUTOMATIONS.md); `requested_by` is `automation:<id>`.
    case automation
}
