import Foundation
import MQTT
import Protocols
import Runtime
import Telemetry

/// `outletd simulate --protocol zigbee2mqtt|esphome`: the simulated fleet speaks a firmware's MQTT instead of the
/// native protocol (docs/PROTOCOLS.md). Each outlet's topic is its code: the Zigbee2MQTT friendly name under
/// `protocols.zigbee2mqtt_base_topic`, the ESPHome topic prefix.
///
/// - Zigbee2MQTT: one JSON state per reading on `<base>/<code>` (`power` W, `voltage` V, `current` A, `energy` kWh,
///   `state`, `linkquality`), availability `{"state":"online"}`; with `--obey-commands` it answers
///   `<base>/<code>/set` with its new state, as the bridge does.
/// - ESPHome: one value per sensor and reading on `<code>/sensor/<power|voltage|current|power_factor|energy>/state`
///   (the usual object ids; energy in Wh), `<code>/status` `online`; the switch `relay` answers
///   `<code>/switch/relay/command` on `<code>/switch/relay/state`.
final class ForeignSimulation: Sendable {
    let outletProtocol: OutletProtocol
    let baseTopic: String
    let switchedOn: Guarded<[String: Bool]>
    private let clientBox = Guarded<MQTTClient?>(nil)
    private let repliesPublished = Guarded<UInt64>(0)

    init(outletProtocol: OutletProtocol, baseTopic: String, switchedOn: Guarded<[String: Bool]>) {
        self.outletProtocol = outletProtocol
        self.baseTopic = baseTopic
        self.switchedOn = switchedOn
    }

    var client: MQTTClient? {
        get { clientBox.withLock { $0 } }
        set { clientBox.withLock { $0 = newValue } }
    }

    /// State reports published in answer to commands (QoS 1), for the in-flight window.
    var published: UInt64 { repliesPublished.withLock { $0 } }

    /// The filter of the commands the fleet obeys.
    var commandFilter: String {
        outletProtocol == .zigbee2mqtt ? "\(baseTopic)/+/set" : "+/switch/relay/command"
    }

    /// Availability (retained) of `code`.
    func availability(_ code: String, online: Bool) -> (topic: String, payload: [UInt8]) {
        let word = online ? "online" : "offline"
        return outletProtocol == .zigbee2mqtt
            ? ("\(baseTopic)/\(code)/availability", Array(#"{"state":"\#(word)"}"#.utf8))
            : ("\(code)/status", Array(word.utf8))
    }

    /// The messages of one reading of `code`.
    func messages(_ reading: Reading, code: String, isOn: Bool) -> [(topic: String, payload: [UInt8])] {
        let energy = reading.energyWattHours ?? 0
        if outletProtocol == .zigbee2mqtt {
            let json =
                #"{"current":\#(reading.currentAmperes ?? 0),"energy":\#((energy / 10).rounded() / 100),"linkquality":\#(120 + Int(energy) % 60),"power":\#(reading.powerWatts),"state":"\#(isOn ? "ON" : "OFF")","voltage":\#(reading.voltageVolts ?? 0)}"#
            return [("\(baseTopic)/\(code)", Array(json.utf8))]
        }
        let values: [(String, Double)] = [
            ("current", reading.currentAmperes ?? 0), ("voltage", reading.voltageVolts ?? 0),
            ("power", reading.powerWatts), ("power_factor", reading.powerFactor ?? 1), ("energy", energy),
        ]
        return values.map { ("\(code)/sensor/\($0.0)/state", Array(String(format: "%.3f", $0.1).utf8)) }
    }

    /// Called on the MQTT thread: a command switches the outlet, which answers with its state.
    func handle(_ message: MQTTMessage) {
        let code: String
        let isOn: Bool
        if outletProtocol == .zigbee2mqtt {
            guard message.topic.hasPrefix(baseTopic + "/"), message.topic.hasSuffix("/set"),
                case .string(let word)? = (try? JSONParser.parse(message.payload))?["state"]
            else { return }
            code = String(message.topic.dropFirst(baseTopic.count + 1).dropLast(4))
            isOn = word.uppercased() == "ON"
        } else {
            guard let slash = message.topic.firstIndex(of: "/") else { return }
            code = String(message.topic[..<slash])
            isOn = PayloadWord.upper(message.payload) == "ON"
        }
        let known = switchedOn.withLock { state -> Bool in
            guard state[code] != nil else { return false }
            state[code] = isOn
            return true
        }
        guard known else { return }
        let reply: (String, String) =
            outletProtocol == .zigbee2mqtt
            ? ("\(baseTopic)/\(code)", #"{"state":"\#(isOn ? "ON" : "OFF")"}"#)
            : ("\(code)/switch/relay/state", isOn ? "ON" : "OFF")
        repliesPublished.withLock { $0 += 1 }
        if (try? client?.publish(reply.0, payload: Array(reply.1.utf8), qos: 1, retain: true)) == nil {
            repliesPublished.withLock { $0 -= 1 }
        }
    }
}

/// A plain payload as an upper-case word.
enum PayloadWord {
    static func upper(_ payload: [UInt8]) -> String {
        String(decoding: payload, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
    }
}
