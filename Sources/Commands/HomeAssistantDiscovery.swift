import Foundation
import Protocols
import Telemetry

/// Home Assistant MQTT discovery for outletd's outlets, of every protocol: what to publish, retained, for one
/// outlet.
///
/// Each outlet becomes a device in Home Assistant with a switch and its sensors, each a retained config under
/// `<discovery prefix>/<component>/outletd/<object id>/config`:
/// - a switch whose command topic is outletd's own `<prefix>/<code>/set` for every protocol (so a switch from
///   Home Assistant is a command with outletd's lifecycle: queued, sent in the outlet's own protocol, confirmed
///   or timed out, audited), whose payloads name Home Assistant as the requester (``commandPayload(_:)``);
/// - sensors for power (W), voltage (V), current (A) and energy (Wh, the outlet's counter), each expiring after
///   three report intervals without a message (``ReportIntervals``); a native outlet's buffered readings (an
///   array) show the newest (``nativeReading``).
/// State, sensors and availability are read where the outlet's firmware publishes them (docs/PROTOCOLS.md):
///
/// | protocol | state | sensors | availability |
/// |---|---|---|---|
/// | native | `<prefix>/<code>/state` | `<prefix>/<code>/telemetry` | `<prefix>/<code>/availability` |
/// | tasmota | `stat/<t>/POWER` (`POWER<n>`) | `tele/<t>/SENSOR` `ENERGY` | `tele/<t>/LWT` |
/// | shelly-gen1 | `shellies/<id>/relay/<n>` | `relay/<n>/power`, `relay/<n>/energy` (no V, A) | `shellies/<id>/online` |
/// | shelly-gen2 | `<p>/status/switch:<n>` | the same | `<p>/online` |
///
/// An empty retained payload on the same topics removes them (an outlet disabled or removed); clearing covers
/// every topic any protocol could have announced for the code.
public struct HomeAssistantDiscovery: Sendable {
    /// Home Assistant's discovery prefix (`homeassistant`).
    public var discoveryPrefix: String
    /// outletd's native topic prefix (`outlets`).
    public var topicPrefix: String
    /// outletd's version, in each config's `origin` and as the device's `sw_version`.
    public var version: String
    /// Tasmota's prefixes (`protocols.tasmota_prefixes`).
    public var tasmotaPrefixes: TasmotaProtocol.Prefixes
    /// Shelly Gen1's topic prefix (`protocols.shelly_gen1_prefix`).
    public var shellyGen1Prefix: String
    /// How often each protocol's outlets report: what the sensors' `expire_after` is made of.
    public var reportIntervals: ReportIntervals

    public init(
        discoveryPrefix: String, topicPrefix: String, version: String,
        tasmotaPrefixes: TasmotaProtocol.Prefixes = TasmotaProtocol.Prefixes(), shellyGen1Prefix: String = "shellies",
        reportIntervals: ReportIntervals = ReportIntervals()
    ) {
        self.discoveryPrefix = discoveryPrefix
        self.topicPrefix = topicPrefix
        self.version = version
        self.tasmotaPrefixes = tasmotaPrefixes
        self.shellyGen1Prefix = shellyGen1Prefix
        self.reportIntervals = reportIntervals
    }

    /// How often an outlet of each protocol publishes its readings while all is well, seconds. A sensor expires
    /// (`expire_after`: Home Assistant shows it unavailable) after ``expiryIntervals`` intervals without a
    /// message on its topic, so that an outlet that dies without its last will does not keep showing its last
    /// power; one or two lost reports do not expire it.
    public struct ReportIntervals: Sendable, Equatable {
        /// A native outlet's telemetry (`homeassistant.native_interval_seconds`, 60).
        public var native: Int
        /// Tasmota's `tele/<t>/SENSOR`: its TelePeriod (`homeassistant.tasmota_teleperiod_seconds`, 300, the
        /// firmware's default).
        public var tasmota: Int
        /// Shelly Gen1's `relay/<n>/power` and `energy`: the firmware's MQTT update period (30 s by default).
        public var shellyGen1: Int
        /// Shelly Gen2's `status/switch:<n>`: on every change, and each minute as `aenergy` moves on.
        public var shellyGen2: Int

