import Telemetry

/// ESPHome's own Home Assistant discovery: `<discovery prefix>/<component>/<node>/<object id>/config`, with long
/// keys or the abbreviated ones ESPHome sends by default (`stat_t`, `dev_cla`, `unit_of_meas`, `stat_cla`).
///
/// An entity is matched to its outlet by its state topic (`<topic prefix>/<component>/<object id>/state`), not by
/// the node name of the discovery topic: `name_add_mac_suffix` adds the MAC to the node name at run time, while the
/// topic prefix stays the configured name. Other publishers' configs in the same space (Zigbee2MQTT's, whose state
/// topic is the device's JSON state; outletd's own) are not ESPHome's: ``entity(component:node:objectID:payload:)``
/// returns nil for them.
public enum ESPHomeDiscovery {
    /// One sensor or switch a node announced.
    public struct Entity: Sendable, Equatable {
        /// `sensor` or `switch`.
        public var component: String
        /// The node name of the discovery topic (with the MAC suffix, if any).
        public var node: String
        public var objectID: String
        /// The topic prefix, from the state topic.
        public var prefix: String
        public var deviceClass: String?
        public var unit: String?
        public var stateClass: String?
        public var name: String?

        public init(
            component: String, node: String, objectID: String, prefix: String, deviceClass: String? = nil,
            unit: String? = nil, stateClass: String? = nil, name: String? = nil
        ) {
            self.component = component
            self.node = node
            self.objectID = objectID
            self.prefix = prefix
            self.deviceClass = deviceClass
            self.unit = unit
            self.stateClass = stateClass
            self.name = name
        }
    }

