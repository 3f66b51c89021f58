import Foundation
import MQTT
import Protocols
import Telemetry
import TestSupport

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage

/// A native-protocol outlet for the command tests: it receives `<prefix>/<code>/command` and, depending on its
/// mode, obeys (publishes its new state naming the command), ignores it, or is offline (published `offline` on its
/// availability topic, as its last will would, and hears nothing).
final class SimulatedOutlet: Sendable {
    enum Mode: Sendable {
        case obey
        case ignore
        case offline
    }

    let code: String
    let prefix: String
    private let client: MQTTClient
    private let mode: Locked<Mode>
    /// Every command received, in order (also while ignoring; never while offline).
    let commands: Locked<[(id: Int64, state: SwitchState)]>

    init(code: String, prefix: String, mode: Mode = .obey) throws {
        self.code = code
        self.prefix = prefix
        let mode = Locked(mode)
        let commands = Locked<[(id: Int64, state: SwitchState)]>([])
        let stateTopic = "\(prefix)/\(code)/state"
        let box = Locked<MQTTClient?>(nil)
        var configuration = try MQTTConfiguration(
            url: TestStack.shared().mqttURL, clientID: TestStack.uniqueName("outlet-"))
        configuration.cleanStart = true
        configuration.sessionExpiryInterval = 0
        let client = try MQTTClient(configuration: configuration) { message in
            guard mode.value != .offline, let command = NativeProtocol.decodeCommand(message.payload) else { return }
            commands.value.append(command)
            guard mode.value == .obey else { return }
            let payload = #"{"state":"\#(command.state.rawValue)","command_id":\#(command.id)}"#
            _ = try? box.value?.publish(stateTopic, payload: Array(payload.utf8), qos: 1, retain: true)
        }
        box.value = client
        client.setSubscriptions([(filter: "\(prefix)/\(code)/command", qos: 1)])
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(10)) else {
            throw HarnessError("simulated outlet did not connect")
        }
        self.client = client
        self.mode = mode
        self.commands = commands
    }

    /// Switches mode; `offline` and back to `obey`/`ignore` publish the availability change.
    func set(_ newMode: Mode) async throws {
        let old = mode.value
        mode.value = newMode
        if newMode == .offline && old != .offline {
            try await publish("availability", "offline")
        } else if old == .offline && newMode != .offline {
            try await publish("availability", "online")
        }
    }

    func publish(_ kind: String, _ payload: String) async throws {
        try await client.publishAcknowledged(
            "\(prefix)/\(code)/\(kind)", payload: Array(payload.utf8), qos: 1, retain: true)
    }

    func stop() {
        client.stop()
    }
}

/// Watches `<prefix>/+/set/result` and keeps every result, parsed.
final class ResultWatcher: Sendable {
    struct Seen: Sendable {
        var code: String
        var result: String
        var commandID: Int64?
        var requestID: String?
        var reason: String?
        /// The transition's time, RFC 3339.
        var at: String?
    }

    private let client: MQTTClient
    let seen: Locked<[Seen]>

    init(prefix: String) throws {
        let seen = Locked<[Seen]>([])
        let client = try MQTTClient(
            configuration: MQTTConfiguration(
                url: TestStack.shared().mqttURL, clientID: TestStack.uniqueName("results-"))
        ) { message in
            guard case .object(let members)? = try? JSONParser.parse(message.payload),
                case .string(let result)? = members["result"]
            else { return }
            let code = message.topic.split(separator: "/").dropLast(2).last.map(String.init) ?? ""
            var requestID: String?
            if case .string(let text)? = members["request_id"] { requestID = text }
            var reason: String?
            if case .string(let text)? = members["reason"] { reason = text }
            var at: String?
            if case .string(let text)? = members["at"] { at = text }
            seen.value.append(
                Seen(
                    code: code, result: result, commandID: members["command_id"]?.numberValue().map { Int64($0) },
                    requestID: requestID, reason: reason, at: at))
        }
        client.setSubscriptions([(filter: "\(prefix)/+/set/result", qos: 1)])
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(10)) else {
            throw HarnessError("result watcher did not connect")
        }
        // The SUBACK follows the CONNACK closely; give it a moment so no early result is missed.
        Thread.sleep(forTimeInterval: 0.2)
        self.client = client
        self.seen = seen
    }

    /// The results of one command, in order.
    func results(of commandID: Int64) -> [String] {
        seen.value.filter { $0.commandID == commandID }.map(\.result)
    }

    /// Waits until command `commandID` has published `expected` (in this order, exactly, unless
    /// `inAnyOrder`: with several instances, two of them may publish one command's results).
    func waitFor(_ commandID: Int64, _ expected: [String], inAnyOrder: Bool = false, timeout: Double = 15)
        async throws
    {
        try await Harness.waitUntil(
            timeout: timeout, "results \(expected) of command \(commandID), saw \(results(of: commandID))"
        ) {
            inAnyOrder ? results(of: commandID).sorted() == expected.sorted() : results(of: commandID) == expected
        }
    }

    func stop() {
        client.stop()
    }
}
