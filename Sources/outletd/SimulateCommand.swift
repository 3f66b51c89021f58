import ArgumentParser
import Config
import Daemon
import Dispatch
import Foundation
import MQTT
import Observability
import Protocols
import Runtime
import Storage
import Telemetry

/// `outletd simulate`: a fleet of simulated outlets publishing realistic readings over MQTT.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Publish realistic readings from simulated outlets (QoS 1), counting what the broker acknowledged.")

    @OptionGroup var options: GlobalOptions
    @Option(help: "Number of outlets.") var outlets: Int = 10
    @Option(help: "Seconds between two readings of one outlet.") var interval: Double = 1
    @Option(help: "Readings per outlet, then stop (0: until SIGINT/SIGTERM).") var count: Int = 0
    @Option(help: "Outlet codes are this prefix plus a number.") var codePrefix: String = "sim-"
    @Flag(help: "Register the outlets in the database first.") var register = false
    @Option(help: "Percent of messages sent malformed or out of range, to see rejections.")
    var invalidPercent: Double = 0
    @Option(help: "MQTT client id (default outletd-sim-<pid>).") var clientID: String?
    @Option(
        help: """
            Publishes awaiting the broker's acknowledgement at most (the QoS 1 in-flight window): when it is \
            full, publishing waits, so the rate reported is the rate the broker took.
            """)
    var window: Int = 2_000
    @Flag(
        help: """
            Obey switch commands like a real outlet: subscribe to <prefix>/+/command, switch (an outlet switched \
            off reads 0 W) and answer on <prefix>/<code>/state with the command id; publish availability.
            """)
    var obeyCommands = false
    @Option(help: "First publish this many hours of past readings per outlet (a day's chart has data at once).")
    var backfillHours: Double = 0
    @Option(help: "With --backfill-hours: seconds between two past readings.") var backfillInterval: Double = 60
    @Option(
        name: .customLong("protocol"),
        help: "native, or zigbee2mqtt or esphome: publish that firmware's topics and payloads (docs/PROTOCOLS.md).")
    var outletProtocol: OutletProtocol = .native

    /// Readings per backfill message (the native protocol takes up to `validation.max_readings_per_message`).
    static let backfillChunk = 200

    func validate() throws {
        guard outlets > 0 else { throw ValidationError("--outlets must be positive") }
        guard interval > 0 else { throw ValidationError("--interval must be positive") }
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard (0...100).contains(invalidPercent) else { throw ValidationError("--invalid-percent must be 0…100") }
        guard window > 0 else { throw ValidationError("--window must be positive") }
        guard (0...24 * 366).contains(backfillHours) else { throw ValidationError("--backfill-hours must be 0…8784") }
        guard backfillInterval >= 1 else { throw ValidationError("--backfill-interval must be at least 1") }
        guard [.native, .zigbee2mqtt, .esphome].contains(outletProtocol) else {
            throw ValidationError("--protocol is native, zigbee2mqtt or esphome")
        }
        if outletProtocol != .native && (invalidPercent > 0 || backfillHours > 0) {
            throw ValidationError("--invalid-percent and --backfill-hours are for the native protocol")
        }
    }

    func run() throws {
        let (configuration, logger) = try options.bootstrap(label: "outletd-sim")
        let width = max(4, String(outlets).count)
        let codes = (1...outlets).map {
            codePrefix + String(repeating: "0", count: width - String($0).count) + String($0)
        }
        for code in codes.prefix(1) where DeviceCode(code) == nil {
            throw ValidationError("\(code) is not a valid device code; change --code-prefix")
        }
        if register {
            let connection = try options.connect(configuration)
            defer { connection.close() }
            let outletProtocol = self.outletProtocol
            let added = try reportingErrors {
                try Migrator().migrate(connection)
                let store = DeviceStore(connection: connection)
                guard outletProtocol != .native else {
                    return try store.addMany(codes: codes, namePrefix: "simulated ")
                }
                var added = 0
                for code in codes where try store.find(code) == nil {
                    try store.add(
                        .init(
                            code: code, name: "simulated \(code)", outletProtocol: outletProtocol, protocolTopic: code))
                    added += 1
                }
                return added
            }
            print("registered \(added) new outlet\(added == 1 ? "" : "s") (\(outlets - added) already were)")
        }

        var mqtt = try MQTTConfiguration(
            url: configuration.mqtt.url,
            clientID: clientID ?? "outletd-sim-\(ProcessInfo.processInfo.processIdentifier)")
        mqtt.cleanStart = true
        mqtt.sessionExpiryInterval = 0
        let prefix = configuration.mqtt.topicPrefix
        // Which outlets are switched on: changed by commands on the MQTT thread, read by the publishing loop.
        let switchedOn = Guarded(Dictionary(uniqueKeysWithValues: codes.map { ($0, true) }))
        let replies = CommandReplies(prefix: prefix, switchedOn: switchedOn)
        let obeyCommands = self.obeyCommands
        let foreign =
            outletProtocol == .native
            ? nil
            : ForeignSimulation(
                outletProtocol: outletProtocol, baseTopic: configuration.protocols.zigbee2mqttBaseTopic,
                switchedOn: switchedOn)
        let client = try MQTTClient(configuration: mqtt) { message in
            guard obeyCommands else { return }
            if let foreign { foreign.handle(message) } else { replies.handle(message) }
        }
        replies.client = client
        foreign?.client = client
        if obeyCommands {
            client.setSubscriptions([(filter: foreign?.commandFilter ?? "\(prefix)/+/command", qos: 1)])
        }
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(15)) else {
            printError("cannot connect to the broker at \(mqtt.redactedURL)")
            throw ExitCode(69)
        }
        if obeyCommands, let foreign {
            for code in codes {
                let online = foreign.availability(code, online: true)
                try client.publish(online.topic, payload: online.payload, qos: 1, retain: true)
            }
        } else if obeyCommands {
            for code in codes {
                try client.publish(
                    "\(prefix)/\(code)/availability", payload: Array("online".utf8), qos: 1, retain: true)
                try client.publish("\(prefix)/\(code)/state", payload: Array("on".utf8), qos: 1, retain: true)
            }
        }
        logger.info(
            "simulating",
            metadata: ["outlets": "\(outlets)", "interval_s": "\(interval)", "broker": "\(mqtt.redactedURL)"])

        let stop = StopFlag()
        let signalSources = [SIGINT, SIGTERM].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.set() }
            source.resume()
            return source
        }
        defer { signalSources.forEach { $0.cancel() } }

        var fleet = codes.enumerated().map { SimulatedOutlet(code: $1, index: $0) }
        // Every QoS 1 publish counts, availability and state too: the window compares it with the acknowledged.
        var published: UInt64 = obeyCommands ? UInt64(codes.count * (foreign == nil ? 2 : 1)) : 0
        if backfillHours > 0 {
            // The past first, as an outlet that was offline sends it: JSON arrays of buffered readings (accepted
            // back to validation.max_backfill_seconds), oldest first, through the broker's in-flight window.
            let from = Date().addingTimeInterval(-backfillHours * 3_600)
            let steps = Int(backfillHours * 3_600 / backfillInterval)
            var readings = 0
            backfill: for index in fleet.indices {
                for chunk in stride(from: 0, to: steps, by: Self.backfillChunk) {
                    if stop.isSet { break backfill }
                    let payloads = (chunk..<min(steps, chunk + Self.backfillChunk)).map { step in
                        NativeProtocol.encodeTelemetry(
                            fleet[index].nextReading(at: from.addingTimeInterval(Double(step) * backfillInterval)))
                    }
                    let sent = published + replies.published
                    if sent > client.acknowledgedCount + UInt64(window) {
                        _ = client.waitUntilAcknowledged(atLeast: sent - UInt64(window / 2), timeout: .seconds(5))
                    }
                    let array =
                        [UInt8(ascii: "[")] + Array(payloads.joined(separator: [UInt8(ascii: ",")])) + [
                            UInt8(ascii: "]")
                        ]
                    try client.publish("\(prefix)/\(fleet[index].code)/telemetry", payload: array, qos: 1)
                    published += 1
                    readings += payloads.count
                }
            }
            print("backfilled \(readings) readings over \(backfillHours) h")
        }
        var invalid: UInt64 = 0
        var publishErrors: UInt64 = 0
        var random = SplitMix64(seed: UInt64(ProcessInfo.processInfo.processIdentifier))
        let started = Date()
        var lastReport = started
        var round = 0
        rounds: while count == 0 || round < count {
            let roundStart = started.addingTimeInterval(Double(round) * interval)
            for index in fleet.indices {
                if stop.isSet { break rounds }
                // Spread the fleet's readings over the interval instead of bursting them.
                let due = roundStart.addingTimeInterval(interval * Double(index) / Double(fleet.count))
                let wait = due.timeIntervalSinceNow
                if wait > 0.002 {
                    // The readings published since the last pause go out together (deferred below).
                    client.flush()
                    if stop.sleep(seconds: wait) { break rounds }
                }
                let now = Date()
                let payload: [UInt8]
                if invalidPercent > 0 && Double(random.next() % 10_000) < invalidPercent * 100 {
                    payload = fleet[index].invalidPayload(at: now)
                    invalid += 1
                } else if foreign == nil {
                    let isOn = switchedOn.withLock { $0[fleet[index].code] ?? true }
                    payload = NativeProtocol.encodeTelemetry(fleet[index].nextReading(at: now, switchedOn: isOn))
                } else {
                    payload = []  // the firmware's messages are made below
                }
                // The in-flight window: when full, wait until half of it was acknowledged (one wake-up
                // per half window, not one per message).
                let sent = published + replies.published + (foreign?.published ?? 0)
                if sent >= client.acknowledgedCount + UInt64(window) {
                    client.flush()
                    let target = sent - UInt64(window / 2)
                    while client.waitUntilAcknowledged(atLeast: target, timeout: .milliseconds(250)) < target {
                        if stop.isSet { break rounds }
                    }
                }
                do {
                    if let foreign {
                        let isOn = switchedOn.withLock { $0[fleet[index].code] ?? true }
                        let reading = fleet[index].nextReading(at: now, switchedOn: isOn)
                        for message in foreign.messages(reading, code: fleet[index].code, isOn: isOn) {
                            try client.publish(message.topic, payload: message.payload, qos: 1, deferred: true)
                            published += 1
                        }
                    } else {
                        try client.publish(
                            "\(prefix)/\(fleet[index].code)/telemetry", payload: payload, qos: 1, deferred: true)
                        published += 1
                    }
                } catch {
                    publishErrors += 1
                    if publishErrors == 1 || publishErrors % 1_000 == 0 {
                        logger.warning(
                            "publish failed", metadata: ["error": "\(error)", "failures": "\(publishErrors)"])
                    }
                }
            }
            round += 1
            client.flush()
            if Date().timeIntervalSince(lastReport) >= 5 {
                lastReport = Date()
                let elapsed = lastReport.timeIntervalSince(started)
                print(
                    "published \(published), acknowledged \(client.acknowledgedCount) "
                        + "(\(Int(Double(client.acknowledgedCount) / elapsed))/s acknowledged, "
                        + "\(Int(Double(fleet.count) / interval))/s asked)")
                fflush(nil)  // a line at a time also when stdout is a file or a pipe
            }
        }

        client.flush()  // what the loop deferred before it stopped
        if obeyCommands {
            for code in codes {
                let offline =
                    foreign?.availability(code, online: false)
                    ?? (topic: "\(prefix)/\(code)/availability", payload: Array("offline".utf8))
                if (try? client.publish(offline.topic, payload: offline.payload, qos: 1, retain: true)) != nil {
                    published += 1
                }
            }
        }
        // Wait for the broker to acknowledge what was published.
        let replied = replies.published + (foreign?.published ?? 0)
        let acknowledgedInAll = client.waitUntilAcknowledged(atLeast: published + replied, timeout: .seconds(30))
        let acknowledged = acknowledgedInAll > replied ? acknowledgedInAll - replied : 0
        client.stop()
        let seconds = Date().timeIntervalSince(started)
        print(
            "published \(published), acknowledged \(acknowledged), invalid \(invalid), "
                + "failed \(publishErrors) in \(String(format: "%.1f", seconds)) s "
                + "(\(Int(Double(acknowledged) / max(seconds, 0.001)))/s acknowledged)")
        if acknowledged < published { throw ExitCode.failure }
    }
}

