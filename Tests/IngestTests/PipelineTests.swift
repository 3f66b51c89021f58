import Foundation
import MQTT
import ServiceTestSupport
import Telemetry
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

/// The whole pipeline in one process, against the real mosquitto and PostgreSQL.
@Suite(.serialized) struct PipelineTests {
    /// 10,000 readings from 100 outlets with 5 % invalid mixed in: exactly the valid ones are
    /// stored and every rejection is counted under its reason.
    @Test func storesExactlyTheValidReadingsAndCountsEachRejection() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = (0..<100).map { String(format: "plug-%03d", $0) }
        try Harness.register(codes, databaseURL: url)
        try Harness.register(["plug-off"], databaseURL: url)
        _ = try TestStack.shared().psql(url, "UPDATE devices SET enabled = false WHERE code = 'plug-off'")

        // Every 20th message is invalid, cycling through five kinds of bad input.
        let invalidKinds: [(reason: RejectionReason, topicCode: String?, payload: String)] = [
            (.outOfRange, nil, #"{"voltage":612.0,"current":1}"#),
            (.malformedJSON, nil, #"{"voltage":227.0,"current":"#),
            (.wrongType, nil, #"{"voltage":true,"current":1}"#),
            (.unknownDevice, "stranger-1", #"{"voltage":227.0,"current":1}"#),
            (.disabledDevice, "plug-off", #"{"voltage":227.0,"current":1}"#),
        ]
        let start = Date()
        var expectedValid = 0
        var expectedRejections: [RejectionReason: Int] = [:]
        var expectedPowerSum: [String: Double] = [:]
        var expectedCount: [String: Int] = [:]
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            for n in 0..<10_000 {
                let code = codes[n % 100]
                let seq = n / 100
                var topicCode = code
                let payload: [UInt8]
                if n % 20 == 19 {
                    let kind = invalidKinds[(n / 20) % invalidKinds.count]
                    topicCode = kind.topicCode ?? code
                    payload = Array(kind.payload.utf8)
                    expectedRejections[kind.reason, default: 0] += 1
                } else {
                    let power = Double(10 + (n % 7) * 100)
                    payload = Payloads.reading(
                        power: power, ts: start.addingTimeInterval(Double(seq) * 0.5), seq: seq)
                    expectedValid += 1
                    expectedPowerSum[code, default: 0] += power
                    expectedCount[code, default: 0] += 1
                }
                try publisher.publish("\(configuration.mqtt.topicPrefix)/\(topicCode)/telemetry", payload: payload)
            }
            try await Harness.waitUntil(timeout: 60, "broker acknowledgements") {
                publisher.acknowledgedCount == 10_000
            }
            try await Harness.waitUntil(timeout: 60, "all readings stored or rejected") {
                let metrics = service.metrics.snapshot()
                return metrics.readingsStored + metrics.rejectedTotal >= 10_000
            }
            let metrics = service.metrics.snapshot()
            #expect(metrics.messagesReceived == 10_000)
            #expect(metrics.readingsStored == UInt64(expectedValid))
            #expect(metrics.readingsDuplicate == 0)
        }
        #expect(expectedValid == 9_500)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 9_500)
        #expect(try Harness.count(url, "SELECT sum(sample_count) FROM device_power_summary") == 9_500)
        for (reason, count) in expectedRejections {
            #expect(
                try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = '\(reason.rawValue)'")
                    == count, "\(reason)")
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM rejected_messages") == 500)
        #expect(try Harness.scalar(url, "SELECT code FROM pending_devices") == "stranger-1")
        // Averages are those of the stored readings.
        // Outlet i sends only invalid messages when i % 20 == 19 (plug-019): it has no samples at all.
        #expect(
            try Harness.scalar(
                url, "SELECT sample_count, average_power_watts FROM device_power_summary WHERE code = 'plug-019'")
                == "0|")
        for code in ["plug-001", "plug-050", "plug-098"] {
            let average = try Harness.scalar(
                url, "SELECT round(average_power_watts::numeric, 6) FROM device_power_summary WHERE code = '\(code)'")
            let expectedAverage = (expectedPowerSum[code] ?? 0) / Double(expectedCount[code] ?? 1)
            #expect(abs((Double(average) ?? -1) - expectedAverage) < 1e-5, "\(code)")
            #expect(
                try Harness.count(url, "SELECT sample_count FROM device_power_summary WHERE code = '\(code)'")
                    == expectedCount[code])
        }
    }

    /// A native outlet's buffered readings without a device time are each stored, in order, a microsecond
    /// apart; of two readings with one device time the first in the message is kept, the same on every run;
    /// a message delivered again stores nothing new.
    @Test func bufferedReadingsWithoutTimesAreEachStoredAndATimeIsStoredOnce() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["buffer-1"], databaseURL: url)
        let topic = "\(configuration.mqtt.topicPrefix)/buffer-1/telemetry"
        let ts = Int64(Date().timeIntervalSince1970 * 1_000) - 60_000
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            let noTimes =
                #"[{"voltage":230,"current":1,"seq":1},{"voltage":230,"current":2,"seq":2},{"voltage":230,"current":3,"seq":3}]"#
            try await publisher.publishAcknowledged(topic, payload: Array(noTimes.utf8))
            let oneTime =
                #"[{"voltage":230,"current":4,"seq":4,"ts":\#(ts)},{"voltage":230,"current":5,"seq":5,"ts":\#(ts)}]"#
            try await publisher.publishAcknowledged(topic, payload: Array(oneTime.utf8))
            try await publisher.publishAcknowledged(topic, payload: Array(oneTime.utf8))
            try await Harness.waitUntil(timeout: 10, "every reading stored or counted a duplicate") {
                let metrics = service.metrics.snapshot()
                return metrics.readingsStored == 4 && metrics.readingsDuplicate == 3
            }
        }
        #expect(
            try Harness.scalar(url, "SELECT string_agg(seq::text, ',' ORDER BY measured_at) FROM samples") == "4,1,2,3")
        #expect(
            try Harness.scalar(
                url,
                """
                SELECT string_agg(extract(epoch FROM received_at - measured_at)::numeric(10, 6)::text, ',' ORDER BY seq)
                FROM samples WHERE seq <= 3
                """) == "0.000002,0.000001,0.000000")
        #expect(try Harness.count(url, "SELECT count(*) FROM rejection_counts") == 0)
    }

    /// An outlet registered while the daemon runs is accepted within a second, no restart.
    @Test func outletRegisteredAtRuntimeIsAccepted() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            let topic = "\(configuration.mqtt.topicPrefix)/late-1/telemetry"
            try await publisher.publishAcknowledged(topic, payload: Payloads.reading(ts: Date(), seq: 1))
            try await Harness.waitUntil(timeout: 10, "rejection as unknown") {
                service.metrics.snapshot().rejected[.unknownDevice] == 1
            }
            try Harness.register(["late-1"], databaseURL: url)
            try await Task.sleep(for: .seconds(1))
            try await publisher.publishAcknowledged(topic, payload: Payloads.reading(ts: Date(), seq: 2))
            try await Harness.waitUntil(timeout: 10, "the reading stored") {
                service.metrics.snapshot().readingsStored == 1
            }
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 1)
        #expect(try Harness.count(url, "SELECT seq FROM samples") == 2)
    }

    /// Disabling an outlet at runtime stops its readings; they are rejected, not stored.
    @Test func outletDisabledAtRuntimeIsRejected() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        try Harness.register(["plug-1"], databaseURL: url)
        try await Harness.withService(configuration) { service in
            let publisher = try Harness.publisher()
            defer { publisher.stop() }
            let topic = "\(configuration.mqtt.topicPrefix)/plug-1/telemetry"
            try await publisher.publishAcknowledged(topic, payload: Payloads.reading(ts: Date(), seq: 1))
            try await Harness.waitUntil(timeout: 10, "first reading stored") {
                service.metrics.snapshot().readingsStored == 1
            }
            _ = try TestStack.shared().psql(url, "UPDATE devices SET enabled = false WHERE code = 'plug-1'")
            try await Task.sleep(for: .seconds(1))
            try await publisher.publishAcknowledged(topic, payload: Payloads.reading(ts: Date(), seq: 2))
            try await Harness.waitUntil(timeout: 10, "second reading rejected") {
                service.metrics.snapshot().rejected[.disabledDevice] == 1
            }
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 1)
    }
}