        public init(native: Int = 60, tasmota: Int = 300, shellyGen1: Int = 30, shellyGen2: Int = 60) {
            self.native = native
            self.tasmota = tasmota
            self.shellyGen1 = shellyGen1
            self.shellyGen2 = shellyGen2
        }

        /// Report intervals a sensor waits before it expires.
        public static let expiryIntervals = 3

        /// The `expire_after` of a sensor of `outletProtocol`, seconds: ``expiryIntervals`` × its interval.
        public func expireAfterSeconds(_ outletProtocol: OutletProtocol) -> Int {
            let interval =
                switch outletProtocol {
                case .native, .zigbee2mqtt, .esphome: native
                case .tasmota: tasmota
                case .shellyGen1: shellyGen1
                case .shellyGen2: shellyGen2
                }
            return Self.expiryIntervals * interval
        }
    }

    /// Who a switch from Home Assistant names as its requester: the command's `requested_by`.
    public static let requester = "home-assistant"

    /// What Home Assistant's switch publishes on the command topic to turn the outlet on (`on`) or off:
    /// outletd's JSON set request naming ``requester`` (`{"requested_by":"home-assistant","state":"on"}`), so the
    /// command's row says who asked. Plain payloads rather than a `command_template`, which Home Assistant's MQTT
    /// switch has not always had.
    public static func commandPayload(_ state: String) -> String {
        #"{"requested_by":"\#(requester)","state":"\#(state)"}"#
    }

    /// What the configs of one outlet depend on (announce again when it changes).
    public struct Outlet: Sendable, Equatable {
        /// The outlet's name (the code when empty).
        public var name: String
        public var outletProtocol: OutletProtocol
        /// Tasmota topic, Shelly Gen1 id or Gen2 prefix; empty for native.
        public var deviceTopic: String
        /// Relay number: Tasmota 1-based, Shelly 0-based.
        public var channel: Int
        /// Tasmota FullTopic.
        public var fullTopic: String
        /// Tasmota's ON/OFF words.
        public var stateWords: TasmotaProtocol.StateWords
        /// Tasmota: the channels of the enabled outlets at the same topic, this one's included (outletd's rule
        /// for one meter with several relays, and `POWER` or `POWER<n>`).
        public var relays: [Int]

        public init(
            name: String, outletProtocol: OutletProtocol = .native, deviceTopic: String = "", channel: Int = 0,
            fullTopic: String = TasmotaProtocol.defaultFullTopic,
            stateWords: TasmotaProtocol.StateWords = TasmotaProtocol.StateWords(), relays: [Int] = []
        ) {
            self.name = name
            self.outletProtocol = outletProtocol
            self.deviceTopic = deviceTopic
            self.channel = channel
            self.fullTopic = fullTopic
            self.stateWords = stateWords
            self.relays = relays
        }
    }

    /// One retained message.
    public struct Message: Sendable, Equatable {
        public var topic: String
        /// The config's JSON, or empty to remove the entity.
        public var payload: [UInt8]
    }

    /// A sensor: its object id suffix, name, device class, unit, state class and precision.
    struct Sensor {
        var key: String
        var name: String
        var deviceClass: String
        var unit: String
        var stateClass: String
        var precision: Int
    }

    static let sensors = [
        Sensor(key: "power", name: "Power", deviceClass: "power", unit: "W", stateClass: "measurement", precision: 1),
        Sensor(
            key: "voltage", name: "Voltage", deviceClass: "voltage", unit: "V", stateClass: "measurement",
            precision: 1),
        Sensor(
            key: "current", name: "Current", deviceClass: "current", unit: "A", stateClass: "measurement",
            precision: 2),
        Sensor(
            key: "energy", name: "Energy", deviceClass: "energy", unit: "Wh", stateClass: "total_increasing",
            precision: 0),
    ]

