import AsyncHTTPClient
import Crypto
import Foundation
import TestSupport
import Testing

@testable import AlertChannels

/// Web Push: the encryption against RFC 8291's own example, and whole messages against a push endpoint that decrypts
/// them with `http-ece` and checks their VAPID token with `py-vapid` (scripts/alert-receiver).
@Suite(.serialized) struct WebPushTests {
    static func bytes(_ base64URL: String) throws -> [UInt8] {
        try #require(Base64URL.decode(base64URL))
    }

    /// RFC 8291 Appendix A: the same keys, salt and plaintext give the same message, byte for byte.
    @Test func encryptsRFC8291AppendixAExample() throws {
        let ephemeral = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: Self.bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        #expect(
            Base64URL.encode(ephemeral.publicKey.x963Representation)
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let body = try WebPushEncryption.encrypt(
            Array("When I grow up, I want to be a watermelon".utf8),
            userAgentPublicKey: Self.bytes(
                "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
            authSecret: Self.bytes("BTBZMqHH6r4Tts7J_aSIgg"), salt: Self.bytes("DGv6ra1nlYgDCS1FRnbzlw"),
            ephemeralKey: ephemeral)
        #expect(
            Base64URL.encode(body)
                == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6Tl"
                + "zAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    /// Two messages never share a salt or a key: the same plaintext encrypts differently.
    @Test func eachMessageHasItsOwnSaltAndKey() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let secret = [UInt8](repeating: 7, count: 16)
        let first = try WebPushEncryption.encrypt(
            [1, 2, 3], userAgentPublicKey: Array(browser.publicKey.x963Representation), authSecret: secret)
        let second = try WebPushEncryption.encrypt(
            [1, 2, 3], userAgentPublicKey: Array(browser.publicKey.x963Representation), authSecret: secret)
        #expect(first.prefix(16) != second.prefix(16))
        #expect(first[21..<86] != second[21..<86])
        #expect(first.count == 86 + 3 + 1 + 16)
    }

    /// A browser's keys and the receiver that plays its push service.
    struct Browser {
        let key = P256.KeyAgreement.PrivateKey()
        let authSecret = (0..<16).map { _ in UInt8.random(in: 0...255) }

        func subscription(_ endpoint: String) -> WebPushSubscription {
            WebPushSubscription(
                endpoint: endpoint, p256dh: Base64URL.encode(key.publicKey.x963Representation),
                auth: Base64URL.encode(authSecret))
        }

        func receiver(vapid: VAPIDKey, statuses: String = "201") async throws -> AlertReceiver {
            try await AlertReceiver(
                "push",
                [
                    // --name=value: a base64url value may start with "-".
                    "--ua-private=" + Base64URL.encode(key.rawRepresentation),
                    "--auth=" + Base64URL.encode(authSecret), "--vapid-key=" + vapid.publicKeyBase64URL,
                    "--statuses=" + statuses,
                ])
        }
    }

    static func notice(id: String = "alert-17-opened-push-3") -> Notice {
        Notice(
            id: id, subject: "Tomada “Freezer” sem sinal",
            text: "A tomada Freezer (ABC123) não envia leituras desde 14:05.\nVerifique a energia e o Wi-Fi.",
            url: "https://outletd.example/#alerts/17",
            json: Array(#"{"type":"alert.opened","kind":"offline","code":"ABC123","incident":17}"#.utf8),
            occurredAt: Date(timeIntervalSince1970: 1_796_300_000))
    }

    /// The message reaches the endpoint, http-ece decrypts it to exactly the payload sent, and py-vapid verifies the
    /// token signed by our key for the endpoint's origin.
    @Test func theEndpointDecryptsWhatWasSentAndVerifiesTheToken() async throws {
        let vapid = VAPIDKey.generate()
        let browser = Browser()
        let receiver = try await browser.receiver(vapid: vapid)
        let sender = WebPushSender(
            key: vapid, subject: "mailto:alerts@outletd.example", http: .shared, allowPrivate: true)
        let notice = Self.notice()
        try await sender.send(notice, to: browser.subscription(receiver.url("/push/abc")), ttl: 3_600, urgency: .high)

        let record = try #require(try await receiver.records(atLeast: 1).first)
        #expect(record["errors"] as? [String] == [])
        #expect(record["ok"] as? Bool == true)
        let plaintext = try #require(record["plaintext"] as? String)
        #expect(Array(plaintext.utf8) == WebPushSender.payload(for: notice))
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(plaintext.utf8)) as? [String: Any])
        #expect(payload["title"] as? String == notice.subject)
        #expect(payload["body"] as? String == notice.text)
        #expect(payload["url"] as? String == notice.url)
        #expect((payload["event"] as? [String: Any])?["incident"] as? Int == 17)
        #expect(record["recordSize"] as? Int == 4_096)
        #expect(record.header("TTL") == "3600")
        #expect(record.header("Urgency") == "high")
        #expect(record.header("Topic") == WebPushSender.topic(for: notice.id))
        #expect(record.header("Topic")?.count == 32)
        let claims = try #require(record["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == "mailto:alerts@outletd.example")
        #expect(claims["aud"] as? String == "http://127.0.0.1:\(receiver.port)")
    }

