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

/// A full disk under the spool: a clear error, intake paused (the broker queues), nothing corrupt,
/// and everything stored once space frees. The spool sits on a 1 MiB tmpfs (mounting needs root).
@Suite(.serialized) struct FullDiskTests {
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullDiskPausesIntakeAndLosesNothing() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try Harness.migratedDatabase(on: stack)
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = stack.mqttURL
        let codes = (0..<10).map { "plug-\($0)" }
        try Harness.register(codes, databaseURL: url)

        let disk = "\(stack.directory)/small-disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try TestStack.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk])
        defer { _ = try? TestStack.run(["umount", "-l", disk]) }
        configuration.spool.directory = disk
        configuration.spool.segmentBytes = 64 * 1_024
        configuration.spool.maxBytes = 64 << 20  // far above the disk: the disk fills first

        let daemon = try OutletdProcess.start(configuration)
        try await Harness.waitForStatus(configuration, "online")

        // The database goes away, so nothing leaves the spool while the readings pour in.
        let outage = Task { try await Blocking.run { try stack.restartPostgres(downFor: 12) } }
        try await Task.sleep(for: .seconds(1))
        let publisher = try Harness.publisher(on: stack)
        defer { publisher.stop() }
        let padding = String(repeating: "x", count: 900)
        let total = 1_500
        let start = Date()
        for n in 0..<total {
            var payload = Payloads.reading(ts: start.addingTimeInterval(Double(n / 10) * 0.1), seq: n / 10)
            payload.removeLast()  // the closing brace: add an unknown key outletd ignores
            payload += Array(#","note":"\#(padding)"}"#.utf8)
            try publisher.publish("\(configuration.mqtt.topicPrefix)/\(codes[n % 10])/telemetry", payload: payload)
        }
        try await Harness.waitUntil(timeout: 30, "the full-disk error in the log") {
            daemon.output.contains("spool write failed") && daemon.output.contains("No space left on device")
        }

        try await outage.value
        try await Harness.waitUntil(timeout: 120, "every reading stored once space freed") {
            try Harness.count(url, "SELECT count(*) FROM samples") == total
        }
        try await Harness.waitUntil(timeout: 30, "every message acknowledged") {
            publisher.acknowledgedCount == UInt64(total)
        }
        #expect(daemon.output.contains("spool intake resumed"))
        #expect(!daemon.output.contains("cut"), "the spool was repaired, so something was corrupt:\n\(daemon.output)")
        #expect(try Harness.count(url, "SELECT count(DISTINCT (device_id, seq)) FROM samples") == total / 10 * 10)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 60) == 0)
    }
}
