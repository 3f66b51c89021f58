/// The life of one switch command, as an explicit state machine.
///
/// ```
///            ┌──── send ────┐            ┌── confirm ──→ confirmed
/// queued ────┤              ├──→ sent ───┼── timeOut ──→ timed_out
///   │        └ (outlet offline: held)    ├── reject ───→ rejected
///   ├── expire ────→ expired             └── supersede → superseded
///   ├── reject ────→ rejected
///   └── supersede ─→ superseded
/// ```
///
/// Every transition outletd makes is asked of ``CommandStatus/applying(_:)`` first; the SQL that stores it is a
/// conditional `UPDATE … WHERE status = ANY(<the statuses the event applies to>)`, with those statuses taken from
/// ``CommandEvent/appliesTo``, so the database and this table cannot disagree and two instances cannot both make
/// the same transition.
public enum CommandStatus: String, Sendable, CaseIterable {
    /// Accepted and recorded; waiting to be sent (the outlet may be offline: then it is held).
    case queued
    /// Published to the outlet; waiting for its state report.
    case sent
    /// The outlet reported the requested state.
    case confirmed
    /// No matching state report within the confirmation timeout.
    case timedOut = "timed_out"
    /// Refused: the outlet is disabled, the request cannot be resolved, or the outlet answered it with another state.
    case rejected
    /// Held for an offline outlet longer than the expiry.
    case expired
    /// A newer command for the same outlet replaced it before it finished.
    case superseded

    /// Whether the command is finished (no event applies any more).
    public var isFinal: Bool {
        switch self {
        case .queued, .sent: false
        case .confirmed, .timedOut, .rejected, .expired, .superseded: true
        }
    }

    /// The status after `event`, or `nil` when the event does not apply in this status (the command moved on).
    public func applying(_ event: CommandEvent) -> CommandStatus? {
        switch (self, event) {
        case (.queued, .send): .sent
        case (.queued, .expire): .expired
        case (.queued, .reject), (.sent, .reject): .rejected
        case (.queued, .supersede), (.sent, .supersede): .superseded
        case (.sent, .confirm): .confirmed
        case (.sent, .timeOut): .timedOut
        default: nil
        }
    }

    /// The word published in `set/result` for entering this status: `accepted` for ``queued``, else the raw value.
    public var resultName: String {
        self == .queued ? "accepted" : rawValue
    }
}

/// Something that happens to a command.
public enum CommandEvent: String, Sendable, CaseIterable {
    /// outletd published it to the outlet.
    case send
    /// The outlet reported the requested state.
    case confirm
    /// The confirmation timeout passed after sending.
    case timeOut
    /// The expiry passed while it was held for an offline outlet.
    case expire
    /// It cannot be carried out (see ``CommandStatus/rejected``).
    case reject
    /// A newer command for the same outlet was accepted.
    case supersede

    /// The statuses in which this event applies (the guard of the conditional `UPDATE`).
    public var appliesTo: [CommandStatus] {
        CommandStatus.allCases.filter { $0.applying(self) != nil }
    }

    /// The status this event leads to.
    public var target: CommandStatus {
        switch self {
        case .send: .sent
        case .confirm: .confirmed
        case .timeOut: .timedOut
        case .expire: .expired
        case .reject: .rejected
        case .supersede: .superseded
        }
    }
}

/// How a state report bears on the outlet's pending command.
public enum StateReportDecision: Sendable, Equatable {
    /// The report confirms the command.
    case confirm
    /// The outlet answered this very command with the other state: it refused or failed.
    case reject(reason: String)
    /// Nothing to decide (nothing was sent, or an unsolicited report that may predate the command).
    case none

    /// Decides what a report means for a command in `status` that asked for `requested`, with id `commandID`.
    ///
    /// Outlets confirm asynchronously and usually without a correlation id (PROTOCOLS.md rule 8): a report of the
    /// requested state confirms; a report of the other state only rejects when it names this command (an anonymous
    /// one may have been sent before the outlet got the command), otherwise the timeout decides.
    public init(status: CommandStatus, commandID: Int64, requested: SwitchState, report: StateReport) {
        guard status == .sent else {
            self = .none
            return
        }
        if let answered = report.commandID, answered != commandID {
            self = .none
        } else if report.state == requested {
            self = .confirm
        } else if report.commandID != nil {
            self = .reject(
                reason: CommandReason(
                    .contraryState, "the outlet answered command \(commandID) with state \(report.state.rawValue)"
                ).description)
        } else {
            self = .none
        }
    }
}
