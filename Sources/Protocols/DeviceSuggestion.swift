import Telemetry

/// An outlet announced by its firmware (Tasmota discovery, Shelly announce, Zigbee2MQTT's `bridge/devices`, ESPHome
/// discovery), suggested for registration.
public struct DeviceSuggestion: Sendable, Equatable {
    /// The code suggested for `pending_devices` (the device's topic, made a valid code).
    public var code: String
    public var outletProtocol: OutletProtocol
    /// Tasmota `%topic%` / Shelly id.
    public var deviceTopic: String
    /// Tasmota FullTopic, when it is not the default.
    public var fullTopic: String?
    /// The relays: Tasmota 1-based, Shelly 0-based.
    public var channels: [Int]
    /// Tasmota's ON/OFF words (discovery `state`), when known.
    public var onWord: String?
    public var offWord: String?
    /// Named endpoints, one outlet each (Zigbee2MQTT `l1`, `l2`; ESPHome switch object ids); empty: `channels`.
    public var endpoints: [String]
    /// ESPHome: which sensor is what, as discovery said (``ESPHomeProtocol/SensorMap``'s text).
    public var sensorMap: String?

    public init(
        code: String, outletProtocol: OutletProtocol, deviceTopic: String, fullTopic: String? = nil, channels: [Int],
        onWord: String? = nil, offWord: String? = nil, endpoints: [String] = [], sensorMap: String? = nil
    ) {
        self.endpoints = endpoints
        self.sensorMap = sensorMap
        self.code = code
        self.outletProtocol = outletProtocol
        self.deviceTopic = deviceTopic
        self.fullTopic = fullTopic
        self.channels = channels
        self.onWord = onWord
        self.offWord = offWord
    }

    /// `topic` as a device code: characters outside `A-Z a-z 0-9 _ -` become `-`, at most 64 characters.
    public static func code(from topic: String) -> String? {
        let mapped = String(
            topic.unicodeScalars.prefix(64).map { scalar -> Character in
                switch scalar {
                case "A"..."Z", "a"..."z", "0"..."9", "_", "-": Character(scalar)
                default: "-"
                }
            })
        return DeviceCode(mapped)?.rawValue
    }
}

extension TasmotaProtocol {
    /// Reads a retained `tasmota/discovery/<MAC>/config`: `t` (topic), `ft` (FullTopic), `state` (`[OFF, ON, …]`)
    /// and `rl` (relay types; every non-zero entry is a relay, numbered from 1). `nil` without a usable `t`.
    public static func discovery(_ payload: [UInt8]) -> DeviceSuggestion? {
        guard case .object(let members)? = try? JSONParser.parse(payload), case .string(let topic)? = members["t"],
            !topic.isEmpty, !topic.contains("/"), !topic.contains("+"), !topic.contains("#"),
            let code = DeviceSuggestion.code(from: topic)
        else { return nil }
        var fullTopic: String?
        if case .string(let pattern)? = members["ft"], pattern != defaultFullTopic, isValidFullTopic(pattern) {
            fullTopic = pattern
        }
        var channels: [Int] = []
        if case .array(let relays)? = members["rl"] {
            for (index, relay) in relays.enumerated() where (relay.numberValue() ?? 0) != 0 {
                channels.append(index + 1)
            }
        }
        var onWord: String?
        var offWord: String?
        if case .array(let words)? = members["state"], words.count >= 2,
            case .string(let off) = words[0], case .string(let on) = words[1]
        {
            (onWord, offWord) = (on, off)
        }
        return DeviceSuggestion(
            code: code, outletProtocol: .tasmota, deviceTopic: topic, fullTopic: fullTopic,
            channels: channels.isEmpty ? [1] : channels, onWord: onWord, offWord: offWord)
    }
}

extension ShellyGen1Protocol {
    /// Reads `shellies/announce` or `shellies/<id>/announce` (`{"id":…,"model":…,"mac":…,"ip":…,"fw_ver":…}`);
    /// suggests relay 0. `nil` without a usable `id`.
    public static func announcement(_ payload: [UInt8]) -> DeviceSuggestion? {
        guard case .object(let members)? = try? JSONParser.parse(payload), case .string(let id)? = members["id"],
            !id.isEmpty, !id.contains("/"), !id.contains("+"), !id.contains("#"),
            let code = DeviceSuggestion.code(from: id)
        else { return nil }
        return DeviceSuggestion(code: code, outletProtocol: .shellyGen1, deviceTopic: id, channels: [0])
    }
}
