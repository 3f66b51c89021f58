import Alerts
import Crypto
import Foundation
import Postgres
import ServiceTestSupport
import TestSupport
import Testing

@testable import AlertChannels
@testable import Config
@testable import Storage

/// Alerts across processes: three outletd instances, one of them killed with SIGKILL again and again while
/// outlets go offline in waves, open each incident once and queue each delivery once; the operators' CLI.
@Suite(.serialized) struct AlertInstancesTests {
    @Test func threeInstancesAndKillDashNineOpenEachIncidentOnce() async throws {
        let (url, ana, _) = try AlertStoreTests.setUp(outlets: 300)
        _ = try AlertStoreTests.set(url, .owner(ana), .offline, nil, .init())
        _ = try AlertStoreTests.withStore(url) { store in
            try store.addChannel(.owner(ana), .init(kind: .email, target: "ana@example.com"), maxChannels: 10).get()
        }
        for index in 1...300 { try AlertStoreTests.readings(url, "a-\(index)", age: 1) }
        let base = try Harness.configuration(databaseURL: url)
        func configuration(_ index: Int) -> OutletdConfiguration {
            var configuration = base
            configuration.instanceID = "\(base.instanceID)-\(index)"
            configuration.spool.directory = "\(base.spool.directory)-\(index)"
            return configuration
        }
        let fast = ["OUTLETD_ALERTS_INTERVAL_SECONDS": "1"]
        var processes = try (0..<3).map { try OutletdProcess.start(configuration($0), extraEnvironment: fast) }
        defer { processes.forEach { $0.signal(SIGKILL) } }
        // Waves of ten outlets going silent every 300 ms; instance 0 killed and started again every 1.5 s.
        var kills = 0
        for wave in 0..<30 {
            _ = try Harness.scalar(
                url,
                """
                UPDATE device_power_totals SET last_measured_at = now() - interval '10 minutes'
                WHERE device_id IN (SELECT id FROM devices WHERE code LIKE 'a-%'
                                    AND substring(code FROM 3)::int BETWEEN \(wave * 10 + 1) AND \(wave * 10 + 10))
                RETURNING 1
                """)
            try await Task.sleep(for: .milliseconds(300))
            if wave % 5 == 4 {
                processes[0].signal(SIGKILL)
                _ = try await processes[0].waitForExit(timeout: 10)
                processes[0] = try OutletdProcess.start(configuration(0), extraEnvironment: fast)
                kills += 1
            }
        }
        try await Harness.waitUntil(timeout: 60, "every offline outlet has its incident") {
            try Harness.count(url, "SELECT count(*) FROM alert_incidents") >= 300
        }
        try await Task.sleep(for: .seconds(3))
        #expect(kills == 6)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_incidents") == 300)
        #expect(try Harness.count(url, "SELECT count(DISTINCT device_id) FROM alert_incidents") == 300)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_events WHERE event = 'opened'") == 300)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_deliveries") == 300)
    }

