import Foundation
import Telemetry

/// ESPHome's MQTT: one plain value per entity under the node's topic prefix (docs/ZIGBEE-ESPHOME.md, "ESPHome").
///
/// Sensors publish `<prefix>/sensor/<object id>/state` (a number as text, `nan` or `None` without a value), a switch
/// `<prefix>/switch/<object id>/state` `ON`/`OFF` and listens on `…/command`, the node `<prefix>/status`
/// `online`/`offline` (birth and will). Which sensor is the outlet's power, voltage, current and energy counter is
/// a ``SensorMap``: from ESPHome's own discovery, `--sensor` flags, or the usual object ids (``defaultRole(of:)``).
public enum ESPHomeProtocol {
    /// The default subscriptions (`protocols.esphome_subscriptions`): prefixes of one level.
    public static let defaultSubscriptions = "+/sensor/+/state,+/switch/+/state,+/status"

    /// What an ESPHome topic carries.
    public enum TopicKind: Sendable, Equatable, Hashable {
        /// `<prefix>/sensor/<object id>/state`: one sensor's value.
        case sensor(objectID: String)
        /// `<prefix>/switch/<object id>/state`: `ON`/`OFF`.
        case switchState(objectID: String)
        /// `<prefix>/status`: `online`/`offline`.
        case status
    }

    /// Splits `<prefix>/<rest>`; the prefix may have several levels. `nil` for other topics (`…/command` too).
    public static func parseTopic(_ topic: String) -> (prefix: String, kind: TopicKind)? {
        guard !topic.contains("+"), !topic.contains("#") else { return nil }
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2, !levels.contains(where: \.isEmpty) else { return nil }
        if levels.last == "status" { return (levels.dropLast().joined(separator: "/"), .status) }
        guard levels.count >= 4, levels.last == "state" else { return nil }
        let prefix = levels.dropLast(3).joined(separator: "/")
        let objectID = String(levels[levels.count - 2])
        switch levels[levels.count - 3] {
        case "sensor": return (prefix, .sensor(objectID: objectID))
        case "switch": return (prefix, .switchState(objectID: objectID))
        default: return nil
        }
    }

    /// What a sensor is to the outlet.
    public enum SensorRole: String, Sendable, CaseIterable, Hashable, Comparable {
        case power
        case voltage
        case current
        case powerFactor = "power_factor"
        case energy

        public static func < (a: SensorRole, b: SensorRole) -> Bool {
            allCases.firstIndex(of: a) ?? 0 < allCases.firstIndex(of: b) ?? 0
        }

        /// The stored unit.
        public var unit: String {
            switch self {
            case .power: "W"
            case .voltage: "V"
            case .current: "A"
            case .powerFactor: ""
            case .energy: "Wh"
            }
        }
    }

    /// The factor from `unit` to the stored unit of a role (kWh → Wh: 1000), or nil for a unit outletd does not
    /// know; an empty unit is the stored one.
    public static func factor(unit: String, for role: SensorRole) -> Double? {
        switch (role, unit) {
        case (_, ""): 1
        case (.power, "W"), (.voltage, "V"), (.current, "A"), (.energy, "Wh"), (.powerFactor, "%"):
            role == .powerFactor ? 0.01 : 1
        case (.power, "kW"), (.energy, "kWh"), (.voltage, "kV"): 1_000
        case (.current, "mA"), (.voltage, "mV"): 0.001
        case (.energy, "MWh"): 1_000_000
        default: nil
        }
    }

    /// One sensor of the map: its object id and the factor to the stored unit.
    public struct Source: Sendable, Equatable, Hashable {
        public var objectID: String
        public var factor: Double

        public init(objectID: String, factor: Double = 1) {
            self.objectID = objectID
            self.factor = factor
        }
    }

    /// Which sensor is which role, and which switch is the outlet's. Its text, stored in `devices.sensor_map`
    /// and `devices.discovered_sensor_map`: `power=power,energy=total_energy:kWh,switch=relay` (a unit after `:`).
    public struct SensorMap: Sendable, Equatable, Hashable {
        public var sources: [SensorRole: Source]
        public var switchID: String?

        public init(sources: [SensorRole: Source] = [:], switchID: String? = nil) {
            self.sources = sources
            self.switchID = switchID
        }

        /// Reads the text form; nil with the reason when an entry is not `role=object_id[:unit]`.
        public static func parse(_ text: String) -> Result<SensorMap, Rejection> {
            var map = SensorMap()
            for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
            where !entry.isEmpty {
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[1].isEmpty else {
                    return .failure(Rejection(reason: .wrongType, detail: "\"\(entry)\" is not role=object_id"))
                }
                let target = parts[1].split(separator: ":", maxSplits: 1).map(String.init)
                guard isObjectID(target[0]) else {
                    return .failure(Rejection(reason: .wrongType, detail: "\"\(target[0])\" is not an object id"))
                }
                if parts[0] == "switch" {
                    map.switchID = target[0]
                    continue
                }
                guard let role = SensorRole(rawValue: parts[0]) else {
                    return .failure(
                        Rejection(
                            reason: .wrongType,
                            detail: "\"\(parts[0])\" is none of power, voltage, current, power_factor, energy, switch"))
                }
                let unit = target.count > 1 ? target[1] : ""
                guard let factor = factor(unit: unit, for: role) else {
                    return .failure(Rejection(reason: .wrongType, detail: "unit \"\(unit)\" of \(role.rawValue)"))
                }
                map.sources[role] = Source(objectID: target[0], factor: factor)
            }
            return .success(map)
        }

