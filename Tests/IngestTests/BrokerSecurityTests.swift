import Foundation
import MQTT
import Postgres
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
        // Home Assistant discovery: outletd writes its configs; an outlet cannot, not even its own.
        try await outletd.publishAcknowledged(
            "homeassistant/switch/outletd/plug-a/config", payload: Array("{}".utf8), retain: true)
        await #expect(throws: MQTTError.self) {
            try await plugA.publishAcknowledged(
                "homeassistant/switch/outletd/plug-a/config", payload: Array("{}".utf8), retain: true)
        }
        await #expect(throws: MQTTError.self) {
            try await plugA.publishAcknowledged("homeassistant/switch/plug-a/config", payload: Array("{}".utf8))
        }
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

    /// Two Shelly Gen2 outlets on the shipped ACL, each logged in as its prefix, and outletd running. Outlet A
    /// can neither confirm, reject nor time out B's command, nor publish B's readings, state, availability or
    /// discovery, nor read B's commands; on its own reply topic a reply naming B's command is not taken. The
    /// same reply route does work for A's own command. mosquitto logs no ACL warning at start.
    @Test func oneOutletCannotSpeakForAnother() async throws {
        let users = ["plus-a": "pa-secret", "plus-b": "pb-secret", "outletd": "svc-secret"]
        let broker = try Self.startSecureBroker(users: users)
        defer { broker.process.killAndWait() }
        try await Harness.waitUntil(timeout: 10, "the secure broker listening") { TLSTests.listening(broker.port) }
        let brokerLog = (try? String(contentsOfFile: broker.process.logPath, encoding: .utf8)) ?? ""
        #expect(!brokerLog.contains("Warning: ACL"), "\(brokerLog)")

        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        configuration.mqtt.url = "mqtt://outletd:svc-secret@127.0.0.1:\(broker.port)"
        configuration.commands.confirmTimeoutSeconds = 60
        let connection = try PostgresConnection(connectionString: url)
        for (code, prefix) in [("outlet-a", "plus-a"), ("outlet-b", "plus-b")] {
            try DeviceStore(connection: connection).add(
                .init(code: code, outletProtocol: .shellyGen2, protocolTopic: prefix))
        }
        connection.close()
        let replyBase = "outletd/\(configuration.instanceID)/shelly"

        let heardByB = Locked<[String]>([])
        let plusB = try await Self.client(
            broker, user: "plus-b", password: "pb-secret", filters: ["plus-b/rpc"], received: heardByB)
        defer { plusB.stop() }
        let heardByA = Locked<[String]>([])
        let plusA = try await Self.client(
            broker, user: "plus-a", password: "pa-secret", filters: ["plus-a/rpc", "plus-b/rpc"], received: heardByA)
        defer { plusA.stop() }

        try await Harness.withService(configuration) { _ in
            func commandID(_ heard: Locked<[String]>, _ topic: String) -> Int? {
                heard.value.compactMap { line -> Int? in
                    guard line.hasPrefix(topic + " "),
                        case .object(let request)? = try? JSONParser.parse(Array(line.dropFirst(topic.count + 1).utf8))
                    else { return nil }
                    return request["id"]?.numberValue().map { Int($0) }
                }.last
            }
            _ = try Harness.scalar(url, "SELECT request_switch('outlet-b', true, 'test')")
            try await Harness.waitUntil(timeout: 10, "B's command sent to B") {
                commandID(heardByB, "plus-b/rpc") != nil
            }
            let idB = try #require(commandID(heardByB, "plus-b/rpc"))
            let ts = Date().timeIntervalSince1970
            let forged: [(String, String)] = [
                ("\(replyBase)/plus-b/rpc", #"{"id":\#(idB),"error":{"code":-1,"message":"forged"}}"#),
                ("\(replyBase)/plus-b/rpc", #"{"id":\#(idB),"result":{"was_on":false}}"#),
                (
                    "plus-b/events/rpc",
                    #"{"method":"NotifyStatus","params":{"ts":\#(ts),"switch:0":{"id":0,"output":true,"apower":1}}}"#
                ),
                ("plus-b/status/switch:0", #"{"id":0,"output":false,"apower":3000}"#),
                ("plus-b/online", "false"),
                ("plus-b/rpc", #"{"id":1,"src":"x","method":"Switch.Set","params":{"id":0,"on":false}}"#),
                ("tasmota/discovery/A4CF12ABC123/config", #"{"t":"plus-b","ft":"%prefix%/%topic%/"}"#),
                ("shellies/announce", #"{"id":"plus-b","model":"SHPLG-S","mac":"A4CF12ABC123"}"#),
            ]
            for (topic, payload) in forged {
                await #expect(throws: MQTTError.self, "A could write \(topic)") {
                    try await plusA.publishAcknowledged(topic, payload: Array(payload.utf8))
                }
            }
            // A's own reply topic, naming B's command: the broker lets it through, outletd does not take it.
            try await plusA.publishAcknowledged(
                "\(replyBase)/plus-a/rpc",
                payload: Array(#"{"id":\#(idB),"error":{"code":-1,"message":"forged"}}"#.utf8))
            try await Task.sleep(for: .seconds(1))
            #expect(try Harness.scalar(url, "SELECT status FROM commands WHERE id = \(idB)") == "sent")
            #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 0)
            #expect(try Harness.scalar(url, "SELECT online IS NOT FALSE FROM devices WHERE code = 'outlet-b'") == "t")
            #expect(!heardByA.value.contains { $0.hasPrefix("plus-b/rpc") }, "A read B's command: \(heardByA.value)")

            // B itself confirms its command.
            try await plusB.publishAcknowledged(
                "plus-b/events/rpc",
                payload: Array(
                    #"{"method":"NotifyStatus","params":{"ts":\#(ts),"switch:0":{"id":0,"output":true}}}"#.utf8))
            try await Harness.waitUntil(timeout: 10, "B's command confirmed by B") {
                try Harness.scalar(url, "SELECT status FROM commands WHERE id = \(idB)") == "confirmed"
            }

            // The reply route works for the outlet it belongs to: A refuses its own command.
            _ = try Harness.scalar(url, "SELECT request_switch('outlet-a', true, 'test')")
            try await Harness.waitUntil(timeout: 10, "A's command sent to A") {
                commandID(heardByA, "plus-a/rpc") != nil
            }
            let idA = try #require(commandID(heardByA, "plus-a/rpc"))
            try await plusA.publishAcknowledged(
                "\(replyBase)/plus-a/rpc", payload: Array(#"{"id":\#(idA),"error":{"code":-103,"message":"no"}}"#.utf8))
            try await Harness.waitUntil(timeout: 10, "A's command rejected by A") {
                try Harness.scalar(url, "SELECT status FROM commands WHERE id = \(idA)") == "rejected"
            }
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM pending_devices") == 0)
    }
}
