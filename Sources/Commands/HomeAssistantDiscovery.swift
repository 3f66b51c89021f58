import Foundation
import Telemetry

/// Home Assistant MQTT discovery for outletd's native outlets: what to publish, retained, for one outlet.
///
/// Each outlet becomes a device in Home Assistant with five entities, each a retained config under
/// `<discovery prefix>/<component>/outletd/<object id>/config`:
/// - a switch whose command topic is outletd's own `<prefix>/<code>/set` (so a switch from Home Assistant is a
///   command with outletd's lifecycle: queued, sent, confirmed or timed out, audited), its state the outlet's
///   `<prefix>/<code>/state` (`on`/`off` or `{"state":"on",…}`);
/// - sensors for power (W), voltage (V), current (A) and energy (Wh, the outlet's counter) from
///   `<prefix>/<code>/telemetry`.
/// All share the outlet's availability (`<prefix>/<code>/availability`, `online`/`offline`).
/// An empty retained payload on the same topics removes them (an outlet disabled or removed).
public struct HomeAssistantDiscovery: Sendable {
    /// Home Assistant's discovery prefix (`homeassistant`).
    public var discoveryPrefix: String
    /// outletd's native topic prefix (`outlets`).
    public var topicPrefix: String
    /// outletd's version, in each config's `origin`.
    public var version: String

    public init(discoveryPrefix: String, topicPrefix: String, version: String) {
        self.discoveryPrefix = discoveryPrefix
        self.topicPrefix = topicPrefix
        self.version = version
    }

    /// One retained message.
    public struct Message: Sendable, Equatable {
        public var topic: String
        /// The config's JSON, or empty to remove the entity.
        public var payload: [UInt8]
    }

    /// A sensor of the telemetry: its object id suffix, name, device class, unit, state class, precision and the
    /// template that reads it from the native telemetry JSON.
    struct Sensor {
        var key: String
        var name: String
        var deviceClass: String
        var unit: String
        var stateClass: String
        var precision: Int
        var template: String
    }

    static let sensors = [
        Sensor(
            key: "power", name: "Power", deviceClass: "power", unit: "W", stateClass: "measurement", precision: 1,
            // Power may be left out; outletd then stores voltage × current, and so does this.
            template:
                "{{ value_json.power if value_json.power is defined else (value_json.voltage * value_json.current) }}"),
        Sensor(
            key: "voltage", name: "Voltage", deviceClass: "voltage", unit: "V", stateClass: "measurement",
            precision: 1, template: "{{ value_json.voltage }}"),
        Sensor(
            key: "current", name: "Current", deviceClass: "current", unit: "A", stateClass: "measurement",
            precision: 2, template: "{{ value_json.current }}"),
        Sensor(
            key: "energy", name: "Energy", deviceClass: "energy", unit: "Wh", stateClass: "total_increasing",
            precision: 0, template: "{{ value_json.energy_wh }}"),
    ]

    /// The config topics of `code`: the switch's first, then the sensors'.
    public func topics(code: DeviceCode) -> [String] {
        ["\(discoveryPrefix)/switch/outletd/\(code.rawValue)/config"]
            + Self.sensors.map { "\(discoveryPrefix)/sensor/outletd/\(code.rawValue)_\($0.key)/config" }
    }

    /// The retained configs announcing outlet `code` named `name` (the code when empty).
    public func announce(code: DeviceCode, name: String) throws -> [Message] {
        let base = "\(topicPrefix)/\(code.rawValue)"
        let device: [String: Any] = [
            "identifiers": ["outletd_\(code.rawValue)"], "name": name.isEmpty ? code.rawValue : name,
            "manufacturer": "outletd", "model": "smart outlet (outletd native protocol)",
            "serial_number": code.rawValue,
        ]
        let common: [String: Any] = [
            "device": device, "origin": ["name": "outletd", "sw_version": version],
            "availability_topic": "\(base)/availability", "payload_available": "online",
            "payload_not_available": "offline", "qos": 1,
        ]
        var configs: [[String: Any]] = []
        var switchConfig = common
        switchConfig["name"] = NSNull()  // the device's name alone
        switchConfig["unique_id"] = "outletd_\(code.rawValue)_switch"
        switchConfig["command_topic"] = "\(base)/set"
        switchConfig["payload_on"] = "on"
        switchConfig["payload_off"] = "off"
        switchConfig["state_topic"] = "\(base)/state"
        switchConfig["state_on"] = "on"
        switchConfig["state_off"] = "off"
        switchConfig["value_template"] = "{{ value_json.state if value_json is defined else value }}"
        switchConfig["optimistic"] = false
        configs.append(switchConfig)
        for sensor in Self.sensors {
            var config = common
            config["name"] = sensor.name
            config["unique_id"] = "outletd_\(code.rawValue)_\(sensor.key)"
            config["state_topic"] = "\(base)/telemetry"
            config["value_template"] = sensor.template
            config["device_class"] = sensor.deviceClass
            config["unit_of_measurement"] = sensor.unit
            config["state_class"] = sensor.stateClass
            config["suggested_display_precision"] = sensor.precision
            configs.append(config)
        }
        return try zip(topics(code: code), configs).map { topic, config in
            let data = try JSONSerialization.data(
                withJSONObject: config, options: [.sortedKeys, .withoutEscapingSlashes])
            return Message(topic: topic, payload: Array(data))
        }
    }

    /// The filter matching every config outletd publishes (`<discovery prefix>/+/outletd/+/config`).
    public var configFilter: String { "\(discoveryPrefix)/+/outletd/+/config" }

    /// The outlet a config topic of ``topics(code:)`` belongs to, or nil for any other topic.
    public func code(ofTopic topic: String) -> DeviceCode? {
        let head = "\(discoveryPrefix)/"
        guard topic.hasPrefix(head), topic.hasSuffix("/config") else { return nil }
        let parts = topic.dropFirst(head.count).dropLast("/config".count).split(
            separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "outletd" else { return nil }
        switch parts[0] {
        case "switch": return DeviceCode(String(parts[2]))
        case "sensor":
            for sensor in Self.sensors where parts[2].hasSuffix("_\(sensor.key)") {
                return DeviceCode(String(parts[2].dropLast(sensor.key.count + 1)))
            }
            return nil
        default: return nil
        }
    }

    /// The empty retained messages that remove outlet `code`'s entities.
    public func clear(code: DeviceCode) -> [Message] {
        topics(code: code).map { Message(topic: $0, payload: []) }
    }
}
