import Alerts
import Foundation
import Logging
import Observability
import Postgres
import Runtime
import ServiceTestSupport
import TestSupport
import Testing
import WritePath

@testable import Daemon
@testable import Storage

/// Alerts against PostgreSQL: each kind opens and resolves on the right data, a flapping outlet is one incident,
/// three runners racing open each incident once, and another owner finds none of an owner's ids (docs/ALERTS.md).
@Suite(.serialized) struct AlertStoreTests {
    /// A database with owners ana and bea, ana's outlets `a-1`…`a-n` and bea's `b-1`; returns the URL and ids.
    static func setUp(outlets: Int = 2) throws -> (url: String, ana: Int64, bea: Int64) {
        let url = try Harness.migratedDatabase()
        let codes = (1...outlets).map { "a-\($0)" } + ["b-1"]
        try Harness.register(codes, databaseURL: url)
        let ana = try Int64(
            Harness.scalar(url, "INSERT INTO app_users (name, password_hash) VALUES ('ana', '$2b$x') RETURNING id"))
        let bea = try Int64(
            Harness.scalar(url, "INSERT INTO app_users (name, password_hash) VALUES ('bea', '$2b$x') RETURNING id"))
        _ = try Harness.scalar(
            url,
            """
            UPDATE devices SET owner_id = CASE WHEN code LIKE 'a-%' THEN \(ana ?? 0) ELSE \(bea ?? 0) END
            RETURNING 1
            """)
        return (url, try #require(ana), try #require(bea))
    }

    /// Sets outlet `code`'s reading history: `count` readings every `interval` seconds, the newest `age` ago.
    static func readings(_ url: String, _ code: String, age: Double, interval: Double = 10, count: Int = 100) throws {
        _ = try Harness.scalar(
            url,
            """
            INSERT INTO device_power_totals (device_id, sample_count, power_sum_watts, peak_power_watts, peak_at,
                                             first_measured_at, last_measured_at)
            SELECT id, \(count), 0, 0, now(), now() - make_interval(secs => \(age + interval * Double(count - 1))),
                   now() - make_interval(secs => \(age))
            FROM devices WHERE code = '\(code)'
            ON CONFLICT (device_id) DO UPDATE SET first_measured_at = EXCLUDED.first_measured_at,
                last_measured_at = EXCLUDED.last_measured_at, sample_count = EXCLUDED.sample_count
            RETURNING 1
            """)
    }

    static func runner() -> AlertRunner {
        AlertRunner(
            settings: .init(instanceID: "test", intervalSeconds: 1, slowIntervalSeconds: 1),
            makeStore: { AlertSQLStore(connection: $0) }, metricsFactory: IngestMetrics().factory,
            logger: Logger(label: "test"))
    }

    /// One round (all kinds) on a connection of its own.
    @discardableResult
    static func round(_ url: String) throws -> AlertRoundSummary? {
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        return try runner().round(AlertSQLStore(connection: connection), slow: true)
    }

    static func withStore<T>(_ url: String, _ body: (AlertSQLStore) throws -> T) throws -> T {
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        return try body(AlertSQLStore(connection: connection))
    }

    static func set(
        _ url: String, _ scope: AlertScope, _ kind: AlertKind, _ code: String?, _ parameters: AlertParameters
    ) throws -> AlertRuleRecord {
        try withStore(url) { store in
            let rule = try AlertRule.validated(kind: kind, parameters: parameters, wholeFleet: code == nil)
            return try store.setRule(scope, code: code, rule: rule, createdBy: "owner:test", maxRules: 50).get()
        }
    }

    /// "code:state" of every incident, in order.
    static func incidents(_ url: String) throws -> String {
        try Harness.scalar(
            url,
            """
            SELECT coalesce(string_agg(coalesce(d.code, '*') || ':' || i.state, ' ' ORDER BY i.id), '')
            FROM alert_incidents i LEFT JOIN devices d ON d.id = i.device_id
            """)
    }

    @Test func offlineOpensWithoutReadingsAndResolvesWhenTheyComeBack() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .offline, nil, .init(resolveAfterSeconds: 0))
        // Every 10 s: after is 60 s. a-1 silent for 90 s, a-2 for 20 s.
        try Self.readings(url, "a-1", age: 90)
        try Self.readings(url, "a-2", age: 20)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:open")
        // Readings every 60 s: after is 180 s, a-1 at 90 s is not offline any more.
        try Self.readings(url, "a-1", age: 90, interval: 60)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved")
        // The device says so (its will): offline at once, until a reading comes after it.
        _ = try Harness.scalar(
            url, "UPDATE devices SET online = false, last_seen_at = now() WHERE code = 'a-2' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved a-2:open")
        try Self.readings(url, "a-2", age: -1)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved a-2:resolved")
        #expect(
            try Harness.scalar(url, "SELECT string_agg(event, ' ' ORDER BY id) FROM alert_history")
                == "opened resolved opened resolved")
    }

    @Test func aFlappingOutletIsOneIncident() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .offline, "a-1", .init())  // resolve_after: 120 s
        try Self.readings(url, "a-1", age: 1)
        for round in 0..<20 {
            // Offline (its will) and back every other round.
            let offline = round % 2 == 0
            _ = try Harness.scalar(
                url,
                """
                UPDATE devices SET online = \(!offline), last_seen_at = now() + make_interval(secs => \(round))
                WHERE code = 'a-1' RETURNING 1
                """)
            if !offline { try Self.readings(url, "a-1", age: -Double(round) - 0.5) }
            try Self.round(url)
        }
        #expect(try Self.incidents(url) == "a-1:open")
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_events WHERE event = 'opened'") == 1)
        // Clear for longer than resolve_after: resolved, once.
        _ = try Harness.scalar(url, "UPDATE alert_watches SET clear_since = now() - interval '121 seconds' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved")
    }

    @Test func onTooLongWaitsForItsTimeAndResolvesWhenSwitchedOff() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .onTooLong, "a-1", .init(forSeconds: 600, resolveAfterSeconds: 0))
        _ = try Harness.scalar(url, "UPDATE devices SET reported_state = 'on' WHERE code = 'a-1' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "")
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_watches WHERE met_since IS NOT NULL") == 1)
        _ = try Harness.scalar(url, "UPDATE alert_watches SET met_since = now() - interval '601 seconds' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:open")
        _ = try Harness.scalar(url, "UPDATE devices SET reported_state = 'off' WHERE code = 'a-1' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved")
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_watches") == 0)
    }

    @Test func onTooLongAboveWattsFollowsTheNewestReading() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(
            url, .owner(ana), .onTooLong, "a-1", .init(forSeconds: 60, watts: 1_000, resolveAfterSeconds: 0))
        func power(_ watts: Double) throws {
            _ = try Harness.scalar(
                url,
                """
                INSERT INTO rollup_tails (device_id, measured_at, power_watts)
                SELECT id, now(), \(watts) FROM devices WHERE code = 'a-1'
                ON CONFLICT (device_id) DO UPDATE SET measured_at = now(), power_watts = EXCLUDED.power_watts
                RETURNING 1
                """)
        }
        try power(1_800)
        try Self.round(url)
        _ = try Harness.scalar(url, "UPDATE alert_watches SET met_since = now() - interval '61 seconds' RETURNING 1")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:open")
        try power(3)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved")
    }

    @Test func standbyAboveWattsOpensAndResolves() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .standby, "a-1", .init(watts: 5))
        func hours(minimum: Double) throws {
            _ = try Harness.scalar(
                url,
                """
                INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
                    power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at,
                    energy_wh, last_power_watts, last_at)
                SELECT d.id, date_trunc('hour', now()) - h * interval '1 hour', 360, 0, 0, 3600, \(minimum), 100,
                       now(), 1, 10, now()
                FROM devices d, generate_series(1, 48) h WHERE d.code = 'a-1'
                ON CONFLICT (device_id, bucket_start) DO UPDATE SET min_power_watts = EXCLUDED.min_power_watts
                RETURNING 1
                """)
        }
        try hours(minimum: 12)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:open")
        #expect(try Harness.scalar(url, "SELECT observed FROM alert_incidents") == "12.0")
        try hours(minimum: 2)
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved")
    }

    @Test func budgetOpensWhenTheProjectedMonthIsOverTheAmountForOneOutletOrAll() throws {
        let (url, ana, _) = try Self.setUp()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        try DeviceStore(connection: connection).setTimeZone("a-1", "UTC")
        let deviceID = try #require(try DeviceStore(connection: connection).find("a-1")?.id)
        try TariffFixtures.set(url, "flat", "currency: EUR\nvalid_from: 2026-01-01\nprice_per_kwh: 1.00\n")
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "assign", "flat", "--default"],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        // 1 kW for the last half hour of this month: about 0.5 EUR so far, projected to the whole month.
        let start = max(
            Date().addingTimeInterval(-1_800),
            try #require(Calendar(identifier: .gregorian).dateInterval(of: .month, for: Date())?.start))
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: start.formatted(.iso8601),
            to: Date().addingTimeInterval(-10).formatted(.iso8601))
        let projected = try Double(
            Harness.scalar(
                url,
                """
                SELECT sum(c.cost) * extract(epoch FROM date_trunc('month', now(), 'UTC') + interval '1 month'
                                             - date_trunc('month', now(), 'UTC'))
                       / extract(epoch FROM now() - date_trunc('month', now(), 'UTC'))
                FROM outletd_outlet_cost('a-1', date_trunc('month', now(), 'UTC'), now()) c
                """))
        let total = try #require(projected)
        #expect(total > 0.01)
        let over = String(format: "%.2f", total * 0.8)
        let under = String(format: "%.2f", total * 2 + 1)
        _ = try Self.set(url, .owner(ana), .budget, "a-1", .init(amount: over))
        _ = try Self.set(url, .owner(ana), .budget, nil, .init(amount: under))
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:open")
        #expect(try Harness.scalar(url, "SELECT currency FROM alert_incidents") == "EUR")
        // All outlets: over too when its amount is lower; the outlet's resolves when its amount is raised.
        _ = try Self.set(url, .owner(ana), .budget, nil, .init(amount: over))
        _ = try Self.set(url, .owner(ana), .budget, "a-1", .init(amount: under))
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-1:resolved *:open")
    }

    @Test func commandFailedOpensOnAnUnconfirmedSwitchAndResolvesOnAConfirmedOne() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .commandFailed, nil, .init())
        func command(_ status: String, source: String = "app") throws {
            _ = try Harness.scalar(
                url,
                """
                INSERT INTO commands (device_id, requested, state, source, status, expires_at, finished_at)
                SELECT id, 'on', 'on', '\(source)', '\(status)', now() + interval '1 minute', clock_timestamp()
                FROM devices WHERE code = 'a-2' RETURNING 1
                """)
        }
        try command("timed_out", source: "cli")  // not the owner's nor an automation's
        try Self.round(url)
        #expect(try Self.incidents(url) == "")
        try command("timed_out", source: "automation")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-2:open")
        #expect(try Harness.scalar(url, "SELECT observed FROM alert_incidents") == "timed_out")
        try command("confirmed")
        try Self.round(url)
        #expect(try Self.incidents(url) == "a-2:resolved")
    }

    @Test func threeRunnersRacingOpenEachIncidentOnceAndQueueEachDeliveryOnce() async throws {
        let (url, ana, _) = try Self.setUp(outlets: 60)
        _ = try Self.set(url, .owner(ana), .offline, nil, .init())
        _ = try Self.withStore(url) { store in
            try store.addChannel(.owner(ana), .init(kind: .email, target: "ana@example.com"), maxChannels: 10).get()
        }
        for index in 1...60 { try Self.readings(url, "a-\(index)", age: index <= 40 ? 300 : 1) }
        // Three instances, each with its connection, racing 30 rounds each.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await Blocking.run {
                        let connection = try PostgresConnection(connectionString: url)
                        defer { connection.close() }
                        var taken = 0
                        for _ in 0..<30
                        where try Self.runner().round(AlertSQLStore(connection: connection), slow: false) != nil {
                            taken += 1
                        }
                        return taken
                    }
                }
            }
            var taken = 0
            for try await count in group { taken += count }
            #expect(taken >= 1)
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_incidents") == 40)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_events WHERE event = 'opened'") == 40)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_deliveries") == 40)
    }

    @Test func anotherOwnerFindsNoneOfAnOwnersIds() throws {
        let (url, ana, bea) = try Self.setUp()
        let rule = try Self.set(url, .owner(ana), .offline, "a-1", .init(resolveAfterSeconds: 0))
        try Self.readings(url, "a-1", age: 500)
        try Self.round(url)
        try Self.withStore(url) { store in
            let channel = try store.addChannel(
                .owner(ana), .init(kind: .webhook, target: "https://example.com/h", secret: "whsec_x"), maxChannels: 10
            ).get()
            let incident = try #require(try store.incidents(.owner(ana)).first)
            // bea: nothing to see, nothing to change.
            #expect(try store.rules(.owner(bea)).isEmpty)
            #expect(try store.incidents(.owner(bea)).isEmpty)
            #expect(try store.channels(.owner(bea)).isEmpty)
            #expect(try store.history(.owner(bea)).isEmpty)
            #expect(try !store.acknowledge(.owner(bea), id: incident.id, by: "bea"))
            #expect(try !store.snooze(.owner(bea), id: incident.id, until: Date(), by: "bea"))
            #expect(try !store.removeRule(.owner(bea), id: rule.id))
            #expect(try !store.removeChannel(.owner(bea), id: channel.id))
            // Nor set a rule on ana's outlet.
            let offline = try AlertRule.validated(kind: .offline, parameters: .init())
            #expect(
                try store.setRule(.owner(bea), code: "a-1", rule: offline, createdBy: "owner:bea", maxRules: 50)
                    == .failure(.noSuchOutlet))
            // ana can.
            #expect(try store.acknowledge(.owner(ana), id: incident.id, by: "ana"))
            #expect(try store.incidents(.owner(ana)).first?.acknowledgedAt != nil)
        }
    }

    @Test func limitsPerOwner() throws {
        let (url, ana, _) = try Self.setUp(outlets: 3)
        try Self.withStore(url) { store in
            let offline = try AlertRule.validated(kind: .offline, parameters: .init())
            for code in ["a-1", "a-2"] {
                _ = try store.setRule(.owner(ana), code: code, rule: offline, createdBy: "t", maxRules: 2).get()
            }
            // Setting an existing rule again is a change, not one more.
            #expect(try store.setRule(.owner(ana), code: "a-2", rule: offline, createdBy: "t", maxRules: 2).isSuccess)
            #expect(
                try store.setRule(.owner(ana), code: "a-3", rule: offline, createdBy: "t", maxRules: 2)
                    == .failure(.tooMany(what: "alert rules", limit: 2)))
            _ = try store.addChannel(.owner(ana), .init(kind: .email, target: "a@example.com"), maxChannels: 1).get()
            #expect(
                try store.addChannel(.owner(ana), .init(kind: .email, target: "b@example.com"), maxChannels: 1)
                    == .failure(.tooMany(what: "alert channels", limit: 1)))
        }
    }

    @Test func beyondTheOwnersMessagesPerHourDeliveriesAreRecordedAsFailedAndSnoozedIncidentsQueueNone() throws {
        let (url, ana, _) = try Self.setUp(outlets: 3)
        _ = try Self.set(url, .owner(ana), .offline, nil, .init(resolveAfterSeconds: 0))
        _ = try Self.withStore(url) { store in
            for address in ["a@example.com", "b@example.com"] {
                _ = try store.addChannel(.owner(ana), .init(kind: .email, target: address), maxChannels: 10).get()
            }
        }
        try Self.readings(url, "a-1", age: 500)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let store = AlertSQLStore(connection: connection, maxMessagesPerHour: 3)
        try Self.runner().round(store, slow: false)
        // Opened: two deliveries. Resolved: two more, the second beyond the limit of 3.
        try Self.readings(url, "a-1", age: -1)
        try Self.runner().round(store, slow: false)
        #expect(
            try Harness.scalar(
                url,
                "SELECT string_agg(event || ':' || status || ':' || coalesce(last_error, ''), ' ' ORDER BY id) "
                    + "FROM alert_deliveries")
                == "opened:pending: opened:pending: resolved:pending: resolved:failed:messages per hour limit")
        // A snoozed incident queues nothing.
        try Self.readings(url, "a-2", age: 500)
        try Self.runner().round(store, slow: false)
        let incident = try Harness.scalar(url, "SELECT max(id) FROM alert_incidents")
        #expect(
            try store.snooze(.owner(ana), id: Int64(incident) ?? 0, until: Date().addingTimeInterval(600), by: "ana"))
        let before = try Harness.count(url, "SELECT count(*) FROM alert_deliveries")
        try Self.readings(url, "a-2", age: -1)
        try Self.runner().round(store, slow: false)
        #expect(try Harness.count(url, "SELECT count(*) FROM alert_deliveries") == before)
        #expect(try Harness.scalar(url, "SELECT state FROM alert_incidents WHERE id = \(incident)") == "resolved")
    }

    /// A sender that fails every delivery to one address and takes the others.
    struct PickySender: AlertSender {
        var refused: String
        func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure) {
            if job.target == refused { throw .retryable("connection refused") }
        }
    }

    @Test func aFailingChannelIsRetriedWithBackoffAndShownWhileOthersAreSent() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .offline, "a-1", .init())
        let (good, bad) = try Self.withStore(url) { store in
            (
                try store.addChannel(.owner(ana), .init(kind: .email, target: "ok@example.com"), maxChannels: 10).get(),
                try store.addChannel(.owner(ana), .init(kind: .email, target: "no@example.com"), maxChannels: 10).get()
            )
        }
        try Self.readings(url, "a-1", age: 500)
        try Self.round(url)
        let loop = AlertDeliveryLoop(
            senders: [.email: PickySender(refused: "no@example.com")], makeStore: { AlertSQLStore(connection: $0) },
            metricsFactory: IngestMetrics().factory, logger: Logger(label: "test"))
        let handled = try Self.withStore(url) { try loop.drainOnce($0) }
        #expect(handled == 2)
        #expect(
            try Harness.scalar(
                url,
                """
                SELECT string_agg(channel_id || ':' || status || ':' || attempts || ':'
                                  || (status <> 'pending' OR next_attempt_at
                                      BETWEEN now() + interval '25 seconds' AND now() + interval '35 seconds'),
                                  ' ' ORDER BY channel_id)
                FROM alert_deliveries
                """) == "\(good.id):sent:1:true \(bad.id):pending:1:true")
        let channels = try Self.withStore(url) { try $0.channels(.owner(ana)) }
        #expect(channels.first { $0.id == bad.id }?.failingSince != nil)
        #expect(channels.first { $0.id == bad.id }?.lastError == "connection refused")
        #expect(channels.first { $0.id == good.id }?.failingSince == nil)
        // Nothing due now: the failing one waits for its backoff.
        #expect(try Self.withStore(url) { try loop.drainOnce($0) } == 0)
        #expect(
            try Harness.scalar(url, "SELECT string_agg(event, ' ' ORDER BY id) FROM alert_history")
                == "opened delivered delivery_failed")
    }

    /// A sender that records what it was asked to send.
    final class RecordingSender: AlertSender {
        let sent = Guarded<[String]>([])
        func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure) { sent.withLock { $0.append(job.target) } }
    }

    /// With `durability: replicated` the loop sends a claim only once a standby has it; one that has not caught up
    /// gets the claims back, their attempt not counted, and nothing is sent. Without a standby it sends at once. A
    /// channel paused between the claim and the send gets nothing.
    @Test func claimsAStandbyHasNotFlushedGoBackUnsent() throws {
        let (url, ana, _) = try Self.setUp()
        _ = try Self.set(url, .owner(ana), .offline, "a-1", .init())
        let paused = try Self.withStore(url) { store in
            _ = try store.addChannel(.owner(ana), .init(kind: .email, target: "ok@example.com"), maxChannels: 10).get()
            return try store.addChannel(.owner(ana), .init(kind: .email, target: "p@example.com"), maxChannels: 10)
                .get()
        }
        try Self.readings(url, "a-1", age: 500)
        try Self.round(url)
        let sender = RecordingSender()
        let loop = AlertDeliveryLoop(
            senders: [.email: sender], makeStore: { AlertSQLStore(connection: $0) }, replicated: true,
            metricsFactory: IngestMetrics().factory, logger: Logger(label: "test"))
        var asked = 0
        let handled = try Self.withStore(url) { store in
            try loop.drainOnce(store) {
                asked += 1
                return false
            }
        }
        #expect(handled == 0 && asked == 1 && sender.sent.withLock { $0 }.isEmpty)
        #expect(
            try Harness.scalar(
                url,
                "SELECT string_agg(status || ':' || attempts || ':' || (next_attempt_at <= now()), ' ') "
                    + "FROM alert_deliveries") == "pending:0:true pending:0:true")
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        #expect(try AlertDeliveryLoop.standbyHasClaims(connection, timeout: 5, stop: StopFlag()))
        let sent = try Self.withStore(url) { store in
            try loop.drainOnce(store) {
                try store.setChannelEnabled(.owner(ana), id: paused.id, enabled: false)
            }
        }
        #expect(sent == 2 && sender.sent.withLock { $0 } == ["ok@example.com"])
        #expect(
            try Harness.scalar(
                url,
                "SELECT string_agg(status || ':' || coalesce(last_error, '-'), ' ' ORDER BY id) "
                    + "FROM alert_deliveries") == "sent:- failed:channel paused")
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
