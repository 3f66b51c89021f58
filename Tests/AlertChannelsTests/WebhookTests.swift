import AsyncHTTPClient
import Foundation
import NIOCore
import TestSupport
import Testing

@testable import AlertChannels

#if canImport(Glibc)
    import Glibc
#endif

/// Webhooks against a receiver that verifies them with the `standardwebhooks` package (scripts/alert-receiver).
@Suite(.serialized) struct WebhookTests {
    static func notice(id: String = "alert-17-opened-hook-4") -> Notice {
        Notice(
            id: id, subject: "Outlet “Iron” on for 2 h", text: "The outlet Iron has been on for 2 h.", url: nil,
            json: Array(
                #"{"type":"alert.opened","kind":"on-too-long","code":"IRON01","incident":21,"text":"ação"}"#.utf8),
            occurredAt: Date())
    }

    /// Standard Webhooks' own example: this secret, id, timestamp and body sign to this value.
    @Test func signsTheStandardWebhooksExample() throws {
        #expect(
            try WebhookSender.signature(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                body: Array(#"{"test": 2432232314}"#.utf8),
                secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(throws: DeliveryError.self) {
            try WebhookSender.signature(id: "a", timestamp: 1, body: [], secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        }
    }

    @Test func newSecretsAreValidAndDistinct() {
        let secrets = (0..<20).map { _ in WebhookSender.newSecret() }
        #expect(Set(secrets).count == 20)
        #expect(secrets.allSatisfy(WebhookSender.isValidSecret))
        #expect(!WebhookSender.isValidSecret("whsec_c2hvcnQ="))
        #expect(!WebhookSender.isValidSecret("secret"))
    }

    /// The receiver's package verifies the signature and gets the body as sent; the id is the notice's.
    @Test func theReceiverVerifiesWhatWasSent() async throws {
        let secret = WebhookSender.newSecret()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret, "--statuses", "204"])
        let notice = Self.notice()
        try await WebhookSender(http: .shared, allowPrivate: true).send(
            notice, to: receiver.url("/hooks/1"), secret: secret)
        let record = try #require(try await receiver.records(atLeast: 1).first)
        #expect(record["errors"] as? [String] == [])
        #expect(record["ok"] as? Bool == true)
        #expect(Array((record["body"] as? String ?? "").utf8) == notice.json)
        #expect((record["payload"] as? [String: Any])?["text"] as? String == "ação")
        #expect(record.header("webhook-id") == notice.id)
        #expect(record.header("content-type") == "application/json")
        let timestamp = try #require(record.header("webhook-timestamp").flatMap(Int.init))
        #expect(abs(timestamp - Int(Date().timeIntervalSince1970)) < 300)
    }

    /// 500, then 200: retryable, then delivered, the same webhook-id both times, each signed afresh.
    @Test func aFailingReceiverIsRetryableThenDelivered() async throws {
        let secret = WebhookSender.newSecret()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret, "--statuses", "500,429,408,200"])
        let sender = WebhookSender(http: .shared, allowPrivate: true)
        for status in [500, 429, 408] {
            await #expect {
                try await sender.send(Self.notice(), to: receiver.url(), secret: secret)
            } throws: { error in
                guard case .retryable(let reason) = error as? DeliveryError else { return false }
                return reason.contains("HTTP \(status)")
            }
        }
        try await sender.send(Self.notice(), to: receiver.url(), secret: secret)
        let records = try await receiver.records(atLeast: 4)
        #expect(records.map { $0["ok"] as? Bool } == [true, true, true, true])
        #expect(Set(records.compactMap { $0.header("webhook-id") }) == [Self.notice().id])
    }

    /// Other 4xx, and redirects (never followed), are permanent.
    @Test func refusalsAndRedirectsArePermanent() async throws {
        let secret = WebhookSender.newSecret()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret, "--statuses", "404,302,307,200"])
        let sender = WebhookSender(http: .shared, allowPrivate: true)
        for status in [404, 302, 307] {
            await #expect {
                try await sender.send(Self.notice(), to: receiver.url(), secret: secret)
            } throws: { error in
                guard case .permanent(let reason) = error as? DeliveryError else { return false }
                return reason.contains("HTTP \(status)")
            }
        }
        let records = try await receiver.records(atLeast: 3)
        #expect(records.allSatisfy { $0["path"] as? String == "/" })
        #expect(records.count == 3)
    }

    /// A body changed after signing, or a signature by another secret, fails the package's verification.
    @Test func aTamperedBodyFailsVerification() async throws {
        let secret = WebhookSender.newSecret()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret, "--statuses", "200"])
        let notice = Self.notice()
        let timestamp = Int(Date().timeIntervalSince1970)
        for (body, key) in [
            (Array(notice.json.dropLast()) + Array(#","incident":22}"#.utf8), secret),
            (notice.json, WebhookSender.newSecret()),
        ] {
            var request = HTTPClientRequest(url: receiver.url())
            request.method = .POST
            request.headers.add(name: "webhook-id", value: notice.id)
            request.headers.add(name: "webhook-timestamp", value: String(timestamp))
            request.headers.add(
                name: "webhook-signature",
                value: try WebhookSender.signature(id: notice.id, timestamp: timestamp, body: notice.json, secret: key))
            request.body = .bytes(body)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(response.status.code == 401)
        }
        let records = try await receiver.records(atLeast: 2)
        #expect(records.map { $0["ok"] as? Bool } == [false, false])
        #expect(records.allSatisfy { ($0["errors"] as? [String])?.first == "No matching signature found" })
    }

    /// A receiver that accepts the connection and never answers: retryable once the timeout has passed.
    @Test func aSilentReceiverIsRetryableAfterTheTimeout() async throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 && listen(fd, 8) == 0
            }
        }
        #expect(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let sender = WebhookSender(http: .shared, allowPrivate: true, timeout: .seconds(1))
        await #expect {
            try await sender.send(Self.notice(), to: "http://127.0.0.1:\(port)/", secret: WebhookSender.newSecret())
        } throws: { error in
            (error as? DeliveryError)?.isRetryable == true
        }
    }

    /// Without the operator's leave, a URL on loopback (in any spelling) gets nothing.
    @Test func refusesPrivateURLs() async throws {
        let secret = WebhookSender.newSecret()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret])
        let sender = WebhookSender(http: .shared, allowPrivate: false)
        for url in [
            receiver.url(), "http://localhost:\(receiver.port)/", "http://2130706433:\(receiver.port)/",
            "http://[::ffff:127.0.0.1]:\(receiver.port)/",
        ] {
            await #expect {
                try await sender.send(Self.notice(), to: url, secret: secret)
            } throws: { error in
                guard case .permanent(let reason) = error as? DeliveryError else { return false }
                return reason.contains("not allowed")
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(try receiver.records().isEmpty)
    }
}
