import Foundation
import Postgres
import ServiceTestSupport
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

/// How the writer cuts the spool into batches when it falls behind.
@Suite(.serialized) struct BatchingTests {
    /// The database stalls while 5,000 readings arrive. Once it answers, the backlog goes in as few
    /// transactions as `batch_max_rows` allows — not one per slice the writer reads from the spool,
    /// although every waiting reading is older than the batch delay.
    @Test func aBacklogIsWrittenInFullBatches() async throws {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.ingest.batchMaxRows = 10_000
        let codes = (0..<5).map { "backlog-\($0)" }
        try Harness.register(codes, databaseURL: url)
        let topicPrefix = configuration.mqtt.topicPrefix
        let start = Date()
        let total = 5_000
        func payload(_ n: Int) -> [UInt8] {
            Payloads.reading(ts: start.addingTimeInterval(Double(n / codes.count) * 0.1), seq: n / codes.count)
        }

        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try publisher.publish("\(topicPrefix)/\(codes[0])/telemetry", payload: payload(0))
            try await Harness.waitUntil(timeout: 30, "the first reading stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }

            // Inserts into `samples` wait for this lock: the writer stalls inside its next batch.
            let blocker = try PostgresConnection(connectionString: url)
            defer { blocker.close() }
            try blocker.execute("BEGIN")
            try blocker.execute("LOCK TABLE samples IN EXCLUSIVE MODE")
            for n in 1...total {
                try publisher.publish("\(topicPrefix)/\(codes[n % codes.count])/telemetry", payload: payload(n))
                if n % 500 == 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            try await Harness.waitUntil(timeout: 60, "the backlog spooled") {
                service.metrics.snapshot().spoolRecordsPending == total
            }
            try blocker.execute("COMMIT")
            try await Harness.waitUntil(timeout: 60, "the backlog stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == total + 1
            }
        }
        // One transaction for the first reading, one for what the stalled batch held, one for the
        // rest (the writer reads the spool 1,000 records at a time).
        let transactions = try Harness.count(url, "SELECT count(DISTINCT xmin::text) FROM samples_stored")
        #expect(transactions <= 3, "\(transactions) transactions for \(total + 1) readings")
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_totals") == total + 1)
    }

    /// While PostgreSQL writes one batch, the writer reads and classifies the next (BatchCommitter): a
    /// message that arrives while a batch is stalled in the database is classified at once (its repeated
    /// reading counted), and stored only after the stalled batch, each exactly once.
    @Test func theNextBatchIsClassifiedWhileTheDatabaseWritesOne() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["overlap-1"], databaseURL: url)
        let topic = "\(configuration.mqtt.topicPrefix)/overlap-1/telemetry"
        let start = Date()

        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            try publisher.publish(topic, payload: Payloads.reading(ts: start, seq: 1))
            try await Harness.waitUntil(timeout: 30, "the first reading stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 1
            }

            let blocker = try PostgresConnection(connectionString: url)
            defer { blocker.close() }
            try blocker.execute("BEGIN")
            try blocker.execute("LOCK TABLE samples IN EXCLUSIVE MODE")
            try publisher.publish(topic, payload: Payloads.reading(ts: start.addingTimeInterval(1), seq: 2))
            try await Harness.waitUntil(timeout: 30, "the writer waiting for the lock inside its batch") {
                try Harness.count(
                    url,
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE application_name = 'outletd-writer' AND wait_event_type = 'Lock'
                    """) == 1
            }
            // Two readings at one time in one message: the second is a duplicate, counted when classified.
            let at = Int64(start.addingTimeInterval(2).timeIntervalSince1970 * 1000)
            let repeated = #"[{"voltage":230,"current":1,"ts":\#(at)},{"voltage":231,"current":1,"ts":\#(at)}]"#
            try publisher.publish(topic, payload: Array(repeated.utf8))
            try await Harness.waitUntil(timeout: 30, "the message classified while the batch before waits") {
                service.metrics.snapshot().readingsDuplicate == 1
            }
            #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 1)

            try blocker.execute("COMMIT")
            try await Harness.waitUntil(timeout: 30, "both batches stored") {
                try Harness.count(url, "SELECT count(*) FROM samples") == 3
                    && service.metrics.snapshot().spoolRecordsPending == 0
            }
        }
        #expect(try Harness.count(url, "SELECT count(DISTINCT xmin::text) FROM samples_stored") == 3)
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_totals") == 3)
        #expect(try Harness.scalar(url, "SELECT voltage_volts FROM samples ORDER BY measured_at DESC LIMIT 1") == "230")
    }
}
