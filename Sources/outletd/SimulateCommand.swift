import ArgumentParser
import Config
import Daemon
import Dispatch
import Foundation
import MQTT
import Observability
import Runtime
import Storage
import Synchronization
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
            Behave like real outlets for switching: report availability (online, offline when stopping) and state \
            (retained), obey commands on <prefix>/<code>/command and confirm them with a state report.
            """)
    var obeyCommands = false

    func validate() throws {
        guard outlets > 0 else { throw ValidationError("--outlets must be positive") }
        guard interval > 0 else { throw ValidationError("--interval must be positive") }
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard (0...100).contains(invalidPercent) else { throw ValidationError("--invalid-percent must be 0…100") }
        guard window > 0 else { throw ValidationError("--window must be positive") }
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
            let added = try reportingErrors {
                try Migrator().migrate(connection)
                return try DeviceStore(connection: connection).addMany(codes: codes, namePrefix: "simulated ")
            }
            print("registered \(added) new outlet\(added == 1 ? "" : "s") (\(outlets - added) already were)")
        }

        var mqtt = try MQTTConfiguration(
            url: configuration.mqtt.url,
            clientID: clientID ?? "outletd-sim-\(ProcessInfo.processInfo.processIdentifier)")
        mqtt.cleanStart = true
        mqtt.sessionExpiryInterval = 0
        let prefix = configuration.mqtt.topicPrefix
        let codeSet = Set(codes)
        // Commands arrive on libmosquitto's thread; the loop below applies and confirms them.
        let received = Mutex<[SimulatedCommand]>([])
        let client = try MQTTClient(configuration: mqtt) { message in
            let parts = message.topic.split(separator: "/")
            guard parts.count >= 2, parts.last == "command", let code = parts.dropLast().last.map(String.init),
                codeSet.contains(code), let command = SimulatedCommand.parse(code: code, payload: message.payload)
            else { return }
            received.withLock { $0.append(command) }
        }
        if obeyCommands { client.setSubscriptions([(filter: "\(prefix)/+/command", qos: 1)]) }
        try client.start()
        guard client.waitUntilConnectedBlocking(timeout: .seconds(15)) else {
            printError("cannot connect to the broker at \(mqtt.redactedURL)")
            throw ExitCode(69)
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
        // Every QoS 1 publish, counted against the broker's acknowledgements (the in-flight window).
        var published: UInt64 = 0
        let indexByCode = Dictionary(uniqueKeysWithValues: codes.enumerated().map { ($1, $0) })
        func report(_ code: String, _ kind: String, _ payload: String) {
            if (try? client.publish("\(prefix)/\(code)/\(kind)", payload: Array(payload.utf8), qos: 1, retain: true))
                != nil
            {
                published += 1
            }
        }
        if obeyCommands {
            for outlet in fleet {
                report(outlet.code, "availability", "online")
                report(outlet.code, "state", outlet.isOn ? "on" : "off")
            }
        }
        /// Applies the commands received and confirms each with a state report.
        func obey() {
            for command in received.withLock({ commands in
                defer { commands = [] }; return commands
            }) {
                guard let index = indexByCode[command.code] else { continue }
                fleet[index].isOn = command.turnOn
                if (try? client.publish(
                    "\(prefix)/\(command.code)/state", payload: command.statePayload, qos: 1, retain: true)) != nil
                {
                    published += 1
                }
                logger.info(
                    "switched by command",
                    metadata: [
                        "code": "\(command.code)", "state": "\(command.turnOn ? "on" : "off")",
                        "command": "\(command.commandID)",
                    ])
            }
        }
        /// Sleeps until `due`, obeying commands meanwhile; true when asked to stop.
        func wait(until due: Date) -> Bool {
            while true {
                if obeyCommands { obey() }
                let left = due.timeIntervalSinceNow
                if left <= 0.002 { return stop.isSet }
                if stop.sleep(seconds: obeyCommands ? min(left, 0.05) : left) { return true }
            }
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
                if wait(until: due) { break rounds }
                let now = Date()
                let payload: [UInt8]
                if invalidPercent > 0 && Double(random.next() % 10_000) < invalidPercent * 100 {
                    payload = fleet[index].invalidPayload(at: now)
                    invalid += 1
                } else {
                    payload = NativeProtocol.encodeTelemetry(fleet[index].nextReading(at: now))
                }
                // The in-flight window: when full, wait until half of it was acknowledged (one wake-up
                // per half window, not one per message).
                if published - client.acknowledgedCount >= UInt64(window) {
                    let target = published - UInt64(window / 2)
                    while client.waitUntilAcknowledged(atLeast: target, timeout: .milliseconds(250)) < target {
                        if stop.isSet { break rounds }
                    }
                }
                do {
                    try client.publish("\(prefix)/\(fleet[index].code)/telemetry", payload: payload, qos: 1)
                    published += 1
                } catch {
                    publishErrors += 1
                    if publishErrors == 1 || publishErrors % 1_000 == 0 {
                        logger.warning(
                            "publish failed", metadata: ["error": "\(error)", "failures": "\(publishErrors)"])
                    }
                }
            }
            round += 1
            if Date().timeIntervalSince(lastReport) >= 5 {
                lastReport = Date()
                let elapsed = lastReport.timeIntervalSince(started)
                print(
                    "published \(published), acknowledged \(client.acknowledgedCount) "
                        + "(\(Int(Double(client.acknowledgedCount) / elapsed))/s acknowledged, "
                        + "\(Int(Double(fleet.count) / interval))/s asked)")
            }
        }

        if obeyCommands {
            for outlet in fleet { report(outlet.code, "availability", "offline") }
        }
        // Wait for the broker to acknowledge what was published.
        let acknowledged = client.waitUntilAcknowledged(atLeast: published, timeout: .seconds(30))
        client.stop()
        let seconds = Date().timeIntervalSince(started)
        print(
            "published \(published), acknowledged \(acknowledged), invalid \(invalid), "
                + "failed \(publishErrors) in \(String(format: "%.1f", seconds)) s "
                + "(\(Int(Double(acknowledged) / max(seconds, 0.001)))/s acknowledged)")
        if acknowledged < published { throw ExitCode.failure }
    }
}
