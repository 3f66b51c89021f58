import Foundation
import Postgres
import Storage
import Synchronization
import Testing

/// Shared set-up of the tests that talk to PostgreSQL: a migrated database of their own, outlets registered, one-value
/// queries, waiting for a condition. ServiceTestSupport adds a service's configuration pointing at the test stack, the
/// integration tests the in-process service and the publisher (Tests/IngestTests/Harness.swift).
public enum Harness {
    /// A fresh, migrated database; returns its connection string.
    public static func migratedDatabase(on stack: TestStack? = nil) throws -> String {
        let url = try (stack ?? TestStack.shared()).createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator().migrate(connection)
        return url
    }

    public static func register(_ codes: [String], databaseURL: String) throws {
        let connection = try PostgresConnection(connectionString: databaseURL)
        defer { connection.close() }
        try DeviceStore(connection: connection).addMany(codes: codes)
    }

    /// Polls `condition` every 50 ms until it holds; fails the test after `timeout` seconds.
    public static func waitUntil(
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

    /// A one-value query through psql.
    public static func scalar(_ databaseURL: String, _ sql: String) throws -> String {
        try TestStack.shared().psql(databaseURL, sql).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public static func count(_ databaseURL: String, _ sql: String) throws -> Int {
        Int(try scalar(databaseURL, sql)) ?? -1
    }

    /// Each outlet's running totals are those of its stored samples, whichever way its batches went (straight
    /// into `samples`, or the careful way after a replayed reading): count, peak, the earliest time of the peak,
    /// first and last time exactly; the power sum to within 1e-9 of it (the order of the additions may differ).
    public static func expectTotalsAreThoseOfTheSamples(_ url: String, _ comment: Comment? = nil) throws {
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
    public static func outletsWithTotalsAsRecomputed(_ databaseURL: String) throws -> Int {
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

public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A value shared between a callback thread and a test, behind a `Mutex`.
public final class Locked<Value: Sendable>: Sendable {
    private let box: Mutex<Value>

    public init(_ value: Value) { box = Mutex(value) }

    public var value: Value {
        get { box.withLock { $0 } }
        set { box.withLock { $0 = newValue } }
    }

    /// Changes the value in place under the lock (a read-modify-write no other thread can interleave).
    public func withValue<Result>(_ body: (inout Value) -> Result) -> Result {
        box.withLock { body(&$0) }
    }
}