    /// Every config topic `code` can have, whatever its protocol: the switch's first, then the sensors' (power,
    /// voltage, current, energy). ``clear(code:)`` empties all of them.
    public func topics(code: DeviceCode) -> [String] {
        [switchTopic(code)] + Self.sensors.map { sensorTopic(code, $0) }
    }

    func switchTopic(_ code: DeviceCode) -> String { "\(discoveryPrefix)/switch/outletd/\(code.rawValue)/config" }
    func sensorTopic(_ code: DeviceCode, _ sensor: Sensor) -> String {
        "\(discoveryPrefix)/sensor/outletd/\(code.rawValue)_\(sensor.key)/config"
    }

    /// Where one protocol's outlet publishes: the switch's state, the availability, and per sensor key its
    /// state topic and template (a sensor the firmware does not publish is absent).
    struct Sources {
        var stateTopic: String
        var stateOn: String
        var stateOff: String
        var stateTemplate: String?
        var availabilityTopic: String
        var available: String
        var notAvailable: String
        var sensors: [String: (topic: String, template: String)]
        var model: String
    }

    func sources(code: DeviceCode, outlet: Outlet) -> Sources {
        switch outlet.outletProtocol {
        // Zigbee2MQTT and ESPHome announce their own entities: ``announce(code:outlet:)`` clears outletd's.
        case .native, .zigbee2mqtt, .esphome:
            let base = "\(topicPrefix)/\(code.rawValue)"
            let telemetry = "\(base)/telemetry"
            return Sources(
                stateTopic: "\(base)/state", stateOn: "on", stateOff: "off",
                stateTemplate: "{{ value_json.state if value_json is defined else value }}",
                availabilityTopic: "\(base)/availability", available: "online", notAvailable: "offline",
                sensors: [
                    // Power may be left out; outletd then stores voltage × current, and so does this.
                    "power": (
                        telemetry,
                        Self.nativeReading
                            + "{% set p = r.get('power') | float(none) %}{% set v = r.get('voltage') | float(none) %}"
                            + "{% set c = r.get('current') | float(none) %}{{ p if p is not none else "
                            + "('' if v is none or c is none else v * c) }}"
                    ),
                    "voltage": (telemetry, Self.nativeTemplate("voltage")),
                    "current": (telemetry, Self.nativeTemplate("current")),
                    "energy": (telemetry, Self.nativeTemplate("energy_wh")),
                ], model: "smart outlet (outletd native protocol)")
        case .tasmota:
            func topic(_ prefix: String, _ suffix: String) -> String {
                TasmotaProtocol.topic(
                    fullTopic: outlet.fullTopic, prefix: prefix, deviceTopic: outlet.deviceTopic, suffix: suffix)
            }
            let channel = max(outlet.channel, 1)
            let relays = Set(outlet.relays + [channel]).sorted()
            // A device with one relay publishes `POWER`, one with several `POWER1`…: outletd knows the relays
            // registered at the topic.
            let power = relays.count <= 1 && channel == 1 ? "POWER" : "POWER\(channel)"
            let sensor = topic(tasmotaPrefixes.telemetry, "SENSOR")
            func template(_ key: String, factor: String = "") -> String {
                Self.tasmotaTemplate(key: key, channel: channel, relays: relays, factor: factor)
            }
            return Sources(
                stateTopic: topic(tasmotaPrefixes.status, power), stateOn: outlet.stateWords.on,
                stateOff: outlet.stateWords.off, stateTemplate: nil,
                availabilityTopic: topic(tasmotaPrefixes.telemetry, "LWT"), available: "Online",
                notAvailable: "Offline",
                sensors: [
                    "power": (sensor, template("Power")), "voltage": (sensor, template("Voltage")),
                    "current": (sensor, template("Current")),
                    // `Total` is kWh: Wh like every outlet's counter.
                    "energy": (sensor, template("Total", factor: " * 1000")),
                ], model: "Tasmota")
        case .shellyGen1:
            let relay = "\(shellyGen1Prefix)/\(outlet.deviceTopic)/relay/\(outlet.channel)"
            return Sources(
                stateTopic: relay, stateOn: "on", stateOff: "off",
                // `overpower`: the relay switched itself off.
                stateTemplate: "{{ 'off' if value == 'overpower' else value }}",
                availabilityTopic: "\(shellyGen1Prefix)/\(outlet.deviceTopic)/online", available: "true",
                notAvailable: "false",
                // A Gen1 plug publishes no voltage or current per relay (outletd stores them as NULL): no sensors.
                sensors: [
                    "power": ("\(relay)/power", "{{ value }}"),
                    // Watt-minutes ÷ 60 → Wh.
                    "energy": ("\(relay)/energy", "{{ (value | float / 60) | round(2) }}"),
                ], model: "Shelly Gen1")
        case .shellyGen2:
            let status = "\(outlet.deviceTopic)/status/switch:\(outlet.channel)"
            return Sources(
                stateTopic: status, stateOn: "on", stateOff: "off",
                stateTemplate: "{{ 'on' if value_json.output else 'off' }}",
                availabilityTopic: "\(outlet.deviceTopic)/online", available: "true", notAvailable: "false",
                sensors: [
                    "power": (status, "{{ value_json.apower }}"), "voltage": (status, "{{ value_json.voltage }}"),
                    "current": (status, "{{ value_json.current }}"),
                    "energy": (status, "{{ value_json.aenergy.total }}"),
                ], model: "Shelly Gen2/3")
        }
    }

