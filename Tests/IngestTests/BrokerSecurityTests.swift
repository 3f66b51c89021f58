import Foundation
import MQTT
import TestSupport
import Testing

@testable import Ingest

#if canImport(Glibc)
    import Glibc
#endif

/// The shipped broker ACLs (config/mosquitto/outletd.acl) with per-outlet credentials made by
/// `outletd broker credentials`, on a mosquitto of the test's own.
@Suite(.serialized) struct BrokerSecurityTests {
    struct SecureBroker {
        let process: BackgroundProcess
        let port: Int
    }

    static func startSecureBroker(users: [String: String]) throws -> SecureBroker {
        let directory = "\(try TestStack.shared().directory)/\(TestStack.uniqueName("secure-mqtt"))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let outletd = try OutletdProcess.executable()
        var lines: [String] = []
        for (user, password) in users.sorted(by: { $0.key < $1.key }) {
            lines.append(
                try TestStack.run([outletd, "broker", "credentials", user, "--password", password])
                    .trimmingCharacters(in: .whitespacesAndNewlines))
        }
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: "\(directory)/passwd", atomically: true, encoding: .utf8)
        let port = try freePort()
        var config = """
            listener \(port) 127.0.0.1
            allow_anonymous false
            password_file \(directory)/passwd
            acl_file \(TestStack.packageRoot)/config/mosquitto/outletd.acl

            """
        if getuid() == 0 { config = "user root\n" + config }
        try config.write(toFile: "\(directory)/mosquitto.conf", atomically: true, encoding: .utf8)
        let process = try BackgroundProcess(
            ["mosquitto", "-c", "\(directory)/mosquitto.conf"], environment: ProcessInfo.processInfo.environment,
            logPath: "\(directory)/mosquitto.log")
        return SecureBroker(process: process, port: port)
    }

    /// A connected client of `user`, collecting what it receives on `filters`.
    static func client(
        _ broker: SecureBroker, user: String?, password: String?, filters: [String] = [],
        received: Locked<[String]> = Locked([]), timeoutSeconds: Int = 10
    ) async throws -> MQTTClient {
        var configuration = MQTTConfiguration(clientID: TestStack.uniqueName("sec-"))
        configuration.port = broker.port
        configuration.username = user
        configuration.password = password
        configuration.cleanStart = true
        configuration.sessionExpiryInterval = 0
        let client = try MQTTClient(configuration: configuration) { message in
            received.value.append("\(message.topic) \(String(decoding: message.payload, as: UTF8.self))")
        }
        client.setSubscriptions(filters.map { (filter: $0, qos: 1) })
        try await Blocking.run { try client.start() }
        do {
            try await client.waitUntilConnected(timeout: .seconds(timeoutSeconds))
        } catch {
            client.stop()
            throw error
        }
        return client
    }

    @Test func outletsAreConfinedToTheirOwnTopics() async throws {
        let users = ["plug-a": "pa-secret", "plug-b": "pb-secret", "outletd": "svc-secret", "operator": "op-secret"]
        let broker = try Self.startSecureBroker(users: users)
        defer { broker.process.killAndWait() }
        try await Harness.waitUntil(timeout: 10, "the secure broker listening") { TLSTests.listening(broker.port) }

        // Anonymous clients and wrong passwords are turned away.
        await #expect(throws: (any Error).self) {
            _ = try await Self.client(broker, user: nil, password: nil, timeoutSeconds: 3)
        }
        await #expect(throws: (any Error).self) {
            _ = try await Self.client(broker, user: "plug-a", password: "wrong", timeoutSeconds: 3)
        }

        let service = Locked<[String]>([])
        let outletd = try await Self.client(
            broker, user: "outletd", password: "svc-secret",
            filters: ["outlets/+/telemetry", "$share/outletd/outlets/+/set"], received: service)
        defer { outletd.stop() }
        let heardByB = Locked<[String]>([])
        let plugB = try await Self.client(
            broker, user: "plug-b", password: "pb-secret", filters: ["outlets/plug-b/command"], received: heardByB)
        defer { plugB.stop() }
        let heardByA = Locked<[String]>([])
        let plugA = try await Self.client(
            broker, user: "plug-a", password: "pa-secret",
            filters: ["outlets/plug-b/command", "outlets/plug-a/command"], received: heardByA)
        defer { plugA.stop() }
        let operatorClient = try await Self.client(broker, user: "operator", password: "op-secret")
        defer { operatorClient.stop() }
        try await Task.sleep(for: .milliseconds(300))  // subscriptions settle

        // A writes a reading as B and tries to switch B: the broker answers "not authorized" (MQTT v5
        // PUBACK reason) and delivers nothing. Then A's own reading, which arrives.
        await #expect(throws: MQTTError.self) {
            try await plugA.publishAcknowledged("outlets/plug-b/telemetry", payload: Array("forged".utf8))
        }
        await #expect(throws: MQTTError.self) {
            try await plugA.publishAcknowledged("outlets/plug-b/set", payload: Array("off".utf8))
        }
        try await plugA.publishAcknowledged("outlets/plug-a/telemetry", payload: Array("own".utf8))
        // The operator may switch B; outletd commands B.
        try await operatorClient.publishAcknowledged("outlets/plug-b/set", payload: Array("on".utf8))
        try await outletd.publishAcknowledged("outlets/plug-b/command", payload: Array("cmd-b".utf8))
        try await Harness.waitUntil(timeout: 10, "the allowed messages") {
            service.value.contains("outlets/plug-a/telemetry own") && service.value.contains("outlets/plug-b/set on")
                && heardByB.value.contains("outlets/plug-b/command cmd-b")
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!service.value.contains("outlets/plug-b/telemetry forged"), "\(service.value)")
        #expect(!service.value.contains("outlets/plug-b/set off"), "\(service.value)")
        #expect(!heardByA.value.contains("outlets/plug-b/command cmd-b"), "A read B's command: \(heardByA.value)")
    }
}