/// How simulated outlets obey: a command on `<prefix>/<code>/command` switches the outlet and is answered on
/// `<prefix>/<code>/state` (retained) with the state and the command id, as the native protocol says.
final class CommandReplies: Sendable {
    let prefix: String
    let switchedOn: Guarded<[String: Bool]>
    private let clientBox = Guarded<MQTTClient?>(nil)
    private let repliesPublished = Guarded<UInt64>(0)

    /// State reports published (QoS 1), so the publisher's in-flight window can count them.
    var published: UInt64 { repliesPublished.withLock { $0 } }

    init(prefix: String, switchedOn: Guarded<[String: Bool]>) {
        self.prefix = prefix
        self.switchedOn = switchedOn
    }

    var client: MQTTClient? {
        get { clientBox.withLock { $0 } }
        set { clientBox.withLock { $0 = newValue } }
    }

    /// Called on the MQTT thread for every message received.
    func handle(_ message: MQTTMessage) {
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
        guard message.topic.hasPrefix(prefix + "/"), levels.last == "command", levels.count >= 2,
            let command = NativeProtocol.decodeCommand(message.payload)
        else { return }
        let code = String(levels[levels.count - 2])
        let known = switchedOn.withLock { state -> Bool in
            guard state[code] != nil else { return false }
            state[code] = command.state == .on
            return true
        }
        guard known else { return }
        let reply = #"{"state":"\#(command.state.rawValue)","command_id":\#(command.id)}"#
        repliesPublished.withLock { $0 += 1 }
        if (try? client?.publish("\(prefix)/\(code)/state", payload: Array(reply.utf8), qos: 1, retain: true)) == nil {
            repliesPublished.withLock { $0 -= 1 }
        }
    }
}
