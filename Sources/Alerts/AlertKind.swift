/// What an alert watches (docs/ALERTS.md). Each kind is a rule on one outlet, or on all of an owner's outlets.
public enum AlertKind: String, CaseIterable, Sendable, Codable, Comparable {
    /// No reading for `after` seconds, or the outlet said it is offline (MQTT will, Zigbee2MQTT/ESPHome availability).
    case offline
    /// The outlet has been on (or above `watts`) for longer than `for` seconds.
    case onTooLong = "on-too-long"
    /// The outlet's standby power (the figure its detail shows) is above `watts`.
    case standby
    /// The owner's projected month cost (all outlets, or one) is above `amount`.
    case budget
    /// A switch asked by the owner or an automation was not confirmed (timed out, rejected, expired).
    case commandFailed = "command-failed"

    /// Whether the kind is evaluated only every slow round (`alerts.slow_interval_seconds`): its figures are
    /// days or a month of data, which change slowly and cost more to compute.
    public var isSlow: Bool { self == .standby || self == .budget }

    public static func < (lhs: AlertKind, rhs: AlertKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
