import Foundation
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

#if canImport(Glibc)
    import Glibc
#endif

/// Limits under attack: a flood of distinct unknown codes and oversized payloads leaves memory and
/// the rejection tables bounded, and readings of registered outlets keep being stored.
@Suite(.serialized) struct FloodTests {
    /// Resident memory of a process, KiB (VmRSS in /proc/<pid>/status).
    static func residentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
        return nil
    }

    @Test func floodOfUnknownCodesAndOversizedPayloadsStaysBounded() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let codes = (0..<10).map { "plug-\($0)" }
        try Harness.register(codes, databaseURL: url)
        let daemon = try OutletdProcess.start(
            configuration,
            extraEnvironment: [
                "OUTLETD_REJECTIONS_PENDING_DEVICES_MAX": "1000", "OUTLETD_REJECTIONS_KEEP_MESSAGES": "2000",
                "OUTLETD_INGEST_BATCH_MAX_DELAY_MS": "100",
            ])
        try await Harness.waitForStatus(configuration, "online")
        let startKiB = Self.residentKiB(daemon.child.pid) ?? 0

        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        let prefix = configuration.mqtt.topicPrefix
        let oversized = Array(repeating: UInt8(ascii: "x"), count: 65_537)
        let start = Date()
        var published = 0
        var validSent = 0
        for n in 0..<100_000 {
            try publisher.publish(
                "\(prefix)/intruder-\(n)/telemetry", payload: Array(#"{"voltage":230,"current":1}"#.utf8))
            published += 1
            if n % 500 == 0 {
                try publisher.publish("\(prefix)/plug-\(n % 10)/telemetry", payload: oversized)
                published += 1
            }
            if n % 100 == 0 {
                let seq = n / 100
                try publisher.publish(
                    "\(prefix)/\(codes[seq % 10])/telemetry",
                    payload: Payloads.reading(ts: start.addingTimeInterval(Double(seq) * 0.01), seq: seq))
                published += 1
                validSent += 1
            }
            if n % 2_000 == 1_999 {
                // Stay within the publisher's own in-flight window.
                try await Harness.waitUntil(timeout: 60, "acknowledgements") {
                    publisher.acknowledgedCount >= UInt64(published - 1_000)
                }
            }
        }
        try await Harness.waitUntil(timeout: 120, "every message acknowledged") {
            publisher.acknowledgedCount == UInt64(published)
        }
        try await Harness.waitUntil(timeout: 180, "every reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == validSent
        }
        try await Harness.waitUntil(timeout: 60, "every rejection counted") {
            try Harness.count(url, "SELECT coalesce(sum(count), 0) FROM rejection_counts") == 100_000 + 200
        }
        let endKiB = Self.residentKiB(daemon.child.pid) ?? 0
        #expect(try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = 'unknown_device'") == 100_000)
        #expect(try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = 'payload_too_large'") == 200)
        #expect(try Harness.count(url, "SELECT count(*) FROM pending_devices") == 1_000)
        #expect(try Harness.count(url, "SELECT count(*) FROM rejected_messages") <= 2_000)
        // Memory: what grows with distinct codes is bounded (registry misses, pending batches).
        print("MEASURE flood: RSS \(startKiB) KiB at start, \(endKiB) KiB after 100,200 rejected messages")
        #expect(endKiB < startKiB + 128 * 1_024, "RSS grew from \(startKiB) KiB to \(endKiB) KiB")
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 60) == 0)
    }
}
