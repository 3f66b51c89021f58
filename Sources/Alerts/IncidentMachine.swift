import Foundation

/// What outletd remembers of one rule on one outlet between rounds, when anything: the condition has been met
/// since `metSince` (an incident may not be open yet: on-too-long waits `for`), or an incident is open and, when
/// `clearSince` is set, its condition has been clear since then. No watch at all means quiet: nothing met, nothing
/// open.
public struct AlertWatch: Sendable, Equatable {
    /// Since when the condition has been met without a break (nil while it is clear).
    public var metSince: Date?
    /// The open incident's id, nil while none is open.
    public var incidentID: Int64?
    /// While an incident is open: since when its condition has been clear (nil while it is met).
    public var clearSince: Date?

    public init(metSince: Date? = nil, incidentID: Int64? = nil, clearSince: Date? = nil) {
        self.metSince = metSince
        self.incidentID = incidentID
        self.clearSince = clearSince
    }

    /// Whether an incident is open.
    public var isOpen: Bool { incidentID != nil }
}

/// The incident state machine (pure, tested with tables): a rule's condition, looked at once a round, becomes at
/// most one incident per episode. An incident opens once the condition has been met for the rule's hold time
/// (on-too-long's `for`; 0 for the others) and resolves only once it has been clear for the rule's
/// `resolve_after` without a break: a condition that comes back within that time belongs to the same incident,
/// so an outlet bouncing on and off line every 20 s is one incident, not a hundred.
public enum IncidentMachine {
    /// What a step asks the store to do.
    public enum Action: Sendable, Equatable {
        case none
        /// Open an incident, the condition met since `since`.
        case open(since: Date)
        /// Resolve the open incident, its condition clear since `clearSince`.
        case resolve(incidentID: Int64, clearSince: Date)
    }

    /// One look at the condition at `now`. `met` is whether it holds; `since` is when the data says it began (an
    /// outlet's last reading plus `after`, a command's failure), nil when only this look knows it. Returns the
    /// watch to keep (nil: forget it, all quiet) and what to do. After `.open`, the caller stores the new
    /// incident's id in the returned watch.
    public static func step(
        _ watch: AlertWatch?, met: Bool, since: Date? = nil, now: Date, holdSeconds: Int, resolveAfterSeconds: Int
    ) -> (watch: AlertWatch?, action: Action) {
        var next = watch ?? AlertWatch()
        if met {
            let metSince = next.metSince ?? min(since ?? now, now)
            next.metSince = metSince
            next.clearSince = nil
            if next.isOpen { return (next, .none) }
            if now.timeIntervalSince(metSince) >= Double(holdSeconds) { return (next, .open(since: metSince)) }
            return (next, .none)
        }
        next.metSince = nil
        guard let incidentID = next.incidentID else { return (nil, .none) }
        let clearSince = next.clearSince ?? now
        if now.timeIntervalSince(clearSince) >= Double(resolveAfterSeconds) {
            return (nil, .resolve(incidentID: incidentID, clearSince: clearSince))
        }
        next.clearSince = clearSince
        return (next, .none)
    }
}
