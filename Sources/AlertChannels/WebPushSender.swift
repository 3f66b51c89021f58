import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// A browser's push subscription, as the page's service worker reports it (`PushSubscription.toJSON()`: the endpoint
/// and the keys `p256dh` and `auth`, base64url).
public struct WebPushSubscription: Sendable, Codable, Equatable {
    /// The push service's URL for this browser.
    public var endpoint: String
    /// The browser's P-256 public key, uncompressed (65 bytes), base64url.
    public var p256dh: String
    /// The browser's authentication secret (16 bytes), base64url.
    public var auth: String

    public init(endpoint: String, p256dh: String, auth: String) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The subscription if it is well formed (an http(s) endpoint of at most 2,048 bytes, a P-256 point, a 16-byte
    /// secret); `.permanent` with the reason otherwise. It says nothing of where the endpoint points:
    /// `EndpointGuard` judges that when a message is sent.
    public func validated() throws(DeliveryError) -> WebPushSubscription {
        _ = try EndpointGuard.parse(endpoint)
        _ = try keys()
        return self
    }

    /// The decoded keys: the public key and the auth secret.
    func keys() throws(DeliveryError) -> (publicKey: [UInt8], authSecret: [UInt8]) {
        guard let publicKey = Base64URL.decode(p256dh), publicKey.count == 65, publicKey.first == 4,
            (try? P256.KeyAgreement.PublicKey(x963Representation: publicKey)) != nil
        else { throw .permanent("p256dh is not an uncompressed P-256 public key in base64url") }
        guard let secret = Base64URL.decode(auth), secret.count == 16 else {
            throw .permanent("auth is not 16 bytes in base64url")
        }
        return (publicKey, secret)
    }
}

/// How soon the push service should wake the browser for a message (RFC 8030 §5.3).
public enum WebPushUrgency: String, Sendable, CaseIterable {
    case veryLow = "very-low"
    case low
    case normal
    case high
}

/// Sends notices to browsers through their push services: RFC 8030 with VAPID (RFC 8292) and `aes128gcm` (RFC 8291).
///
/// The request: `POST <endpoint>` with `TTL`, `Content-Encoding: aes128gcm`, `Content-Type: application/octet-stream`,
/// `Urgency`, `Topic` (from the notice's id, so a retried message replaces its undelivered twin) and
/// `Authorization: vapid t=<JWT>, k=<public key>`; the body is ``payload(for:)`` encrypted for the browser.
/// A 2xx answer is delivered; 404 and 410 say the subscription is gone, and other 4xx (400, 403 a key mismatch, 413
/// too large) cannot be fixed by retrying: `.permanent`; 429, 5xx and no answer within the timeout: `.retryable`.
public struct WebPushSender: Sendable {
    public let key: VAPIDKey
    /// The VAPID `sub` claim: how the push service's operator reaches ours (`mailto:` or `https:`).
    public let subject: String
    let eventLoopGroup: any EventLoopGroup
    let allowPrivate: Bool
    let timeout: Duration

    /// Requests go out on `http`'s event loops, each on a client of its own that connects only to the address the
    /// endpoint was checked to have (`EndpointGuard`, refused when private unless `allowPrivate`) and follows no
    /// redirect; each within `timeout`.
    public init(key: VAPIDKey, subject: String, http: HTTPClient, allowPrivate: Bool, timeout: Duration = .seconds(10))
    {
        self.key = key
        self.subject = subject
        self.eventLoopGroup = http.eventLoopGroup
        self.allowPrivate = allowPrivate
        self.timeout = timeout
    }

    /// Whether `subject` is a VAPID subject push services take: a `mailto:` address or an `https:` URL.
    public static func isValidSubject(_ subject: String) -> Bool {
        guard subject.utf8.count <= 512, !subject.contains(where: { $0.isNewline || $0.isWhitespace }) else {
            return false
        }
        if subject.hasPrefix("mailto:") { return subject.dropFirst(7).contains("@") }
        return subject.hasPrefix("https://") && URL(string: subject)?.host?.isEmpty == false
    }

