import Foundation

// The alert channels that leave outletd: Web Push, webhooks and email (docs/ALERT-CHANNELS.md).
//
// The contract with the alerts core (Sources/Alerts and its store): the core turns an alert event into a `Notice`
// in the owner's language and hands it to one sender per channel target; the sender delivers it once, within its
// timeout, or throws `DeliveryError.retryable` (try again later, with backoff) or `.permanent` (stop trying: the
// subscription is gone, the address refused, the URL not allowed). A sender never retries by itself and never logs a
// secret.
//
//     public struct Notice: Sendable, Equatable
//         id: String            unique per (event, channel target): webhook-id, Message-ID, push Topic seed
//         subject: String       one line, in the owner's language
//         text: String          plain text, in the owner's language
//         url: String?          a link to the page
//         json: [UInt8]         the event as JSON (the webhook's body; the push payload's "event")
//         occurredAt: Date
//     public enum DeliveryError: Error, Sendable, Equatable { case retryable(String), permanent(String) }
//         var reason: String; var isRetryable: Bool
//
//     public struct WebPushSubscription: Sendable, Codable, Equatable    endpoint, p256dh, auth (base64url)
//         func validated() throws(DeliveryError) -> WebPushSubscription  (the API checks a browser's subscription)
//     public struct VAPIDKey: Sendable
//         static func loadOrCreate(path: String) throws -> VAPIDKey     (PEM, mode 0600, created once)
//         init(pemRepresentation: String) throws; static func generate() -> VAPIDKey
//         var publicKeyBase64URL: String                                 (the page's applicationServerKey)
//     public struct WebPushSender: Sendable
//         init(key: VAPIDKey, subject: String, http: HTTPClient, allowPrivate: Bool, timeout: Duration = 10 s)
//         func send(_ n: Notice, to s: WebPushSubscription, ttl: Int, urgency: WebPushUrgency = .normal)
//             async throws(DeliveryError)
//         static func payload(for n: Notice) -> [UInt8]                  (what the service worker decrypts)
//     public struct WebhookSender: Sendable
//         init(http: HTTPClient, allowPrivate: Bool, timeout: Duration = 10 s)
//         static func newSecret() -> String                              ("whsec_" + base64 of 32 random bytes)
//         static func isValidSecret(_ secret: String) -> Bool
//         func send(_ n: Notice, to url: String, secret: String) async throws(DeliveryError)
//         static func signature(id:timestamp:body:secret:) throws(DeliveryError) -> String   ("v1,<base64>")
//     public struct SMTPSettings: Sendable, Equatable
//         init(host:, port: 587, starttls: true, username: nil, password: nil, from:, heloName: host name,
//              timeout: 30 s, trustRootsFile: nil)        (STARTTLS required when true; AUTH only over TLS)
//     public struct MailSender: Sendable
//         init(settings: SMTPSettings, eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton)
//         func send(_ n: Notice, to address: String) async throws(DeliveryError)
//         static func isValidAddress(_ address: String) -> Bool
//     public enum EndpointGuard
//         static func check(url: String, allowPrivate: Bool) async throws(DeliveryError)
//         static func resolve(url: String, allowPrivate: Bool) async throws(DeliveryError) -> ResolvedEndpoint
//             (every address the host has now, each checked; `pinned`, the one a request connects to)
//         static func isPublic(_ address: IPAddress) -> Bool
//
// Every HTTP request goes out on a client of its own (on the given client's event loops, trusting the system's roots)
// that follows no redirect and connects only to the address `EndpointGuard` checked at send time, so a name that
// resolves to a public address when the owner saves it and to 127.0.0.1 later (DNS rebinding) is refused then too.

/// One message about one alert event, for one channel target, in the owner's language.
public struct Notice: Sendable, Equatable {
    /// Unique per (event, channel target): the webhook's `webhook-id`, the seed of the email's `Message-ID` and of the
    /// push message's `Topic`. A receiver that sees the same id twice has seen the same message twice.
    public var id: String
    /// One line (no CR or LF), in the owner's language.
    public var subject: String
    /// The plain-text body, in the owner's language.
    public var text: String
    /// A link to the alert on the owners' page.
    public var url: String?
    /// The event as JSON: a webhook's body as is, a push message's `event`.
    public var json: [UInt8]
    /// When the event happened (an email's `Date`).
    public var occurredAt: Date

    public init(id: String, subject: String, text: String, url: String?, json: [UInt8], occurredAt: Date) {
        self.id = id
        self.subject = subject
        self.text = text
        self.url = url
        self.json = json
        self.occurredAt = occurredAt
    }
}

/// Why a delivery did not happen, and whether trying again later may help.
public enum DeliveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Try again later (timeouts, refused connections, HTTP 429 and 5xx, SMTP 4xx).
    case retryable(String)
    /// Trying again cannot help (a push subscription gone, an address or URL refused, SMTP 5xx, HTTP 4xx).
    case permanent(String)

    /// The reason, without secrets (it is shown to the channel's owner and logged).
    public var reason: String {
        switch self {
        case .retryable(let reason), .permanent(let reason): reason
        }
    }

    public var isRetryable: Bool {
        if case .retryable = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .retryable(let reason): "retryable: \(reason)"
        case .permanent(let reason): "permanent: \(reason)"
        }
    }
}
