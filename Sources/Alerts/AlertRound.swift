import Foundation

/// One rule on one outlet (or, for a budget over all of an owner's outlets, on the owner: `deviceID` nil).
public struct AlertSubject: Hashable, Sendable {
    public var ruleID: Int64
    public var deviceID: Int32?

    public init(ruleID: Int64, deviceID: Int32?) {
        self.ruleID = ruleID
        self.deviceID = deviceID
    }
}

/// What the store's set-based evaluation found for one subject in a round: only subjects whose condition is met
/// or that have a watch (something pending or open) come back, so a quiet fleet is a short answer.
public struct AlertObservation: Sendable, Equatable {
    public var subject: AlertSubject
    public var rule: AlertRule
    /// Whether the condition holds now, and since when the data says it began (nil: not known).
    public var met: Bool
    public var since: Date?
    /// The figure that was compared, as text for messages (W, seconds, money), and the currency of money.
    public var observed: String?
    public var currency: String?
    /// What outletd remembered from the round before.
    public var watch: AlertWatch?

    public init(
        subject: AlertSubject, rule: AlertRule, met: Bool, since: Date? = nil, observed: String? = nil,
        currency: String? = nil, watch: AlertWatch? = nil
    ) {
        self.subject = subject
        self.rule = rule
        self.met = met
        self.since = since
        self.observed = observed
        self.currency = currency
        self.watch = watch
    }
}

/// What a round decided for one subject: the watch to keep (nil: delete it) and the incident action.
public struct AlertDecision: Sendable, Equatable {
    public var observation: AlertObservation
    public var watch: AlertWatch?
    public var action: IncidentMachine.Action
}

/// A round of evaluation, pure: observations in, the decisions that change something out.
public enum AlertRound {
    /// The decisions for `observations` at `now`; subjects whose watch and incident stay as they were are left out.
    public static func decide(_ observations: [AlertObservation], now: Date) -> [AlertDecision] {
        observations.compactMap { observation in
            let (watch, action) = IncidentMachine.step(
                observation.watch, met: observation.met, since: observation.since, now: now,
                holdSeconds: observation.rule.holdSeconds, resolveAfterSeconds: observation.rule.resolveAfterSeconds)
            if action == .none && watch == observation.watch { return nil }
            return AlertDecision(observation: observation, watch: watch, action: action)
        }
    }
}

/// What a round did, for logs and metrics.
public struct AlertRoundSummary: Sendable, Equatable {
    /// Subjects the evaluation returned (met or watched).
    public var observed: Int
    public var opened: Int
    public var resolved: Int
    /// Deliveries put in the outbox.
    public var queued: Int

    public init(observed: Int = 0, opened: Int = 0, resolved: Int = 0, queued: Int = 0) {
        self.observed = observed
        self.opened = opened
        self.resolved = resolved
        self.queued = queued
    }
}
