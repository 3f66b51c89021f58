import Foundation

/// One delivery of the outbox, claimed for an attempt: the channel to use and what to say.
public struct AlertDeliveryJob: Sendable, Equatable {
    public var id: Int64
    /// Attempts so far, this one included.
    public var attempts: Int
    public var incidentID: Int64
    public var channelID: Int64
    public var channel: AlertChannelKind
    /// The email address, the webhook's URL or the push subscription's endpoint.
    public var target: String
    /// The webhook's signing secret; the push subscription's keys. Never logged, never answered.
    public var secret: String?
    public var p256dh: String?
    public var auth: String?
    public var language: AlertLanguage
    public var facts: AlertFacts
    /// When the event happened (the incident opened or resolved).
    public var occurredAt: Date

    public init(
        id: Int64, attempts: Int, incidentID: Int64, channelID: Int64, channel: AlertChannelKind, target: String,
        secret: String? = nil, p256dh: String? = nil, auth: String? = nil, language: AlertLanguage,
        facts: AlertFacts, occurredAt: Date
    ) {
        self.id = id
        self.attempts = attempts
        self.incidentID = incidentID
        self.channelID = channelID
        self.channel = channel
        self.target = target
        self.secret = secret
        self.p256dh = p256dh
        self.auth = auth
        self.language = language
        self.facts = facts
        self.occurredAt = occurredAt
    }

    /// The message in the channel's language.
    public var message: AlertMessage { AlertText.message(facts, language: language) }
}

/// How an attempt ended.
public enum AlertDeliveryOutcome: Sendable, Equatable {
    case sent
    /// Failed; tried again at `at`.
    case retry(at: Date, error: String)
    /// Failed for good.
    case failed(error: String)
}

/// Why a sender failed: worth another attempt (a timeout, a 5xx, 429) or not (a 4xx, an address refused).
public enum AlertSendFailure: Error, Sendable, Equatable {
    case retryable(String)
    case permanent(String)
}

/// A channel's way out (Web Push, webhooks, email): the daemon wires the senders of `AlertChannels` here.
public protocol AlertSender: Sendable {
    func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure)
}

/// What alerts need of the database, in the feature's words; Storage implements it with typed SQL
/// (`Storage/Alerts`), and the tests of the rules need none of it.
public protocol AlertStore {
    /// One round for `kinds`, in one transaction taken by one instance at a time: the store reads every subject
    /// whose condition is met or that has a watch (set-based, a statement per kind, never one per outlet), hands
    /// them to `decide` with the database's clock, and writes back the watches, the incidents opened and resolved,
    /// their events and the outbox's deliveries. Nil when another instance is doing the round.
    func evaluateRound(
        kinds: Set<AlertKind>, instanceID: String, decide: ([AlertObservation], Date) -> [AlertDecision]
    ) throws -> AlertRoundSummary?

    /// Claims up to `limit` deliveries that are due, each leased for `leaseSeconds` (an instance killed mid-send
    /// leaves it to be tried again when the lease ends), with their attempt counted.
    func claimDeliveries(limit: Int, leaseSeconds: Double) throws -> [AlertDeliveryJob]

    /// Records how an attempt ended (and, for a failure, marks its channel failing; a success clears that).
    func finishDelivery(_ job: AlertDeliveryJob, outcome: AlertDeliveryOutcome) throws

    /// Gives claimed deliveries back unsent, their attempt not counted: due again at once.
    func returnClaims(_ jobs: [AlertDeliveryJob]) throws

    /// Those of `jobs` still to send: pending, their channel neither paused nor removed since the claim.
    func stillToSend(_ jobs: [AlertDeliveryJob]) throws -> [AlertDeliveryJob]
}
