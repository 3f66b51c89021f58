import ArgumentParser
import Config
import Daemon
import Foundation
import Observability
import Protocols
import Runtime
import Storage
import Telemetry

extension OutletProtocol: ExpressibleByArgument {}

/// `outletd device …`: the registry of outlets.
struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Register, list, enable, disable and remove outlets.",
        subcommands: [
            Add.self, List.self, Show.self, Enable.self, Disable.self, Remove.self, Pending.self, Approve.self,
            SetTimeZone.self, ClaimKeyCommand.self,
        ])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register an outlet by its code.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The code printed on the outlet (1–64 of A-Z a-z 0-9 _ -).") var code: String
        @Option(help: "A name people recognise (\"Kitchen fridge\").") var name: String = ""
        @Option(help: "Free text.") var description: String = ""
        @Option(
            help:
                "A free-text note of who owns it (shown by device show; the owner is the app account that claims it)."
        ) var owner: String?
        @Flag(help: "Register it disabled (its readings are rejected until enabled).") var disabled = false
        @Option(help: "Also print the broker's password_file line for this outlet (user = its code).")
        var mqttPassword: String?
        @Option(name: .customLong("protocol"), help: "How the outlet speaks MQTT.")
        var outletProtocol: OutletProtocol = .native
        @Option(
            help:
                "The outlet's own topic: Tasmota %topic%, Shelly Gen1 id, Shelly Gen2 prefix, Zigbee2MQTT friendly name, ESPHome topic prefix."
        )
        var topic: String?
        @Option(help: "Tasmota FullTopic (default %prefix%/%topic%/); also list it in protocols.tasmota_full_topics.")
        var fullTopic: String?
        @Option(
            help:
                "Relay: Tasmota 1-based (default 1), Shelly 0-based (default 0); Zigbee2MQTT: the endpoint name of a multi-socket device (l2)."
        )
        var channel: String?
        @Option(
            name: .customLong("sensor"),
            help:
                "ESPHome: which sensor is what, role=object_id[:unit] (power, voltage, current, power_factor, energy; energy=total:kWh); repeatable."
        )
        var sensors: [String] = []
        @Option(
            name: .customLong("switch"),
            help: "ESPHome: the switch's object id (default: discovery, or the node's only switch).")
        var switchID: String?
        @Option(help: "Tasmota's word for on (StateText), when not ON.") var onWord: String?
        @Option(help: "Tasmota's word for off (StateText), when not OFF.") var offWord: String?

        func validate() throws {
            if let channel, outletProtocol != .zigbee2mqtt, Int(channel) == nil {
                throw ValidationError(
                    "--channel is a number for \(outletProtocol.rawValue) (an endpoint name for zigbee2mqtt)")
            }
            if (!sensors.isEmpty || switchID != nil) && outletProtocol != .esphome {
                throw ValidationError("--sensor and --switch are for --protocol esphome")
            }
        }

        func run() throws {
            let endpoint = outletProtocol == .zigbee2mqtt ? (channel ?? "") : (switchID ?? "")
            let number = outletProtocol == .zigbee2mqtt ? nil : channel.flatMap { Int($0) }
            let record = try options.withDatabase { connection in
                try DeviceStore(connection: connection).add(
                    .init(
                        code: code, name: name, description: description, owner: owner, enabled: !disabled,
                        outletProtocol: outletProtocol, protocolTopic: topic, fullTopic: fullTopic, channel: number,
                        stateOnWord: onWord, stateOffWord: offWord, endpoint: endpoint,
                        sensorMap: sensors.isEmpty ? nil : sensors.joined(separator: ",")))
            }
            print("registered \(record.code)\(record.enabled ? "" : " (disabled)")")
            print("claim key: \(ClaimKey.display(record.claimKey))")
            if let mqttPassword {
                print("broker password_file line (append it and reload mosquitto):")
                print(try MosquittoPasswordEntry.make(user: record.code, password: mqttPassword))
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List registered outlets.")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            let devices = try options.withDatabase { connection in try DeviceStore(connection: connection).list() }
            if output.format == .json {
                print(
                    try JSONOutput.render(
                        devices.map { device -> [String: Any] in
                            [
                                "code": device.code, "name": device.name, "description": device.description,
                                "enabled": device.enabled, "owner": JSONOutput.value(device.owner),
                                "protocol": device.protocolName, "registered_at": JSONOutput.value(device.createdAt),
                            ]
                        }))
                return
            }
            let rows = devices.map {
                [$0.code, $0.name, $0.enabled ? "enabled" : "disabled", $0.owner ?? "", $0.protocolName]
            }
            print(TextTable.render(header: ["CODE", "NAME", "STATE", "OWNER", "PROTOCOL"], rows: rows))
            print("\(devices.count) outlet\(devices.count == 1 ? "" : "s")")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one outlet.")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String

        func run() throws {
            try options.withDatabase { connection in
                guard let device = try DeviceStore(connection: connection).find(code) else {
                    throw DeviceStoreError(message: "no device \(code) is registered")
                }
                // Stored text is printed inert: an owner's name cannot move the cursor or forge lines.
                print("code:         \(device.code)")
                print("name:         \(OwnerText.inert(device.name))")
                print("description:  \(OwnerText.inert(device.description))")
                print("owner:        \(OwnerText.inert(device.owner ?? ""))")
                if let note = device.ownerNote, !note.isEmpty { print("owner note:   \(OwnerText.inert(note))") }
                print("claim key:    \(ClaimKey.display(device.claimKey))")
                print("protocol:     \(device.protocolName)")
                if let protocolTopic = device.protocolTopic {
                    print("topic:        \(OwnerText.inert(protocolTopic))")
                    print("channel:      \(device.channel)")
                    if !device.endpoint.isEmpty { print("endpoint:     \(OwnerText.inert(device.endpoint))") }
                    if let fullTopic = device.fullTopic { print("full topic:   \(OwnerText.inert(fullTopic))") }
                    if let map = device.sensorMap { print("sensors:      \(OwnerText.inert(map)) (--sensor)") }
                    if let map = device.discoveredSensorMap {
                        print("discovered:   \(OwnerText.inert(map)) (the node's discovery; wins role by role)")
                    }
                }
                print("enabled:      \(device.enabled)")
                print("registered:   \(device.createdAt.map(Format.timestamp) ?? "")")
                if let summary = try PowerSummaryQuery(connection: connection).summary(code: code) {
                    print("samples:      \(summary.sampleCount)")
                    print("last reading: \(summary.lastReadingAt.map(Format.timestamp) ?? "never")")
                }
            }
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accept an outlet's readings again.")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String

        func run() throws {
            try options.withDatabase { connection in try DeviceStore(connection: connection).setEnabled(code, true) }
            print("enabled \(code)")
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reject an outlet's readings (kept as rejected).")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String

        func run() throws {
            try options.withDatabase { connection in try DeviceStore(connection: connection).setEnabled(code, false) }
            print("disabled \(code)")
        }
    }

    struct SetTimeZone: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "time-zone",
            abstract: "Set the time zone of an outlet's days in the owners' app (default: rollups.time_zone).")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String
        @Argument(help: "An IANA name (America/Fortaleza); omit it to use rollups.time_zone again.") var zone: String?

        func run() throws {
            try options.withDatabase { connection in try DeviceStore(connection: connection).setTimeZone(code, zone) }
            print("\(code): days in \(zone ?? "rollups.time_zone")")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an outlet and all its samples.")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String
        @Flag(help: "Confirm that the outlet's samples are deleted too.") var yes = false

        func run() throws {
            guard yes else {
                printError("this deletes \(code) and all its samples; run again with --yes to confirm")
                throw ExitCode.failure
            }
            let samples = try options.withDatabase { connection in try DeviceStore(connection: connection).remove(code)
            }
            print("removed \(code) and \(samples) sample\(samples == 1 ? "" : "s")")
        }
    }

    struct Pending: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List codes that sent data without being registered.")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            let pending = try options.withDatabase { connection in try DeviceStore(connection: connection).pending() }
            if output.format == .json {
                print(
                    try JSONOutput.render(
                        pending.map { device -> [String: Any] in
                            [
                                "code": device.code, "messages": device.messageCount,
                                "first_seen_at": JSONOutput.value(device.firstSeenAt),
                                "last_seen_at": JSONOutput.value(device.lastSeenAt), "last_topic": device.lastTopic,
                                "suggested_protocol": JSONOutput.value(device.suggestedProtocol),
                                "suggested_topic": JSONOutput.value(device.suggestedTopic),
                                "suggested_channels": device.suggestedChannels,
                                "suggested_endpoints": device.suggestedEndpoints,
                            ]
                        }))
                return
            }
            let rows = pending.map { device -> [String] in
                var suggested = ""
                if let suggestedProtocol = device.suggestedProtocol {
                    let channels = device.suggestedChannels.map(String.init).joined(separator: ",")
                    let slots =
                        device.suggestedEndpoints.isEmpty
                        ? "ch \(channels)" : "endpoints \(device.suggestedEndpoints.joined(separator: ","))"
                    suggested = "\(suggestedProtocol) \(device.suggestedTopic ?? "") \(slots)"
                }
                return [
                    device.code, String(device.messageCount), device.firstSeenAt.map(Format.timestamp) ?? "",
                    device.lastSeenAt.map(Format.timestamp) ?? "", device.lastTopic, suggested,
                ]
            }
            print(
                TextTable.render(
                    header: ["CODE", "MESSAGES", "FIRST SEEN", "LAST SEEN", "LAST TOPIC", "SUGGESTED"], rows: rows))
            print("\(pending.count) pending; register one with `outletd device approve CODE`")
        }
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a pending code in one step.")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String
        @Option(help: "A name people recognise.") var name: String?
        @Option(
            help:
                "A free-text note of who owns it (shown by device show; the owner is the app account that claims it)."
        ) var owner: String?

        func run() throws {
            let records = try options.withDatabase { connection in
                try DeviceStore(connection: connection).approve(code, name: name, owner: owner)
            }
            for record in records {
                print("registered \(record.code)")
                print("claim key: \(ClaimKey.display(record.claimKey))")
            }
        }
    }

    struct ClaimKeyCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "claim-key",
            abstract: "Print the claim key for an outlet's label (an owner claims it in the app by code and key).")
        @OptionGroup var options: GlobalOptions
        @Argument var code: String
        @Flag(help: "Make a new key first; the old one claims nothing from then on (print a new label).")
        var rotate = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            let key = try options.withDatabase { connection in
                try DeviceStore(connection: connection).claimKey(code, rotate: rotate)
            }
            if output.format == .json {
                print(try JSONOutput.render(["code": code, "claim_key": ClaimKey.display(key)]))
            } else {
                print(ClaimKey.display(key))
            }
        }
    }
}
