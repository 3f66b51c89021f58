import Foundation
import Logging
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

@Suite struct JSONLogHandlerTests {
    @Test func writesOneParsableObjectPerLine() throws {
        let lines = Locked<[String]>([])
        var handler = JSONLogHandler(label: "outletd") { line in lines.value.append(line) }
        handler.logLevel = .trace
        handler[metadataKey: "instance"] = "a"
        let logger = Logger(label: "outletd") { _ in handler }
        logger.notice(
            "message \"rejected\"\n\tagain \u{1}",
            metadata: ["reason": "malformed_json", "nested": ["k": "v", "list": ["1", "2"]]])
        let line = try #require(lines.value.first)
        #expect(line.hasSuffix("}\n"))
        #expect(line.filter { $0 == "\n" }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "notice")
        #expect(object["label"] as? String == "outletd")
        #expect(object["message"] as? String == "message \"rejected\"\n\tagain \u{1}")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["reason"] as? String == "malformed_json")
        #expect(metadata["instance"] as? String == "a")
        #expect((metadata["nested"] as? [String: Any])?["list"] as? [String] == ["1", "2"])
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }
}

/// Passwords in the broker and database URLs never reach the logs, at the most verbose level,
/// on the normal path and on the error path.
@Suite(.serialized) struct SecretsInLogsTests {
    @Test func passwordsNeverAppearInLogs() async throws {
        let stack = try TestStack.shared()
        let url = try Harness.migratedDatabase()
        let database = try #require(URL(string: url)?.path)
        var configuration = try Harness.configuration(databaseURL: url)
        // The test servers accept any password (trust, anonymous); the daemon must still hide it.
        configuration.database.url =
            "postgresql://postgres:s3cret-pg@127.0.0.1:\(stack.postgresPort)\(database)"
        configuration.mqtt.url = "mqtt://outletd:s3cret-mq@127.0.0.1:\(stack.mqttPort)"
        try Harness.register(["plug-1"], databaseURL: url)
        let verbose = ["OUTLETD_LOGGING_LEVEL": "trace", "OUTLETD_LOGGING_FORMAT": "json"]

        let daemon = try OutletdProcess.start(configuration, extraEnvironment: verbose)
        try await Harness.waitForStatus(configuration, "online")
        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        try await publisher.publishAcknowledged(
            "\(configuration.mqtt.topicPrefix)/plug-1/telemetry", payload: Payloads.reading(ts: Date(), seq: 1))
        try await publisher.publishAcknowledged(
            "\(configuration.mqtt.topicPrefix)/nobody/telemetry", payload: Array("{oops".utf8))
        try await Harness.waitUntil(timeout: 20, "the reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") == 1
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit(timeout: 30) == 0)

        // The error path: a database that is not there.
        var unreachable = configuration
        unreachable.database.url = "postgresql://postgres:s3cret-pg@127.0.0.1:1/outletd"
        unreachable.instanceID = TestStack.uniqueName("outletd-test-")
        unreachable.spool.directory = "\(try TestStack.shared().directory)/spool-\(unreachable.instanceID)"
        let failing = try OutletdProcess.start(unreachable, extraEnvironment: verbose)
        try await Task.sleep(for: .seconds(3))
        failing.signal(SIGTERM)
        _ = try await failing.waitForExit(timeout: 30)

        for output in [daemon.output, failing.output] {
            #expect(!output.contains("s3cret"), "\(output)")
            for line in output.split(separator: "\n") {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)")
            }
        }
        #expect(daemon.output.contains("postgresql://postgres:***@127.0.0.1"))
        #expect(failing.output.contains("database unavailable at start"))
    }
}