    /// Splits `<discovery prefix>/<component>/<node>/<object id>/config` for the sensor and switch components.
    public static func parseTopic(_ topic: String, discoveryPrefix: String) -> (
        component: String, node: String, objectID: String
    )? {
        guard topic.hasPrefix(discoveryPrefix + "/"), topic.hasSuffix("/config") else { return nil }
        let levels = topic.dropFirst(discoveryPrefix.count + 1).dropLast("/config".count).split(
            separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 3, levels[0] == "sensor" || levels[0] == "switch", !levels.contains(where: \.isEmpty)
        else { return nil }
        return (String(levels[0]), String(levels[1]), String(levels[2]))
    }

    /// The entity a retained config announces; nil for an empty payload (removed), a config of another publisher
    /// (its state topic is not `<prefix>/<component>/<object id>/state`) or a config without ESPHome's marks (its
    /// `sw` version names ESPHome or a config hash, or its unique id is ESPHome's default `ESP<component>…`).
    public static func entity(component: String, node: String, objectID: String, payload: [UInt8]) -> Entity? {
        guard case .object(let config)? = try? JSONParser.parse(payload) else { return nil }
        func text(_ keys: String...) -> String? {
            for key in keys { if case .string(let value)? = config[key] { return value } }
            return nil
        }
        guard let stateTopic = text("stat_t", "state_topic") else { return nil }
        let suffix = "/\(component)/\(objectID)/state"
        guard stateTopic.hasSuffix(suffix), stateTopic.count > suffix.count else { return nil }
        var software = ""
        if case .string(let version)? = (config["dev"] ?? config["device"])?["sw"]
            ?? (config["dev"] ?? config["device"])?["sw_version"]
        {
            software = version.lowercased()
        }
        let uniqueID = text("uniq_id", "unique_id") ?? ""
        guard software.contains("esphome") || software.contains("config hash") || uniqueID.hasPrefix("ESP\(component)")
        else { return nil }
        return Entity(
            component: component, node: node, objectID: objectID, prefix: String(stateTopic.dropLast(suffix.count)),
            deviceClass: text("dev_cla", "device_class"), unit: text("unit_of_meas", "unit_of_measurement"),
            stateClass: text("stat_cla", "state_class"), name: text("name"))
    }

    /// The role a discovered sensor plays: its device class, else its unit, else its object id; nil for sensors
    /// that are no meter (signal, uptime) and for periodic energy sensors (a daily energy: back to 0 at midnight).
    public static func role(of entity: Entity) -> (role: ESPHomeProtocol.SensorRole, factor: Double)? {
        let unit = entity.unit ?? ""
        var role: ESPHomeProtocol.SensorRole?
        switch entity.deviceClass {
        case "power"?: role = .power
        case "voltage"?: role = .voltage
        case "current"?: role = .current
        case "power_factor"?: role = .powerFactor
        case "energy"?: role = .energy
        case nil, ""?:
            switch unit {
            case "W", "kW": role = .power
            case "V": role = .voltage
            case "A", "mA": role = .current
            case "Wh", "kWh": role = .energy
            default: role = ESPHomeProtocol.defaultRole(of: entity.objectID)
            }
        default: role = nil
        }
        guard let role, let factor = ESPHomeProtocol.factor(unit: unit, for: role) else { return nil }
        if role == .energy, isPeriodic(entity) { return nil }
        return (role, factor)
    }

    /// Whether an energy sensor restarts by itself (daily, weekly…): by its object id's or name's words.
    static func isPeriodic(_ entity: Entity) -> Bool {
        let words = (entity.objectID + " " + (entity.name ?? "")).lowercased().split(whereSeparator: {
            !$0.isLetter && !$0.isNumber
        })
        return words.contains(where: ESPHomeProtocol.periodicWords.contains)
    }

    /// The map a node's discovered entities make. Of several candidates for a role, the usual object id wins
    /// (`power` over another power sensor); of several energy sensors, the counter is a `total_increasing` one that
    /// never resets by itself, a kept total (`total_energy`, the Athom plug's, restored from flash) before one
    /// counted since boot; the switch is the node's only one.
    public static func map(_ entities: [Entity]) -> ESPHomeProtocol.SensorMap {
        var map = ESPHomeProtocol.SensorMap()
        var candidates: [ESPHomeProtocol.SensorRole: [(entity: Entity, factor: Double)]] = [:]
        for entity in entities where entity.component == "sensor" {
            if let (role, factor) = role(of: entity) { candidates[role, default: []].append((entity, factor)) }
        }
        for (role, list) in candidates {
            let best = list.min { a, b in
                rank(a.entity, role) < rank(b.entity, role)
                    || (rank(a.entity, role) == rank(b.entity, role) && a.entity.objectID < b.entity.objectID)
            }
            if let best {
                map.sources[role] = ESPHomeProtocol.Source(objectID: best.entity.objectID, factor: best.factor)
            }
        }
        let switches = entities.filter { $0.component == "switch" }.map(\.objectID)
        if Set(switches).count == 1 { map.switchID = switches[0] }
        return map
    }

    private static func rank(_ entity: Entity, _ role: ESPHomeProtocol.SensorRole) -> Int {
        let usual = ESPHomeProtocol.defaultRole(of: entity.objectID) == role ? 0 : 1
        guard role == .energy else { return usual }
        let increasing = entity.stateClass == "total_increasing" ? 0 : entity.stateClass == "total" ? 1 : 2
        let total = ESPHomeProtocol.isTotal(entity.objectID) ? 0 : 1
        return increasing * 4 + total * 2 + usual
    }

    /// A pending outlet for a node whose entities make one: a power (or a switch and an energy counter). The
    /// code is the node name; a node with several switches is one outlet per switch.
    public static func suggestion(_ entities: [Entity]) -> DeviceSuggestion? {
        guard let first = entities.first, let code = DeviceSuggestion.code(from: first.node) else { return nil }
        let map = map(entities)
        let switches = Array(Set(entities.filter { $0.component == "switch" }.map(\.objectID))).sorted()
        guard map.sources[.power] != nil || (!switches.isEmpty && map.sources[.energy] != nil) else { return nil }
        return DeviceSuggestion(
            code: code, outletProtocol: .esphome, deviceTopic: first.prefix, channels: [0],
            endpoints: switches.count > 1 ? switches : [], sensorMap: map.text)
    }
}