    @Test func operatorsSetListAcknowledgeAndReadTheHistory() throws {
        let (url, _, _) = try AlertStoreTests.setUp()
        let environment = ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""]
        func outletd(_ arguments: [String]) throws -> String {
            try TestStack.run([try OutletdProcess.executable(), "alert"] + arguments, environment: environment)
        }
        #expect(
            try outletd(["set", "offline", "a-1", "--after", "60", "--resolve-after", "0"]).contains("offline on a-1"))
        #expect(try outletd(["set", "budget", "--owner", "ana", "--amount", "150"]).contains("budget on all outlets"))
        let refused = try CLITests.failure(["alert", "set", "standby", "a-1"], environment)
        #expect(refused.contains("standby needs watts"), "\(refused)")
        let notAParameter = try CLITests.failure(["alert", "set", "offline", "a-1", "--watts", "3"], environment)
        #expect(notAParameter.contains("watts is not a parameter of offline"), "\(notAParameter)")
        // The outlet's owner owns the rule.
        #expect(
            try Harness.scalar(
                url,
                "SELECT u.name FROM alert_rules r JOIN app_users u ON u.id = r.app_user_id WHERE r.kind = 'offline'")
                == "ana")
        try AlertStoreTests.readings(url, "a-1", age: 500)
        try AlertStoreTests.round(url)
        let list = try outletd(["list"])
        #expect(list.contains("2 rules, 1 open"), "\(list)")
        let incident = try Harness.scalar(url, "SELECT id FROM alert_incidents")
        #expect(try outletd(["ack", incident]).contains("acknowledged"))
        let history = try outletd(["history"])
        #expect(history.contains("acknowledged") && history.contains("opened") && history.contains("a-1"), "\(history)")
    }

    /// Through the daemon's wiring to AlertChannels: an incident reaches the owner's webhook once, in the channel's
    /// language, signed as Standard Webhooks (verified by the `standardwebhooks` package in scripts/alert-receiver).
    @Test func anIncidentReachesTheOwnersWebhookSignedAndInTheirLanguage() async throws {
        let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret])
        let port = receiver.port

        let url = try Self.silentOutlet(
            alertingThrough: .init(
                kind: .webhook, target: "http://127.0.0.1:\(port)/hook", secret: secret, language: .ptBR))
        let daemon = try OutletdProcess.start(
            try Harness.configuration(databaseURL: url),
            extraEnvironment: ["OUTLETD_ALERTS_INTERVAL_SECONDS": "1", "OUTLETD_ALERTS_WEBHOOK_ALLOW_PRIVATE": "true"])
        defer { daemon.signal(SIGKILL) }
        _ = try await receiver.records(atLeast: 1)
        try await Task.sleep(for: .seconds(2))
        let records = try receiver.records()
        #expect(records.count == 1)
        let received = try #require(records.first)
        #expect(received["ok"] as? Bool == true, "\(received)")
        let body = received["body"] as? String ?? ""
        #expect(body.contains("Alerta: a-1 está offline") && body.contains("alert.opened"), "\(body)")
        #expect(!body.contains(secret) && !daemon.output.contains(secret))
        #expect(try Harness.scalar(url, "SELECT status || ' ' || attempts FROM alert_deliveries") == "sent 1")
    }

    /// Email through the daemon's wiring: an incident reaches the owner's address once, through a private relay
    /// (aiosmtpd in scripts/alert-receiver, STARTTLS required before AUTH, its CA given by `alerts.smtp_ca_file`), in
    /// the channel's language, with the notice's id as Message-ID.
    @Test func anIncidentReachesTheOwnersEmailThroughAPrivateRelay() async throws {
        let directory = try AlertReceiver.makeDirectory()
        try TestStack.run([
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", "\(directory)/relay.key", "-out",
            "\(directory)/relay.pem",
        ])
        let receiver = try await AlertReceiver(
            "smtp",
            [
                "--cert", "\(directory)/relay.pem", "--key", "\(directory)/relay.key", "--user", "outletd",
                "--password", "relay-s3cret",
            ], directory: directory)
        let port = receiver.port

        let url = try Self.silentOutlet(
            alertingThrough: .init(kind: .email, target: "ana@example.com", language: .ptBR))
        let daemon = try OutletdProcess.start(
            try Harness.configuration(databaseURL: url),
            extraEnvironment: [
                "OUTLETD_ALERTS_INTERVAL_SECONDS": "1", "OUTLETD_ALERTS_SMTP_HOST": "localhost",
                "OUTLETD_ALERTS_SMTP_PORT": String(port), "OUTLETD_ALERTS_SMTP_USERNAME": "outletd",
                "OUTLETD_ALERTS_SMTP_PASSWORD": "relay-s3cret", "OUTLETD_ALERTS_SMTP_FROM": "alertas@outletd.example",
                "OUTLETD_ALERTS_SMTP_CA_FILE": "\(directory)/relay.pem",
            ])
        defer { daemon.signal(SIGKILL) }
        let isMessage: ([String: Any]) -> Bool = { $0["event"] as? String == "message" }
        _ = try await receiver.records(atLeast: 1, where: isMessage)
        try await Task.sleep(for: .seconds(2))
        let received = try receiver.records().filter(isMessage)
        #expect(received.count == 1)
        let message = try #require(received.first)
        #expect(message["tls"] as? Bool == true && message["authenticated"] as? Bool == true, "\(message)")
        #expect(message["rcptTos"] as? [String] == ["ana@example.com"])
        #expect((message["body"] as? String ?? "").contains("Alerta: a-1 está offline"), "\(message)")
        let delivery = try Harness.scalar(url, "SELECT id FROM alert_deliveries")
        #expect((message["rawHeaders"] as? String ?? "").contains("Message-ID: <outletd-delivery-\(delivery)-"))
        #expect(!daemon.output.contains("relay-s3cret"))
        #expect(try Harness.scalar(url, "SELECT status || ' ' || attempts FROM alert_deliveries") == "sent 1")
    }

    /// Web Push through the daemon's wiring: its VAPID key from `alerts.vapid_key_file`, the owner's browser
    /// subscription; the push endpoint (scripts/alert-receiver) decrypts the message with `http-ece` and verifies its
    /// token with `py-vapid`, and it arrives once, in the channel's language.
    @Test func anIncidentReachesTheOwnersBrowserThroughWebPush() async throws {
        let directory = try AlertReceiver.makeDirectory()
        let keyFile = "\(directory)/vapid.pem"
        let vapid = try VAPIDKey.loadOrCreate(path: keyFile)
        let browser = P256.KeyAgreement.PrivateKey()
        let authSecret = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let receiver = try await AlertReceiver(
            "push",
            [
                // --name=value: a base64url value may start with "-".
                "--ua-private=" + Base64URL.encode(browser.rawRepresentation),
                "--auth=" + Base64URL.encode(authSecret), "--vapid-key=" + vapid.publicKeyBase64URL,
            ], directory: directory)

        let url = try Self.silentOutlet(
            alertingThrough: .init(
                kind: .webpush, target: receiver.url("/push/ana"),
                p256dh: Base64URL.encode(browser.publicKey.x963Representation), auth: Base64URL.encode(authSecret),
                language: .ptBR))
        let daemon = try OutletdProcess.start(
            try Harness.configuration(databaseURL: url),
            extraEnvironment: [
                "OUTLETD_ALERTS_INTERVAL_SECONDS": "1", "OUTLETD_ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",
                "OUTLETD_ALERTS_VAPID_KEY_FILE": keyFile, "OUTLETD_ALERTS_VAPID_SUBJECT": "mailto:ops@outletd.example",
            ])
        defer { daemon.signal(SIGKILL) }
        _ = try await receiver.records(atLeast: 1)
        try await Task.sleep(for: .seconds(2))
        let records = try receiver.records()
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record["errors"] as? [String] == [] && record["ok"] as? Bool == true, "\(record)")
        let plaintext = try #require(record["plaintext"] as? String)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(plaintext.utf8)) as? [String: Any])
        #expect((payload["title"] as? String ?? "").contains("Alerta: a-1 está offline"), "\(payload)")
        let event = try #require(payload["event"] as? [String: Any])
        #expect(event["type"] as? String == "alert.opened" && event["outlet"] as? String == "a-1", "\(event)")
        #expect((record["claims"] as? [String: Any])?["sub"] as? String == "mailto:ops@outletd.example")
        #expect(try Harness.scalar(url, "SELECT status || ' ' || attempts FROM alert_deliveries") == "sent 1")
    }

    /// At least once, under one id: outletd killed (SIGKILL) while its webhook waits for the receiver's answer leaves
    /// the delivery claimed; the next start sends it again once the claim's lease ends, with the same `webhook-id` and
    /// body, so that the receiver can drop the copy; then it is recorded sent.
    @Test func aDeliveryCutByKillDashNineIsSentAgainWithTheSameID() async throws {
        let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let receiver = try await AlertReceiver("webhook", ["--secret", secret, "--hold-first", "120"])
        let url = try Self.silentOutlet(
            alertingThrough: .init(kind: .webhook, target: receiver.url("/hook"), secret: secret))
        let configuration = try Harness.configuration(databaseURL: url)
        let environment = [
            "OUTLETD_ALERTS_INTERVAL_SECONDS": "1", "OUTLETD_ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",
            "OUTLETD_ALERTS_DELIVERY_LEASE_SECONDS": "10",
        ]
        let first = try OutletdProcess.start(configuration, extraEnvironment: environment)
        defer { first.signal(SIGKILL) }
        let held = try await receiver.records(atLeast: 1)
        #expect(held.first?["held"] as? Bool == true)
        first.signal(SIGKILL)
        _ = try await first.waitForExit(timeout: 10)
        #expect(try Harness.scalar(url, "SELECT status || ' ' || attempts FROM alert_deliveries") == "pending 1")

        let second = try OutletdProcess.start(configuration, extraEnvironment: environment)
        defer { second.signal(SIGKILL) }
        let records = try await receiver.records(atLeast: 2)
        try await Harness.waitUntil(timeout: 10, "the delivery recorded sent") {
            (try? Harness.scalar(url, "SELECT status FROM alert_deliveries")) == "sent"
        }
        try await Task.sleep(for: .seconds(2))
        #expect(try receiver.records().count == 2)
        #expect(records.allSatisfy { $0["ok"] as? Bool == true }, "\(records)")
        let ids = records.map { $0.header("webhook-id") }
        #expect(ids[0] != nil && ids[0] == ids[1], "\(ids)")
        #expect(records[0]["body"] as? String == records[1]["body"] as? String)
        #expect(try Harness.scalar(url, "SELECT status || ' ' || attempts FROM alert_deliveries") == "sent 2")
    }

    /// A fresh database whose owner has an offline rule for `a-1`, which went silent 10 minutes ago, and one
    /// channel, `spec`.
    static func silentOutlet(alertingThrough spec: AlertChannelSpec) throws -> String {
        let (url, ana, _) = try AlertStoreTests.setUp()
        _ = try AlertStoreTests.set(url, .owner(ana), .offline, "a-1", .init())
        _ = try AlertStoreTests.withStore(url) { store in
            try store.addChannel(.owner(ana), spec, maxChannels: 10).get()
        }
        try AlertStoreTests.readings(url, "a-1", age: 600)
        return url
    }
}