    /// The push service's answer decides: 410 (gone) and 400 are permanent, 429 and 503 retryable, 201 delivered;
    /// and a message signed by another key fails the endpoint's check.
    @Test func answersAreClassified() async throws {
        let vapid = VAPIDKey.generate()
        let browser = Browser()
        let receiver = try await browser.receiver(vapid: vapid, statuses: "410,429,503,404,201")
        let subscription = browser.subscription(receiver.url())
        let sender = WebPushSender(key: vapid, subject: "https://outletd.example/", http: .shared, allowPrivate: true)
        for expected in [
            DeliveryError.permanent("the subscription is gone (HTTP 410)"),
            .retryable("the push service answered HTTP 429 "), .retryable("the push service answered HTTP 503 "),
            .permanent("the subscription is gone (HTTP 404)"),
        ] {
            await #expect(throws: expected) { try await sender.send(Self.notice(), to: subscription, ttl: 60) }
        }
        try await sender.send(Self.notice(), to: subscription, ttl: 0)
        let impostor = WebPushSender(
            key: .generate(), subject: "mailto:x@outletd.example", http: .shared, allowPrivate: true)
        await #expect(throws: DeliveryError.self) { try await impostor.send(Self.notice(), to: subscription, ttl: 0) }
        let records = try await receiver.records(atLeast: 6)
        #expect(records.map { $0["ok"] as? Bool } == [true, true, true, true, true, false])
        #expect((records[5]["errors"] as? [String])?.first?.contains("k is not") == true)
    }

    /// Without the operator's leave, a subscription whose endpoint is on loopback is refused before anything is sent.
    @Test func refusesAPrivateEndpoint() async throws {
        let vapid = VAPIDKey.generate()
        let browser = Browser()
        let receiver = try await browser.receiver(vapid: vapid)
        let sender = WebPushSender(key: vapid, subject: "mailto:a@b.example", http: .shared, allowPrivate: false)
        await #expect {
            try await sender.send(Self.notice(), to: browser.subscription(receiver.url()), ttl: 60)
        } throws: { error in
            (error as? DeliveryError)?.reason.contains("not allowed") == true
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(try receiver.records().isEmpty)
    }

    @Test func refusesMalformedSubscriptions() throws {
        let good = Browser().subscription("https://push.example/abc")
        #expect(try good.validated() == good)
        var badKey = good
        badKey.p256dh = Base64URL.encode([UInt8](repeating: 4, count: 65))
        var shortAuth = good
        shortAuth.auth = "AAAA"
        var badEndpoint = good
        badEndpoint.endpoint = "ftp://push.example/abc"
        for subscription in [badKey, shortAuth, badEndpoint] {
            #expect(throws: DeliveryError.self) { try subscription.validated() }
        }
        #expect(!WebPushSender.isValidSubject("alerts@outletd.example"))
        #expect(WebPushSender.isValidSubject("mailto:alerts@outletd.example"))
    }

    /// A notice too large for one push message loses its `event`, then as much of its text as needed.
    @Test func aLargeNoticeStillFitsOneMessage() throws {
        var notice = Self.notice()
        notice.json = Array(("{\"padding\":\"" + String(repeating: "x", count: 5_000) + "\"}").utf8)
        notice.text = String(repeating: "ação ", count: 1_000)
        let payload = WebPushSender.payload(for: notice)
        #expect(payload.count <= WebPushEncryption.maximumPlaintext)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(object["event"] == nil)
        #expect((object["body"] as? String)?.hasSuffix("…") == true)
        _ = try WebPushEncryption.encrypt(
            payload, userAgentPublicKey: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation),
            authSecret: [UInt8](repeating: 1, count: 16))
    }

    /// The key is made once, kept with mode 0600, and read back by every later call (and by a racing one).
    @Test func theVAPIDKeyIsKeptInAFile() async throws {
        let directory = try AlertReceiver.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/vapid.pem"
        let keys = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<4 {
                group.addTask { try? VAPIDKey.loadOrCreate(path: path).publicKeyBase64URL }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(Set(keys).count == 1)
        #expect(keys.allSatisfy { $0 != nil })
        #expect(try VAPIDKey.loadOrCreate(path: path).publicKeyBase64URL == keys.first ?? nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["vapid.pem"])
        try "not a key".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: VAPIDKeyError.self) { try VAPIDKey.loadOrCreate(path: path) }
    }
}
