import Config
import Foundation
import MQTT
import Protocols
import Telemetry

/// A Tasmota, Shelly, Zigbee2MQTT or ESPHome topic, recognised by layout only (no registry lookup).
public enum ForeignTopic: Sendable, Equatable {
    case tasmota(TasmotaProtocol.TopicMatch)
    case shellyGen1(id: String, kind: ShellyGen1Protocol.TopicKind)
    case shellyGen2(prefix: String, kind: ShellyGen2Protocol.TopicKind)
    /// A JSON-RPC reply on outletd's reply topic of the Gen2 outlet at `devicePrefix`
    /// (`<reply prefix>/<device prefix>/rpc`): only a command sent to that outlet can be answered there.
    case shellyGen2Reply(devicePrefix: String)
    /// A retained `tasmota/discovery/<MAC>/config`.
    case tasmotaDiscovery
    /// A topic under Zigbee2MQTT's base topic: a device's state (or attribute topic), availability, the device list.
    case zigbee2mqtt(Zigbee2MQTTProtocol.TopicKind)
    /// An ESPHome sensor, switch or status topic under the node's topic prefix.
    case esphome(prefix: String, kind: ESPHomeProtocol.TopicKind)
    /// A retained `<discovery prefix>/sensor|switch/<node>/<object id>/config` (ESPHome's, or another publisher's,
    /// which the relay tells apart by its payload).
    case esphomeDiscovery(component: String, node: String, objectID: String)

    /// Where the MQTT callback sends it: readings to the spool, state/availability/replies to the command relay.
    public var carriesReadings: Bool {
        switch self {
        case .tasmota(let match): match.suffix == "SENSOR" || match.suffix == "STATUS8"
        case .shellyGen1(_, .power), .shellyGen1(_, .energy): true
        case .shellyGen2(_, .status), .shellyGen2(_, .events): true
        case .zigbee2mqtt(.message): true
        case .esphome(_, .sensor): true
        default: false
        }
    }

    /// Whether it carries state, availability or a reply.
    public var carriesState: Bool {
        switch self {
        case .tasmota(let match): match.suffix != "SENSOR" && match.suffix != "STATUS8"
        case .shellyGen1(_, .relayState), .shellyGen1(_, .online), .shellyGen1(_, .announce): true
        case .shellyGen2, .shellyGen2Reply, .tasmotaDiscovery: true
        case .zigbee2mqtt, .esphomeDiscovery: true
        case .esphome(_, .switchState), .esphome(_, .status): true
        default: false
        }
    }
}

/// Recognises the topics of the foreign protocols from configuration (rule 1: layouts are configuration).
public struct ProtocolRouter: Sendable {
    public var tasmotaFullTopics: [String]
    public var tasmotaPrefixes: TasmotaProtocol.Prefixes
    public var shellyGen1Prefix: String
    public var shellyGen2Subscriptions: [String]
    /// The start of outletd's reply topics, `outletd/<instance>/shelly` by default; one outlet's replies come on
    /// `<this>/<its device prefix>/rpc` (``shellyGen2ReplyPrefix(for:)``), a topic the broker's ACL lets only
    /// that outlet write.
    public var shellyGen2ReplyPrefix: String
    /// Zigbee2MQTT's base topic; empty when Zigbee2MQTT is not read.
    public var zigbee2mqttBaseTopic: String
    /// The ESPHome filters; empty when ESPHome is not read.
    public var esphomeSubscriptions: [String]
    /// Where ESPHome's discovery is read (`homeassistant.prefix`).
    public var discoveryPrefix: String

