import Alerts
import Foundation
import Postgres
import TestSupport
import Testing

@testable import Storage

/// The owners' alert routes over HTTP: rules, channels and incidents are the caller's alone (another owner gets
/// 404 for every id), bad values are 400 with the reason, the limits 409, a webhook's secret is never answered.
@Suite(.serialized) struct OwnerAlertsTests {
    /// One evaluation round of every kind, as the daemon's runner makes it.
    static func round(_ url: String) throws {
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        _ = try AlertSQLStore(connection: connection).evaluateRound(
            kinds: Set(AlertKind.allCases), instanceID: "test", decide: AlertRound.decide)
    }

    @Test func anotherOwnerGets404ForEveryIdAndBadValuesAreRefused() async throws {
        try await OwnerAppTests.withApp(configure: { $0.alerts.maxChannelsPerOwner = 2 }) { app in
            _ = try app.sql(
                "UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = 'ana') WHERE code = 'kit-1' RETURNING 1"
            )
            let ana = try await app.login("ana")
            let bob = try await app.login("bob")
            // Rules: set, refused values, another's outlet.
            let rule = try await app.send(
                "PUT", "/api/v1/alert-rules", token: ana,
                body: #"{"kind":"offline","outlet":"kit-1","after_seconds":30,"resolve_after_seconds":0}"#)
            #expect(rule.status == 200, "\(rule.body)")
            guard case .number(let ruleID)? = rule.json?["id"] else { throw HarnessError("no rule id: \(rule.body)") }
            for (body, reason) in [
                (#"{"kind":"offline","outlet":"kit-1","after_seconds":5}"#, "after_seconds must be within 30…604800 s"),
                (#"{"kind":"standby","outlet":"kit-1"}"#, "standby needs watts"),
                (#"{"kind":"flood"}"#, "kind: expected one of"),
                (#"{"kind":"budget","amount":"1e9"}"#, "amount must be a decimal number"),
                (#"{"kind":"offline","watts":"x"}"#, "watts: expected a number of watts"),
            ] {
                let refused = try await app.send("PUT", "/api/v1/alert-rules", token: ana, body: body)
                #expect(
                    refused.status == 400 && refused.body.contains(reason), "\(body): \(refused.status) \(refused.body)"
                )
            }
            let onAnother = try await app.send(
                "PUT", "/api/v1/alert-rules", token: bob, body: #"{"kind":"offline","outlet":"kit-1"}"#)
            #expect(onAnother.status == 404)
            // Channels: the secret is never answered; bad ones refused; the limit.
            let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
            let webhook = try await app.send(
                "POST", "/api/v1/alert-channels", token: ana,
                body: #"{"kind":"webhook","target":"https://example.com/hook","secret":"\#(secret)"}"#)
            #expect(webhook.status == 201, "\(webhook.body)")
            #expect(!webhook.body.contains(secret))
            guard case .number(let channelID)? = webhook.json?["id"] else { throw HarnessError(webhook.body) }
            let list = try await app.send("GET", "/api/v1/alert-channels", token: ana)
            #expect(list.status == 200 && !list.body.contains(secret) && list.body.contains("example.com/hook"))
            // No owner makes outletd call loopback or private addresses (alerts.webhook_allow_private: false).
            for target in ["http://127.0.0.1:9464/metrics", "http://10.1.2.3/", "http://[::1]/", "http://2130706433/"] {
                let refused = try await app.send(
                    "POST", "/api/v1/alert-channels", token: ana,
                    body: #"{"kind":"webhook","target":"\#(target)","secret":"\#(secret)"}"#)
                #expect(refused.status == 400, "\(target): \(refused.status) \(refused.body)")
            }
            let bad = try await app.send(
                "POST", "/api/v1/alert-channels", token: ana, body: #"{"kind":"email","target":"not an address"}"#)
            #expect(bad.status == 400 && bad.body.contains("expected an email address"), "\(bad.body)")
            _ = try await app.send(
                "POST", "/api/v1/alert-channels", token: ana, body: #"{"kind":"email","target":"ana@example.com"}"#)
            let third = try await app.send(
                "POST", "/api/v1/alert-channels", token: ana, body: #"{"kind":"email","target":"b@example.com"}"#)
            #expect(third.status == 409 && third.body.contains("at most 2 alert channels"), "\(third.body)")
            // An incident of ana's.
            _ = try app.sql(
                """
                INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                                 first_measured_at, last_measured_at)
                SELECT id, 10, 0, 0, now(), now() - interval '1 hour', now() - interval '10 minutes'
                FROM devices WHERE code = 'kit-1' RETURNING 1
                """)
            try Self.round(app.url)
            let alerts = try await app.send("GET", "/api/v1/alerts", token: ana)
            #expect(alerts.json?["open_count"] == .number(1), "\(alerts.body)")
            let incidentID = try app.sql("SELECT id FROM alert_incidents")
            // bob: 404 for each of ana's ids, and sees none of them.
            for (method, path, body) in [
                ("POST", "/api/v1/alerts/\(incidentID)/ack", nil),
                ("POST", "/api/v1/alerts/\(incidentID)/snooze", #"{"seconds":60}"#),
                ("DELETE", "/api/v1/alert-rules/\(Int(ruleID))", nil),
                ("PATCH", "/api/v1/alert-channels/\(Int(channelID))", #"{"enabled":false}"#),
                ("DELETE", "/api/v1/alert-channels/\(Int(channelID))", nil),
            ] as [(String, String, String?)] {
                let answer = try await app.send(method, path, token: bob, body: body)
                #expect(answer.status == 404, "\(method) \(path): \(answer.status)")
            }
            let bobs = try await app.send("GET", "/api/v1/alerts", token: bob)
            #expect(bobs.json?["open_count"] == .number(0))
            #expect(try await app.send("GET", "/api/v1/alert-rules", token: bob).body == "[]")
            #expect(try await app.send("GET", "/api/v1/alert-channels", token: bob).body == "[]")
            #expect(try app.sql("SELECT bool_and(enabled) FROM alert_channels") == "t")
            // ana can.
            #expect(try await app.send("POST", "/api/v1/alerts/\(incidentID)/ack", token: ana).status == 204)
            #expect(try await app.send("DELETE", "/api/v1/alert-rules/\(Int(ruleID))", token: ana).status == 204)
            #expect(try app.sql("SELECT state FROM alert_incidents") == "resolved")
        }
    }

    /// A paused channel gets no deliveries, and what was pending for it is dropped, so that resuming it sends no old
    /// news; the body is checked like every other.
    @Test func aPausedChannelGetsNothingAndResumingSendsNoOldNews() async throws {
        try await OwnerAppTests.withApp { app in
            _ = try app.sql(
                """
                UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = 'ana')
                WHERE code IN ('kit-1', 'kit-2') RETURNING 1
                """)
            let ana = try await app.login("ana")
            let added = try await app.send(
                "POST", "/api/v1/alert-channels", token: ana, body: #"{"kind":"email","target":"ana@example.com"}"#)
            #expect(added.status == 201, "\(added.body)")
            guard case .number(let channelID)? = added.json?["id"] else { throw HarnessError(added.body) }
            let path = "/api/v1/alert-channels/\(Int(channelID))"
            for code in ["kit-1", "kit-2"] {
                let rule = try await app.send(
                    "PUT", "/api/v1/alert-rules", token: ana, body: #"{"kind":"offline","outlet":"\#(code)"}"#)
                #expect(rule.status == 200, "\(rule.body)")
            }
            // kit-1 goes quiet (an hour; readings were 13 minutes apart): its incident queues a delivery.
            func silence(_ code: String) throws {
                _ = try app.sql(
                    """
                    INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                                     first_measured_at, last_measured_at)
                    SELECT id, 10, 0, 0, now(), now() - interval '2 hours', now() - interval '1 hour'
                    FROM devices WHERE code = '\(code)' RETURNING 1
                    """)
            }
            try silence("kit-1")
            try Self.round(app.url)
            #expect(try app.sql("SELECT string_agg(status, ',') FROM alert_deliveries") == "pending")
            for bad in [#"{"enabled":"no"}"#, "{}", #"{"enabled":null}"#, "[]"] {
                let refused = try await app.send("PATCH", path, token: ana, body: bad)
                #expect(refused.status == 400, "\(bad): \(refused.status) \(refused.body)")
            }
            #expect(try app.sql("SELECT string_agg(status, ',') FROM alert_deliveries") == "pending")
            let paused = try await app.send("PATCH", path, token: ana, body: #"{"enabled":false}"#)
            #expect(paused.status == 200 && paused.json?["enabled"] == .bool(false), "\(paused.body)")
            #expect(
                try app.sql("SELECT status || ':' || last_error FROM alert_deliveries") == "failed:channel paused")
            // kit-2 goes quiet while the channel is paused: an incident, and nothing for the channel.
            try silence("kit-2")
            try Self.round(app.url)
            #expect(try app.sql("SELECT count(*) FROM alert_incidents WHERE state = 'open'") == "2")
            #expect(try app.sql("SELECT count(*) FROM alert_deliveries") == "1")
            let resumed = try await app.send("PATCH", path, token: ana, body: #"{"enabled":true}"#)
            #expect(resumed.status == 200 && resumed.json?["enabled"] == .bool(true), "\(resumed.body)")
            try Self.round(app.url)
            #expect(try app.sql("SELECT count(*) FROM alert_deliveries") == "1")
            let listed = try await app.send("GET", "/api/v1/alert-channels", token: ana)
            guard case .array(let channels)? = listed.json else { throw HarnessError(listed.body) }
            #expect(channels.count == 1 && channels.first?["enabled"] == .bool(true), "\(listed.body)")
            #expect(
                try await app.send("PATCH", "/api/v1/alert-channels/999999", token: ana, body: #"{"enabled":false}"#)
                    .status == 404)
        }
    }

    /// The page's badge: the live stream sends `event: alerts` with the open count when an incident opens and when
    /// it resolves, to its owner only.
    @Test func theLiveStreamCarriesTheOpenCount() async throws {
        try await OwnerAppTests.withApp(configure: OwnerAppLiveTests.configure) { app in
            _ = try app.sql(
                """
                UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = 'ana') WHERE code = 'kit-1'
                RETURNING 1
                """)
            let ana = try await app.login("ana")
            let bob = try await app.login("bob")
            let anas = try await LiveStreamClient.open(port: app.port, token: ana)
            let bobs = try await LiveStreamClient.open(port: app.port, token: bob)
            defer { anas.close(); bobs.close() }
            #expect(try await anas.next { $0.name == "alerts" }?.data == #"{"open":0}"#)
            let rule = try await app.send(
                "PUT", "/api/v1/alert-rules", token: ana,
                body: #"{"kind":"offline","outlet":"kit-1","resolve_after_seconds":0}"#)
            #expect(rule.status == 200)
            _ = try app.sql("UPDATE devices SET online = false, last_seen_at = now() WHERE code = 'kit-1' RETURNING 1")
            try Self.round(app.url)
            #expect(try await anas.next { $0.name == "alerts" }?.data == #"{"open":1}"#)
            _ = try app.sql("UPDATE devices SET online = true WHERE code = 'kit-1' RETURNING 1")
            _ = try app.sql(
                """
                INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                                 first_measured_at, last_measured_at)
                SELECT id, 10, 0, 0, now(), now() - interval '1 minute', now() + interval '1 second'
                FROM devices WHERE code = 'kit-1' RETURNING 1
                """)
            try Self.round(app.url)
            #expect(try await anas.next { $0.name == "alerts" }?.data == #"{"open":0}"#)
            for event in bobs.received where event.name == "alerts" { #expect(event.data == #"{"open":0}"#) }
        }
    }

    /// The page's `applicationServerKey`: the VAPID key's public half (65 bytes, uncompressed, base64url), the same
    /// on every request, from the key file it creates (mode 0600) when there is none; 404 when Web Push is off.
    @Test func thePushKeyIsTheVAPIDPublicKeyOr404WhenWebPushIsOff() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await app.login("ana")
            let off = try await app.send("GET", "/api/v1/push/key", token: ana)
            #expect(off.status == 404 && off.body.contains("Web Push is not configured"), "\(off.body)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vapid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("vapid.pem").path
        try await OwnerAppTests.withApp(configure: { $0.alerts.vapidKeyFile = file }) { app in
            #expect(try await app.send("GET", "/api/v1/push/key").status == 401)
            let ana = try await app.login("ana")
            let first = try await app.send("GET", "/api/v1/push/key", token: ana)
            #expect(first.status == 200, "\(first.body)")
            guard case .string(let key)? = first.json?["key"] else { throw HarnessError("no key: \(first.body)") }
            // 65 bytes are 87 base64url characters; the first byte, 0x04 (uncompressed), makes the first "B".
            #expect(key.count == 87 && key.hasPrefix("B"), "\(key)")
            #expect(key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            let bob = try await app.login("bob")
            let again = try await app.send("GET", "/api/v1/push/key", token: bob)
            #expect(again.json?["key"] == .string(key))
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("PRIVATE KEY"))
        }
    }
}