        /// The text form (roles in a fixed order; the unit only where the factor is not 1).
        public var text: String {
            var entries = sources.sorted { $0.key < $1.key }.map { role, source -> String in
                let unit =
                    source.factor == 1
                    ? ""
                    : ["kW", "kWh", "kV", "mA", "mV", "MWh", "%"].first {
                        ESPHomeProtocol.factor(unit: $0, for: role) == source.factor
                    }.map { ":\($0)" } ?? ""
                return "\(role.rawValue)=\(source.objectID)\(unit)"
            }
            if let switchID { entries.append("switch=\(switchID)") }
            return entries.joined(separator: ",")
        }

        /// This map with `other`'s entries on top (discovery over flags).
        public func overlaid(by other: SensorMap) -> SensorMap {
            SensorMap(sources: sources.merging(other.sources) { $1 }, switchID: other.switchID ?? switchID)
        }

        /// The role of `objectID`: its entry, else the usual object ids for a role this map does not name.
        public func role(of objectID: String) -> (role: SensorRole, factor: Double)? {
            if let (role, source) = sources.first(where: { $0.value.objectID == objectID }) {
                return (role, source.factor)
            }
            guard let role = ESPHomeProtocol.defaultRole(of: objectID), sources[role] == nil else { return nil }
            return (role, 1)
        }
    }

    static func isObjectID(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 128 && !text.contains("/") && !text.contains("+") && !text.contains("#")
            && !text.contains(",") && !text.contains(":") && !text.contains("=")
    }

    /// Words that make an energy sensor a periodic one (back to 0 every day, week…), never the outlet's counter.
    static let periodicWords: Set<Substring> = [
        "daily", "today", "yesterday", "day", "week", "weekly", "month", "monthly", "year", "yearly", "hour", "hourly",
    ]

    /// The role of a usual object id, with or without the node's name in front (`power`, `sonoff_s31_power`):
    /// `…power` (not apparent or reactive), `…voltage`, `…current`, `…power_factor`, `…energy` (not a daily,
    /// weekly… one: `total_daily_energy` is no counter). Nil for anything else (Wi-Fi signal, uptime).
    public static func defaultRole(of objectID: String) -> SensorRole? {
        let words = objectID.lowercased().split(separator: "_")
        guard let last = words.last else { return nil }
        switch last {
        case "power":
            let before = words.dropLast().last
            return before == "apparent" || before == "reactive" ? nil : .power
        case "factor" where words.dropLast().last == "power": return .powerFactor
        case "voltage": return .voltage
        case "current": return .current
        case "energy": return words.contains(where: periodicWords.contains) ? nil : .energy
        default: return nil
        }
    }

    /// Whether a usual energy id names a kept total (`total_energy`): of two counters by the usual ids, that one.
    public static func isTotal(_ objectID: String) -> Bool {
        objectID.lowercased().split(separator: "_").contains("total")
    }

    // MARK: - Payloads

    /// A sensor's value: a number (as ESPHome formats it to the sensor's accuracy); `nan`, `None` or empty is no
    /// value (a sensor without a state yet).
    public static func value(_ payload: [UInt8]) -> Result<Double?, Rejection> {
        let text = PayloadText.trimmed(payload)
        if text.isEmpty || text.lowercased() == "nan" || text == "None" || text == "null" { return .success(nil) }
        guard let value = JSONParser.parseNumber(text), value.isFinite else {
            return .failure(Rejection(reason: .wrongType, detail: "\"\(text.prefix(40))\" is not a number"))
        }
        return .success(value)
    }

    /// A switch's state: `ON` / `OFF`.
    public static func switchState(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        switch PayloadText.trimmed(payload).uppercased() {
        case "ON": .success(StateReport(state: .on))
        case "OFF": .success(StateReport(state: .off))
        case let word: .failure(Rejection(reason: .invalidStateReport, detail: "\"\(word.prefix(40))\" is not ON/OFF"))
        }
    }

    /// `<prefix>/status`: `online` / `offline`.
    public static func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        switch PayloadText.trimmed(payload).lowercased() {
        case "online": .success(true)
        case "offline": .success(false)
        case let word: .failure(Rejection(reason: .invalidStateReport, detail: "status \"\(word.prefix(40))\""))
        }
    }

    /// `<prefix>/switch/<object id>/command` with `ON` / `OFF`; confirmed by the switch's next state.
    public static func commandMessage(prefix: String, switchID: String, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        ("\(prefix)/switch/\(switchID)/command", Array((state == .on ? "ON" : "OFF").utf8))
    }

    /// A reading from one update cycle's values, already in stored units.
    public static func reading(
        _ values: [SensorRole: Double], receivedAt: Date, limits: ValidationLimits
    ) -> DecodedMessage {
        ReadingBuilder.message(
            ReadingBuilder.build(
                powerWatts: values[.power], voltageVolts: values[.voltage], currentAmperes: values[.current],
                powerFactor: values[.powerFactor], energyWattHours: values[.energy], deviceTime: nil,
                receivedAt: receivedAt, limits: limits))
    }
}
