import Foundation

/// Where an owner (or the operator) is told: each channel is opted into and can be disabled.
public enum AlertChannelKind: String, CaseIterable, Sendable, Codable {
    /// The owners' page: its alerts list and badge, over the live stream. Nothing leaves outletd.
    case page
    /// Web Push (RFC 8030, VAPID RFC 8292, aes128gcm RFC 8291) to one of the owner's browsers.
    case webpush
    /// An HTTPS POST signed as Standard Webhooks 1.0.
    case webhook
    /// A plain-text email through the operator's SMTP relay.
    case email
}

/// The language of a channel's messages.
public enum AlertLanguage: String, CaseIterable, Sendable, Codable {
    case en
    case ptBR = "pt-BR"
}

/// What happened to an incident that is told on channels.
public enum AlertEventKind: String, CaseIterable, Sendable, Codable {
    case opened
    case resolved
    case acknowledged
    case snoozed
}

/// The outbox's rules (pure): when a delivery that failed is tried again, and when it stops trying.
public enum AlertOutbox {
    /// At most this many attempts; then the delivery is `failed` for good.
    public static let maxAttempts = 8

    /// The wait after attempt number `attempts` (from 1) failed: 30 s, doubling, at most an hour.
    public static func retryDelaySeconds(afterAttempt attempts: Int) -> Double {
        let exponent = max(0, min(attempts - 1, 20))
        return min(30 * Double(1 << exponent), 3_600)
    }

    /// What becomes of a delivery whose attempt number `attempts` failed: retried at a time, or failed for good.
    public static func afterFailure(attempts: Int, retryable: Bool, now: Date) -> Date? {
        guard retryable, attempts < maxAttempts else { return nil }
        return now.addingTimeInterval(retryDelaySeconds(afterAttempt: attempts))
    }
}
