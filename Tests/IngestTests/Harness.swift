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

/// The integration tests' part of the harness (the rest, with the configuration pointing at the test stack, is
/// TestSupport's): an in-process service, its status, and a publisher.
extension Harness {
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