    /// A router from `configuration.protocols` plus the FullTopics of registered outlets.
    public init(_ configuration: OutletdConfiguration, registeredFullTopics: Set<String> = []) {
        let settings = configuration.protocols
        func list(_ text: String) -> [String] {
            text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        var fullTopics = list(settings.tasmotaFullTopics)
        for pattern in registeredFullTopics.sorted() where !fullTopics.contains(pattern) { fullTopics.append(pattern) }
        tasmotaFullTopics = fullTopics.filter(TasmotaProtocol.isValidFullTopic)
        let prefixes = list(settings.tasmotaPrefixes)
        tasmotaPrefixes =
            prefixes.count == 3
            ? TasmotaProtocol.Prefixes(command: prefixes[0], status: prefixes[1], telemetry: prefixes[2])
            : TasmotaProtocol.Prefixes()
        shellyGen1Prefix = settings.shellyGen1Prefix
        shellyGen2Subscriptions = list(settings.shellyGen2Subscriptions)
        shellyGen2ReplyPrefix =
            settings.shellyGen2ReplyPrefix.isEmpty
            ? "outletd/\(configuration.instanceID)/shelly" : settings.shellyGen2ReplyPrefix
        zigbee2mqttBaseTopic = settings.zigbee2mqttBaseTopic.filter { $0 != "#" && $0 != "+" }
        while zigbee2mqttBaseTopic.hasSuffix("/") { zigbee2mqttBaseTopic.removeLast() }
        esphomeSubscriptions = list(settings.esphomeSubscriptions)
        discoveryPrefix = configuration.homeAssistant.prefix
    }

    /// The filters outletd subscribes to for these protocols.
    public var subscriptions: [String] {
        var filters: [String] = []
        for pattern in tasmotaFullTopics {
            filters += TasmotaProtocol.subscriptions(fullTopic: pattern, prefixes: tasmotaPrefixes)
        }
        filters.append("tasmota/discovery/+/config")
        filters += [
            "\(shellyGen1Prefix)/announce", "\(shellyGen1Prefix)/+/announce",
            "\(shellyGen1Prefix)/+/relay/+", "\(shellyGen1Prefix)/+/relay/+/power",
            "\(shellyGen1Prefix)/+/relay/+/energy", "\(shellyGen1Prefix)/+/online",
        ]
        filters += shellyGen2Subscriptions
        filters.append("\(shellyGen2ReplyPrefix)/#")
        if !zigbee2mqttBaseTopic.isEmpty {
            filters.append(Zigbee2MQTTProtocol.subscription(baseTopic: zigbee2mqttBaseTopic))
        }
        if !esphomeSubscriptions.isEmpty {
            filters += esphomeSubscriptions
            filters += ["\(discoveryPrefix)/sensor/+/+/config", "\(discoveryPrefix)/switch/+/+/config"]
        }
        var seen = Set<String>()
        return filters.filter { seen.insert($0).inserted }
    }

    /// The `src` of a `Switch.Set` to the Gen2 outlet at `deviceTopic`: its reply comes on `<src>/rpc`.
    public func shellyGen2ReplyPrefix(for deviceTopic: String) -> String {
        "\(shellyGen2ReplyPrefix)/\(deviceTopic)"
    }

    /// Whether a subscription filter carries readings (Tasmota `SENSOR`, Shelly Gen1 `relay/+/power` and
    /// `relay/+/energy`, Shelly Gen2 `status/…` and `events/rpc`): these join the telemetry share group.
    /// State, availability, discovery and RPC replies stay plain (retained, or needed by every instance).
    public static func carriesReadings(_ filter: String) -> Bool {
        filter.hasSuffix("/SENSOR") || filter.hasSuffix("/relay/+/power") || filter.hasSuffix("/relay/+/energy")
            || filter.hasSuffix("/status/+") || filter.hasSuffix("/events/rpc") || filter.hasSuffix("/sensor/+/state")
    }

    /// ``carriesReadings(_:)``, and Zigbee2MQTT's `<base>/#` (device states are readings; with a share group the
    /// retained `<base>/bridge/devices` gets a plain filter of its own: ``plainCompanions``).
    public func carriesReadings(_ filter: String) -> Bool {
        Self.carriesReadings(filter)
            || (!zigbee2mqttBaseTopic.isEmpty
                && filter == Zigbee2MQTTProtocol.subscription(baseTopic: zigbee2mqttBaseTopic))
    }

    /// Plain filters needed beside shared ones: a shared subscription receives no retained message, and
    /// Zigbee2MQTT's device list is one (with plain filters only, `<base>/#` covers it already).
    public var plainCompanions: [String] {
        zigbee2mqttBaseTopic.isEmpty ? [] : ["\(zigbee2mqttBaseTopic)/bridge/devices"]
    }

    /// Whether `topic` came in through one of the foreign subscriptions without being a topic outletd reads
    /// (`stat/<t>/STATUS`, a Gen2 `status/sys`…): such messages are dropped, not rejected as invalid topics.
    public func isUnreadForeignTopic(_ topic: String) -> Bool {
        route(topic) == nil && subscriptions.contains { MQTTTopic.matches(filter: $0, topic: topic) }
    }

    /// What `topic` is, or nil when it belongs to none of the foreign protocols (then it is native or invalid).
    /// Tasmota's `cmnd/…` topics (its own empty `POWER` on connect included) are never commands to outletd: nil.
    public func route(_ topic: String) -> ForeignTopic? {
        if topic.hasPrefix(shellyGen2ReplyPrefix + "/") && topic.hasSuffix("/rpc") {
            let devicePrefix = topic.dropFirst(shellyGen2ReplyPrefix.count + 1).dropLast(4)
            guard !devicePrefix.isEmpty,
                !devicePrefix.split(separator: "/", omittingEmptySubsequences: false)
                    .contains(where: \.isEmpty)
            else { return nil }
            return .shellyGen2Reply(devicePrefix: String(devicePrefix))
        }
        if !zigbee2mqttBaseTopic.isEmpty,
            let kind = Zigbee2MQTTProtocol.parseTopic(topic, baseTopic: zigbee2mqttBaseTopic)
        {
            return .zigbee2mqtt(kind)
        }
        if !esphomeSubscriptions.isEmpty,
            let found = ESPHomeDiscovery.parseTopic(topic, discoveryPrefix: discoveryPrefix)
        {
            return .esphomeDiscovery(component: found.component, node: found.node, objectID: found.objectID)
        }
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        if levels.count == 4, levels[0] == "tasmota", levels[1] == "discovery", levels[3] == "config",
            !levels[2].isEmpty
        {
            return .tasmotaDiscovery
        }
        for pattern in tasmotaFullTopics {
            guard let match = TasmotaProtocol.match(topic, fullTopic: pattern) else { continue }
            if match.prefix == tasmotaPrefixes.telemetry,
                ["SENSOR", "STATE", "LWT"].contains(match.suffix)
            {
                return .tasmota(match)
            }
            if match.prefix == tasmotaPrefixes.status,
                match.suffix == "RESULT" || match.suffix == "STATUS8" || match.suffix.hasPrefix("POWER")
            {
                return .tasmota(match)
            }
        }
        if let gen1 = ShellyGen1Protocol.parseTopic(topic, prefix: shellyGen1Prefix) {
            return .shellyGen1(id: gen1.id, kind: gen1.kind)
        }
        if !esphomeSubscriptions.isEmpty, let node = ESPHomeProtocol.parseTopic(topic) {
            return .esphome(prefix: node.prefix, kind: node.kind)
        }
        if let gen2 = ShellyGen2Protocol.parseTopic(topic), gen2.kind != .rpc {
            return .shellyGen2(prefix: gen2.prefix, kind: gen2.kind)
        }
        return nil
    }
}