    /// The start of every native sensor's template: `r`, the reading Home Assistant shows. A telemetry payload is
    /// one reading (an object) or the readings an outlet buffered while offline (an array, oldest first): then
    /// the last element, the newest. Anything else (not JSON, an empty array, an element that is not an object)
    /// is an empty reading, whose sensors render nothing (Home Assistant keeps their state) without a warning.
    static let nativeReading =
        "{% set j = value_json if value_json is defined else none %}"
        + "{% set r = j[-1] if j is sequence and j is not string and j is not mapping and j | length > 0 else j %}"
        + "{% set r = r if r is mapping else {} %}"

    /// A native sensor's template: member `key` of the newest reading as a number (numbers sent as strings
    /// too, as outletd accepts them), or nothing when it is missing, `null` or not a number.
    static func nativeTemplate(_ key: String) -> String {
        nativeReading + "{% set x = r.get('\(key)') | float(none) %}{{ '' if x is none else x }}"
    }

    /// The template reading `ENERGY.<key>` of a Tasmota `SENSOR` for relay `channel` (1-based) the way outletd's
    /// decoder does (``TasmotaProtocol/decodeSensor(_:channel:channelCount:meterChannel:receivedAt:limits:)``):
    /// an array is indexed by relay; a scalar is this relay's when it is the only registered relay of the device,
    /// or the lowest of several on a device with one meter (`Power` a number; `Voltage` is shared by every relay
    /// when `Power` is an array and holds this relay's). Otherwise, and for a `SENSOR` without `ENERGY`, `None`
    /// (unknown).
    static func tasmotaTemplate(key: String, channel: Int, relays: [Int], factor: String) -> String {
        // A shared `Voltage` counts only with a power of this relay (an array too short: no reading at all).
        let powerIsMine = "e.Power | length >= \(channel)"
        let scalarIsMine: String
        if relays.count <= 1 || channel == relays.min() {
            scalarIsMine =
                key == "Voltage" ? "not per_relay or \(powerIsMine)" : relays.count <= 1 ? "true" : "not per_relay"
        } else {
            scalarIsMine = key == "Voltage" ? "per_relay and \(powerIsMine)" : "false"
        }
        return "{% set e = value_json.ENERGY if value_json.ENERGY is defined else {} %}"
            + "{% set per_relay = e.Power is sequence and e.Power is not string %}{% set x = e.\(key) %}"
            + "{% if x is sequence and x is not string %}{% set x = x[\(channel - 1)] if x | length >= \(channel) "
            + "else none %}{% elif not (\(scalarIsMine)) %}{% set x = none %}{% endif %}"
            + "{{ none if x is not defined or x is none else (x | float\(factor)) }}"
    }

