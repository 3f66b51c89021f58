import Foundation
import Logging
import MQTT
import Postgres
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage

/// Shared set-up of the integration tests: a migrated database of their own, a configuration
/// pointing at the test stack, an in-process service or an `outletd` process, and a publisher.
enum Harness {
    /// A fresh, migrated database; returns its connection string.
    static func migratedDatabase(on stack: TestStack? = nil) throws -> String {
        let url = try (stack ?? TestStack.shared()).createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator().migrate(connection)
        return url
    }

    /// A configuration for one test: its own database, topic prefix and instance id.
    static func configuration(databaseURL: String) throws -> OutletdConfiguration {
        var configuration = OutletdConfiguration()
        configuration.database.url = databaseURL
        configuration.mqtt.url = try TestStack.shared().mqttURL
        configuration.mqtt.topicPrefix = TestStack.uniqueName("p") + "/outlets"
        configuration.instanceID = TestStack.uniqueName("outletd-test-")
        // Share groups of their own: the broker is shared by all tests, Tasmota and Shelly topics carry no
        // test prefix, and mosquitto keeps handing a group's messages to the stopped sessions of earlier tests.
        configuration.mqtt.shareGroup = TestStack.uniqueName("g")
        configuration.commands.shareGroup = TestStack.uniqueName("g")
        // In the test stack's folder, which goes away when the test process exits.
        configuration.spool.directory = "\(try TestStack.shared().directory)/spool-\(configuration.instanceID)"
        configuration.spool.segmentBytes = 256 * 1024
        configuration.spool.maxBytes = 64 << 20
        configuration.ingest.batchMaxDelayMilliseconds = 50
        configuration.rejections.logIntervalSeconds = 3_600
        return configuration
    }

    static func register(_ codes: [String], databaseURL: String) throws {
        let connection = try PostgresConnection(connectionString: databaseURL)
        defer { connection.close() }
        try DeviceStore(connection: connection).addMany(codes: codes)
    }

    /// Runs `body` with a running in-process service, then shuts it down gracefully.
    static func withService<T>(
        _ configuration: OutletdConfiguration, _ body: (IngestService) async throws -> T
    ) async throws -> T {
        var logger = Logger(label: "test")
        logger.logLevel = ProcessInfo.processInfo.environment["OUTLETD_TEST_LOG"] == nil ? .warning : .debug
        let service = IngestService(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }
        do {
            try await waitForStatus(configuration, "online")
            let result = try await body(service)
            await group.triggerGracefulShutdown()
            try await running.value
            return result
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await running.value
            throw error
        }
    }

    /// Waits until `outletd/<instance>/status` carries `expected` (retained), i.e. the daemon is
    /// connected and subscribed.
    static func waitForStatus(_ configuration: OutletdConfiguration, _ expected: String, timeout: Double = 30)
        async throws
    {
        let seen = Locked<String?>(nil)
        let topic = "outletd/\(configuration.instanceID)/status"
        let client = try MQTTClient(
            configuration: MQTTConfiguration(url: configuration.mqtt.url, clientID: TestStack.uniqueName("watch-"))
        ) { message in
            if message.topic == topic { seen.value = String(decoding: message.payload, as: UTF8.self) }
        }
        client.setSubscriptions([(filter: topic, qos: 1)])
        try client.start()
        defer { client.stop() }
        try await waitUntil(timeout: timeout, "status \(expected) on \(topic)") { seen.value == expected }
    }

    /// Polls `condition` every 50 ms until it holds; fails the test after `timeout` seconds.
    static func waitUntil(
        timeout: Double, _ what: @autoclosure () -> String, _ condition: () throws -> Bool
    ) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        if try condition() { return }
        throw HarnessError("timed out after \(timeout) s waiting for \(what())")
    }

    /// A publisher that counts broker acknowledgements.
    static func publisher(on stack: TestStack? = nil) throws -> MQTTClient {
        var configuration = try MQTTConfiguration(
            url: (stack ?? TestStack.shared()).mqttURL, clientID: TestStack.uniqueName("pub-"))
        configuration.cleanStart = true
        configuration.sessionExpiryInterval = 0
        let client = try MQTTClient(configuration: configuration) { _ in }
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(10)) else {
            throw HarnessError("publisher did not connect")
        }
        return client
    }

    /// A one-value query through psql.
    static func scalar(_ databaseURL: String, _ sql: String) throws -> String {
        try TestStack.shared().psql(databaseURL, sql).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func count(_ databaseURL: String, _ sql: String) throws -> Int {
        Int(try scalar(databaseURL, sql)) ?? -1
    }

    /// Each outlet's running totals are those of its stored samples, whichever way its batches went (straight
    /// into `samples`, or the careful way after a replayed reading): count, peak, the earliest time of the peak,
    /// first and last time exactly; the power sum to within 1e-9 of it (the order of the additions may differ).
    static func expectTotalsAreThoseOfTheSamples(_ url: String, _ comment: Comment? = nil) throws {
        let mismatches = try Harness.count(
            url,
            """
            SELECT count(*) FROM (SELECT device_id, count(*) AS n, sum(power_watts) AS power_sum, max(power_watts) AS peak,
                                         (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1] AS peak_at,
                                         min(measured_at) AS first_at, max(measured_at) AS last_at
                                  FROM samples GROUP BY device_id) s
            FULL JOIN device_power_totals t USING (device_id)
            WHERE s.n IS DISTINCT FROM t.sample_count OR s.peak IS DISTINCT FROM t.peak_power_watts
               OR s.peak_at IS DISTINCT FROM t.peak_at OR s.first_at IS DISTINCT FROM t.first_measured_at
               OR s.last_at IS DISTINCT FROM t.last_measured_at
               OR NOT coalesce(abs(s.power_sum - t.power_sum_watts) <= 1e-9 * abs(s.power_sum) + 1e-9, false)
            """)
        #expect(
            mismatches == 0,
            "outlets whose totals are not those of their samples: \(mismatches) \(comment?.rawValue ?? "")")
    }

    /// How many outlets' running totals (count, power sum, peak) equal their recomputation from `samples`.
    static func outletsWithTotalsAsRecomputed(_ databaseURL: String) throws -> Int {
        try count(
            databaseURL,
            """
            SELECT count(*) FROM device_power_totals t
            JOIN (SELECT device_id, count(*) AS n, sum(power_watts) AS s, max(power_watts) AS p
                  FROM samples GROUP BY device_id) r USING (device_id)
            WHERE t.sample_count = r.n AND abs(t.power_sum_watts - r.s) < 1e-6 AND t.peak_power_watts = r.p
            """)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A value shared between a callback thread and a test, behind a `Mutex`.
final class Locked<Value: Sendable>: Sendable {
    private let box: Mutex<Value>

    init(_ value: Value) { box = Mutex(value) }

    var value: Value {
        get { box.withLock { $0 } }
        set { box.withLock { $0 = newValue } }
    }

    /// Changes the value in place under the lock (a read-modify-write no other thread can interleave).
    func withValue<Result>(_ body: (inout Value) -> Result) -> Result {
        box.withLock { body(&$0) }
    }
}

/// Native-protocol payloads for tests.
enum Payloads {
    static func reading(voltage: Double = 227.1, current: Double = 0.5, power: Double? = nil, ts: Date, seq: Int)
        -> [UInt8]
    {
        var json =
            #"{"voltage":\#(voltage),"current":\#(current),"ts":\#(Int64(ts.timeIntervalSince1970 * 1000)),"seq":\#(seq)"#
        if let power { json += #","power":\#(power)"# }
        return Array((json + "}").utf8)
    }
}
