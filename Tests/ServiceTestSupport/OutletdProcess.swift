import Config
import Foundation
import TestSupport

/// An `outletd run` child process with its output captured to a file.
public final class OutletdProcess: Sendable {
    public let child: BackgroundProcess

    public struct FinalCounters: Sendable {
        public var received: Int
        public var stored: Int
        public var duplicates: Int
    }

    /// The built `outletd` next to the test bundle (or under .build/debug).
    public static func executable() throws -> String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("outletd").path
        for candidate in [beside, "\(TestStack.packageRoot)/.build/debug/outletd"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw HarnessError("outletd executable not built (swift build --build-tests builds it)")
    }

    public static func start(_ configuration: OutletdConfiguration, extraEnvironment: [String: String] = [:]) throws
        -> OutletdProcess
    {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OUTLETD_") }
        environment["OUTLETD_DATABASE_URL"] = configuration.database.url
        environment["OUTLETD_MQTT_URL"] = configuration.mqtt.url
        environment["OUTLETD_MQTT_TOPIC_PREFIX"] = configuration.mqtt.topicPrefix
        environment["OUTLETD_INSTANCE_ID"] = configuration.instanceID
        environment["OUTLETD_MQTT_SHARE_GROUP"] = configuration.mqtt.shareGroup
        environment["OUTLETD_COMMANDS_SHARE_GROUP"] = configuration.commands.shareGroup
        environment["OUTLETD_SPOOL_DIRECTORY"] = configuration.spool.directory
        environment["OUTLETD_SPOOL_SEGMENT_BYTES"] = String(configuration.spool.segmentBytes)
        environment["OUTLETD_SPOOL_MAX_BYTES"] = String(configuration.spool.maxBytes)
        environment["OUTLETD_INGEST_BATCH_MAX_DELAY_MS"] = "50"
        // Daemons of parallel tests would all want the default HTTP port; tests that need it pass one.
        environment["OUTLETD_HTTP_LISTEN"] = ""
        environment.merge(extraEnvironment) { $1 }
        // In the test stack's folder, which goes away when the test process exits.
        let logPath = "\(try TestStack.shared().directory)/\(configuration.instanceID)-\(UUID().uuidString).log"
        return OutletdProcess(
            child: try BackgroundProcess([try executable(), "run"], environment: environment, logPath: logPath))
    }

    private init(child: BackgroundProcess) {
        self.child = child
    }

    public func signal(_ signal: Int32) {
        child.signal(signal)
    }

    /// The exit code; fails the test when the process is still running after `timeout`.
    public func waitForExit(timeout: Double) async throws -> Int32 {
        guard let code = await child.waitForExit(timeout: timeout) else {
            throw HarnessError("outletd still running after \(timeout) s:\n\(output)")
        }
        return code
    }

    public var output: String { child.output }

    /// The counters of the `stopped` log line.
    public func finalCounters() -> FinalCounters? {
        guard
            let line = output.split(separator: "\n").last(where: { $0.contains("stopped") && $0.contains("received=") })
        else { return nil }
        func value(_ name: String) -> Int? {
            guard let range = line.range(of: "\(name)=") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        guard let received = value("received"), let stored = value("stored"), let duplicates = value("duplicates")
        else { return nil }
        return FinalCounters(received: received, stored: stored, duplicates: duplicates)
    }
}