    /// The retained configs announcing native outlet `code` named `name` (the code when empty).
    public func announce(code: DeviceCode, name: String) throws -> [Message] {
        try announce(code: code, outlet: Outlet(name: name))
    }

    /// The retained messages announcing `outlet` as `code`, one per topic of ``topics(code:)`` in that order: the
    /// switch, then the sensors; a sensor its protocol does not publish has an empty payload (removed).
    /// An outlet whose firmware announces itself (Zigbee2MQTT, ESPHome: ``OutletProtocol/announcesItself``) gets
    /// the empty configs of ``clear(code:)``: Home Assistant shows the firmware's own entities, not a duplicate.
    public func announce(code: DeviceCode, outlet: Outlet) throws -> [Message] {
        guard !outlet.outletProtocol.announcesItself else { return clear(code: code) }
        let sources = sources(code: code, outlet: outlet)
        let device: [String: Any] = [
            "identifiers": ["outletd_\(code.rawValue)"], "name": outlet.name.isEmpty ? code.rawValue : outlet.name,
            "manufacturer": "outletd", "model": sources.model, "serial_number": code.rawValue,
            "sw_version": version,
        ]
        let common: [String: Any] = [
            "device": device, "origin": ["name": "outletd", "sw_version": version],
            "availability_topic": sources.availabilityTopic, "payload_available": sources.available,
            "payload_not_available": sources.notAvailable, "qos": 1,
        ]
        var messages: [(String, [String: Any])] = []
        var switchConfig = common
        switchConfig["name"] = NSNull()  // the device's name alone
        switchConfig["unique_id"] = "outletd_\(code.rawValue)_switch"
        switchConfig["command_topic"] = NativeProtocol.topic(prefix: topicPrefix, code: code, kind: .set)
        switchConfig["payload_on"] = Self.commandPayload("on")
        switchConfig["payload_off"] = Self.commandPayload("off")
        switchConfig["device_class"] = "outlet"
        switchConfig["state_topic"] = sources.stateTopic
        switchConfig["state_on"] = sources.stateOn
        switchConfig["state_off"] = sources.stateOff
        if let template = sources.stateTemplate { switchConfig["value_template"] = template }
        switchConfig["optimistic"] = false
        messages.append((switchTopic(code), switchConfig))
        for sensor in Self.sensors {
            guard let source = sources.sensors[sensor.key] else {
                // Not published by this firmware: an empty config, so none stays from an earlier protocol.
                messages.append((sensorTopic(code, sensor), [:]))
                continue
            }
            var config = common
            config["name"] = sensor.name
            config["unique_id"] = "outletd_\(code.rawValue)_\(sensor.key)"
            config["state_topic"] = source.topic
            config["value_template"] = source.template
            config["device_class"] = sensor.deviceClass
            config["unit_of_measurement"] = sensor.unit
            config["state_class"] = sensor.stateClass
            config["suggested_display_precision"] = sensor.precision
            config["expire_after"] = reportIntervals.expireAfterSeconds(outlet.outletProtocol)
            messages.append((sensorTopic(code, sensor), config))
        }
        return try messages.map { topic, config in
            if config.isEmpty { return Message(topic: topic, payload: []) }
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

    /// The empty retained messages that remove outlet `code`'s entities: every topic of ``topics(code:)``, so
    /// that a sensor its protocol (or an earlier protocol) had is removed too.
    public func clear(code: DeviceCode) -> [Message] {
        topics(code: code).map { Message(topic: $0, payload: []) }
    }
}
