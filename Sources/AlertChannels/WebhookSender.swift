import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Posts notices to owners' URLs, signed as Standard Webhooks 1.0.
///
/// The request: `POST <url>` with the notice's JSON as the body (`Content-Type: application/json`), `webhook-id` (the
/// notice's id, the same on every retry), `webhook-timestamp` (seconds since 1970 at this attempt) and
/// `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed by the secret's bytes (the base64 after
/// `whsec_`). A 2xx answer is delivered; 408, 429, 5xx and no answer within the timeout: `.retryable`; a redirect (not
/// followed) and every other 4xx: `.permanent`.
public struct WebhookSender: Sendable {
    let eventLoopGroup: any EventLoopGroup
    let allowPrivate: Bool
    let timeout: Duration

    /// Requests go out on `http`'s event loops, each on a client of its own that connects only to the address the URL
    /// was checked to have (`EndpointGuard`, refused when private unless `allowPrivate`) and follows no redirect; each
    /// within `timeout`.
    public init(http: HTTPClient, allowPrivate: Bool, timeout: Duration = .seconds(10)) {
        self.eventLoopGroup = http.eventLoopGroup
        self.allowPrivate = allowPrivate
        self.timeout = timeout
    }

    /// A new signing secret: `whsec_` and the base64 of 32 random bytes.
    public static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "whsec_" + Data(bytes).base64EncodedString()
    }

    /// Whether `secret` is `whsec_` and the base64 of 24 to 64 bytes (Standard Webhooks' bounds).
    public static func isValidSecret(_ secret: String) -> Bool {
        key(of: secret).map { (24...64).contains($0.count) } ?? false
    }

    /// The key bytes of a `whsec_…` secret.
    static func key(of secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_") else { return nil }
        return Data(base64Encoded: String(secret.dropFirst(6))).map { Array($0) }
    }

    /// `v1,<base64>`: the HMAC-SHA256 of `id.timestamp.body` keyed by the secret's bytes.
    public static func signature(id: String, timestamp: Int, body: [UInt8], secret: String) throws(DeliveryError)
        -> String
    {
        guard let key = key(of: secret), !key.isEmpty else { throw .permanent("the webhook secret is not whsec_…") }
        let signed = Array("\(id).\(timestamp).".utf8) + body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
        return "v1," + Data(mac).base64EncodedString()
    }

    /// Posts `notice.json` to `url`, signed with `secret`.
    public func send(_ notice: Notice, to url: String, secret: String) async throws(DeliveryError) {
        guard !notice.id.isEmpty, notice.id.utf8.count <= 256, !notice.id.contains(where: { $0.isNewline }) else {
            throw .permanent("the notice's id cannot be a webhook-id")
        }
        let timestamp = Int(Date().timeIntervalSince1970)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "User-Agent", value: "outletd-webhooks")
        headers.add(name: "webhook-id", value: notice.id)
        headers.add(name: "webhook-timestamp", value: String(timestamp))
        headers.add(
            name: "webhook-signature",
            value: try Self.signature(id: notice.id, timestamp: timestamp, body: notice.json, secret: secret))
        let answer = try await HTTPDelivery.post(
            url: url, headers: headers, body: notice.json, eventLoopGroup: eventLoopGroup, allowPrivate: allowPrivate,
            timeout: timeout)
        switch answer.status {
        case 200..<300:
            return
        case 408, 429, 500..<600:
            throw .retryable("the receiver answered HTTP \(answer.status) \(HTTPDelivery.snippet(answer.body))")
        case 300..<400:
            throw .permanent("the receiver answered a redirect (HTTP \(answer.status)), not followed")
        default:
            throw .permanent(
                "the receiver refused the message: HTTP \(answer.status) \(HTTPDelivery.snippet(answer.body))")
        }
    }
}