    /// Encrypts `notice` for the browser of `subscription` and posts it to its push service, which keeps it up to
    /// `ttl` seconds while the browser is away (0: deliver now or never).
    public func send(
        _ notice: Notice, to subscription: WebPushSubscription, ttl: Int, urgency: WebPushUrgency = .normal
    ) async throws(DeliveryError) {
        guard Self.isValidSubject(subject) else { throw .permanent("the VAPID subject is not mailto: or https:") }
        let (publicKey, authSecret) = try subscription.keys()
        let (_, scheme, host, port) = try EndpointGuard.parse(subscription.endpoint)
        let body = try WebPushEncryption.encrypt(
            Self.payload(for: notice), userAgentPublicKey: publicKey, authSecret: authSecret)
        let token: String
        do {
            token = try key.token(
                audience: Self.origin(scheme: scheme, host: host, port: port), subject: subject,
                expiresAt: Date().addingTimeInterval(12 * 3_600))
        } catch {
            throw .permanent("signing the VAPID token failed: \(error)")
        }
        var headers = HTTPHeaders()
        headers.add(name: "TTL", value: String(max(0, ttl)))
        headers.add(name: "Content-Encoding", value: "aes128gcm")
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Urgency", value: urgency.rawValue)
        headers.add(name: "Topic", value: Self.topic(for: notice.id))
        headers.add(name: "Authorization", value: "vapid t=\(token), k=\(key.publicKeyBase64URL)")
        let answer = try await HTTPDelivery.post(
            url: subscription.endpoint, headers: headers, body: body, eventLoopGroup: eventLoopGroup,
            allowPrivate: allowPrivate, timeout: timeout)
        switch answer.status {
        case 200..<300:
            return
        case 404, 410:
            throw .permanent("the subscription is gone (HTTP \(answer.status))")
        case 429, 500..<600:
            throw .retryable("the push service answered HTTP \(answer.status) \(HTTPDelivery.snippet(answer.body))")
        case 300..<400:
            throw .permanent("the push service answered a redirect (HTTP \(answer.status)), not followed")
        default:
            throw .permanent(
                "the push service refused the message: HTTP \(answer.status) "
                    + HTTPDelivery.snippet(answer.body))
        }
    }

    /// What the service worker decrypts: a JSON object with `id`, `title` (the subject), `body` (the text), `url`
    /// (or null), `occurredAt` (ISO 8601) and `event` (the notice's JSON). When that is larger than a push message
    /// can be, `event` is left out, then the body shortened.
    public static func payload(for notice: Notice) -> [UInt8] {
        let occurredAt = ISO8601DateFormatter().string(from: notice.occurredAt)
        func object(body: String, event: [UInt8]?) -> [UInt8] {
            var out = Array("{\"id\":".utf8) + JSONText.quote(notice.id)
            out += Array(",\"title\":".utf8) + JSONText.quote(notice.subject)
            out += Array(",\"body\":".utf8) + JSONText.quote(body)
            out += Array(",\"url\":".utf8) + (notice.url.map(JSONText.quote) ?? Array("null".utf8))
            out += Array(",\"occurredAt\":".utf8) + JSONText.quote(occurredAt)
            if let event { out += Array(",\"event\":".utf8) + (event.isEmpty ? Array("null".utf8) : event) }
            return out + Array("}".utf8)
        }
        let whole = object(body: notice.text, event: notice.json)
        if whole.count <= WebPushEncryption.maximumPlaintext { return whole }
        var kept = notice.text.count
        var shorter = object(body: notice.text, event: nil)
        while shorter.count > WebPushEncryption.maximumPlaintext, kept > 0 {
            // Each round keeps fewer of the text's characters (at least one fewer), so it ends.
            kept = max(0, kept - max(1, (shorter.count - WebPushEncryption.maximumPlaintext) / 4))
            shorter = object(body: kept == 0 ? "" : notice.text.prefix(kept) + "…", event: nil)
        }
        return shorter
    }

    /// The `Topic` of a notice's messages: 32 base64url characters of the SHA-256 of its id (RFC 8030 §5.4).
    static func topic(for id: String) -> String {
        String(Base64URL.encode(SHA256.hash(data: Array(id.utf8))).prefix(32))
    }

    /// The VAPID audience: the endpoint's origin (its port only when not the scheme's default).
    static func origin(scheme: String, host: String, port: Int) -> String {
        let shownHost = host.contains(":") ? "[\(host)]" : host.lowercased()
        let defaultPort = scheme == "https" ? 443 : 80
        return port == defaultPort ? "\(scheme)://\(shownHost)" : "\(scheme)://\(shownHost):\(port)"
    }
}

/// JSON strings, written by hand so that a payload can splice in JSON it was given as bytes.
enum JSONText {
    static func quote(_ text: String) -> [UInt8] {
        var out: [UInt8] = [0x22]
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += [0x5C, 0x22]
            case "\\": out += [0x5C, 0x5C]
            case "\n": out += [0x5C, 0x6E]
            case "\r": out += [0x5C, 0x72]
            case "\t": out += [0x5C, 0x74]
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                out += Array(String(format: "\\u%04x", scalar.value).utf8)
            default: out += Array(String(scalar).utf8)
            }
        }
        out.append(0x22)
        return out
    }
}
