import Foundation
import Protocols
import Routing
import Storage
import Telemetry

/// What the relay knows of ESPHome nodes, from their retained messages: the entities each announced (by topic
/// prefix, then `<component>/<object id>`), the switches each reported, and the registered nodes whose
/// announcement is still coming in (prefix → when its last config came).
struct ESPHomeNodes: Sendable {
    var entities: [String: [String: ESPHomeDiscovery.Entity]] = [:]
    var switchesSeen: [String: Set<String>] = [:]
    var unsettled: [String: Date] = [:]
}

extension CommandRelay.Loop {
    /// State, availability, replies and discovery of Tasmota, Shelly, Zigbee2MQTT and ESPHome outlets
    /// (PROTOCOLS.md rules 7 and 8).
    mutating func handleForeign(_ message: RawMessage, _ route: ForeignTopic, _ store: CommandStore) throws {
        func report(_ code: String, _ result: Result<StateReport, Rejection>?) throws {
            switch result {
            case nil: return
            case .failure(let rejection)?:
                relay.metrics.commandMessageRejected(rejection.reason)
                relay.logger.notice(
                    "state report rejected",
                    metadata: ["topic": "\(message.topic)", "detail": "\(rejection.detail)"])
            case .success(let stateReport)?:
                if case .none? = try store.recordStateReport(code: code, report: stateReport) {
                } else {
                    needsResults = true
                }
            }
        }
        func availability(_ code: String, _ result: Result<Bool, Rejection>) throws {
            guard case .success(let online) = result else { return }
            try store.recordAvailability(code: code, online: online)
            if online { needsSend = true }
        }
        let registry = relay.registry
        func suggest(_ suggestion: DeviceSuggestion?) throws {
            guard let suggestion else { return }
            let added = try DeviceStore(connection: store.connection).suggest(
                suggestion, topic: message.topic, seenAt: message.receivedAt,
                pendingDevicesMax: settings.pendingDevicesMax)
            relay.logger.debug(
                "device discovered", metadata: ["code": "\(suggestion.code)", "pending": "\(added)"])
        }
        switch route {
        case .zigbee2mqtt(let kind):
            try relay.handleZigbee2MQTT(
                message, kind, store, report: report, availability: availability, suggest: suggest)
        case .esphome(let prefix, let kind):
            try relay.handleESPHome(message, prefix: prefix, kind, report: report, availability: availability)
        case .esphomeDiscovery(let component, let node, let objectID):
            try relay.handleESPHomeDiscovery(
                message, component: component, node: node, objectID: objectID, store, suggest: suggest)
        case .tasmotaDiscovery:
            try suggest(TasmotaProtocol.discovery(message.payload))
        case .shellyGen1(_, .announce):
            try suggest(ShellyGen1Protocol.announcement(message.payload))
        case .shellyGen2Reply(let devicePrefix):
            // Only the outlet a command was sent to can answer it: its reply topic is its own (ACL).
            let codes = registry.lookup(.shellyGen2, topic: devicePrefix).map(\.code)
            switch ShellyGen2Protocol.reply(message.payload) {
            case .failure(let id, let reason)?:
                if try store.transition([id], .reject, reason: reason, ofOutlets: codes) > 0 {
                    needsResults = true
                }
            case .success(let id, let wasOn)?:
                relay.logger.debug(
                    "Switch.Set acknowledged",
                    metadata: ["command": "\(id)", "was_on": "\(wasOn.map(\.description) ?? "?")"])
            case nil:
                return
            }
        case .tasmota(let match):
            for outlet in registry.lookup(.tasmota, topic: match.deviceTopic) where outlet.device.enabled {
                if match.suffix == "LWT" {
                    try availability(outlet.code, TasmotaProtocol.availability(message.payload))
                } else {
                    try report(
                        outlet.code,
                        TasmotaProtocol.stateReport(
                            message.payload, suffix: match.suffix, channel: outlet.channel,
                            words: outlet.device.stateWords))
                }
            }
        case .shellyGen1(let id, let kind):
            for outlet in registry.lookup(.shellyGen1, topic: id) where outlet.device.enabled {
                switch kind {
                case .online: try availability(outlet.code, ShellyGen1Protocol.availability(message.payload))
                case .relayState(let channel) where channel == outlet.channel:
                    try report(outlet.code, ShellyGen1Protocol.stateReport(message.payload))
                default: break
                }
            }
        case .shellyGen2(let prefix, let kind):
            let outlets = registry.lookup(.shellyGen2, topic: prefix).filter { $0.device.enabled }
            if kind == .online {
                for outlet in outlets {
                    try availability(outlet.code, ShellyGen2Protocol.availability(message.payload))
                }
                return
            }
            guard !outlets.isEmpty,
                case .success(let updates) = ShellyGen2Protocol.updates(
                    message.payload, kind: kind, limits: ValidationLimits(maxPayloadBytes: settings.maxPayloadBytes)
                )
            else { return }
            for update in updates {
                guard case .bool(let isOn)? = update.fields["output"],
                    let outlet = outlets.first(where: {
                        ShellyGen2Protocol.components(channel: $0.channel).contains(update.component)
                    })
                else { continue }
                try report(outlet.code, .success(StateReport(state: SwitchState(isOn: isOn))))
            }
        }
    }
}

extension CommandRelay {
    /// Zigbee2MQTT: the relay state in a device's JSON state (`state`, `state_<endpoint>`), availability, and the
    /// retained device list (pending outlets).
    func handleZigbee2MQTT(
        _ message: RawMessage, _ kind: Zigbee2MQTTProtocol.TopicKind, _ store: CommandStore,
        report: (String, Result<StateReport, Rejection>?) throws -> Void,
        availability: (String, Result<Bool, Rejection>) throws -> Void,
        suggest: (DeviceSuggestion?) throws -> Void
    ) throws {
        switch kind {
        case .bridgeDevices:
            for suggestion in Zigbee2MQTTProtocol.suggestions(message.payload) { try suggest(suggestion) }
        case .availability(let name):
            for outlet in registry.lookup(.zigbee2mqtt, topic: name) where outlet.device.enabled {
                try availability(outlet.code, Zigbee2MQTTProtocol.availability(message.payload))
            }
        case .message(let path):
            let outlets = registry.lookup(.zigbee2mqtt, topic: path).filter { $0.device.enabled }
            guard !outlets.isEmpty, case .object(let members)? = try? JSONParser.parse(message.payload) else { return }
            for outlet in outlets {
                try report(
                    outlet.code,
                    Zigbee2MQTTProtocol.stateReport(members, endpoint: outlet.device.address?.endpoint ?? ""))
            }
        }
    }

    /// ESPHome: a switch's state (for the outlet whose switch it is), the node's status.
    func handleESPHome(
        _ message: RawMessage, prefix: String, _ kind: ESPHomeProtocol.TopicKind,
        report: (String, Result<StateReport, Rejection>?) throws -> Void,
        availability: (String, Result<Bool, Rejection>) throws -> Void
    ) throws {
        let outlets = registry.lookup(.esphome, topic: prefix).filter { $0.device.enabled }
        switch kind {
        case .status:
            for outlet in outlets { try availability(outlet.code, ESPHomeProtocol.availability(message.payload)) }
        case .switchState(let objectID):
            shared.esphome.withLock { $0.switchesSeen[prefix, default: []].insert(objectID) }
            for outlet in outlets where esphomeSwitch(of: outlet.device, prefix: prefix) == objectID {
                try report(outlet.code, ESPHomeProtocol.switchState(message.payload))
            }
        case .sensor:
            return
        }
    }

    /// An outlet's ESPHome switch: its endpoint (`--switch`), the switch its map names (discovery), the only
    /// switch the node announced, or the only one it reported; nil when none is known.
    func esphomeSwitch(of device: RegisteredDevice, prefix: String) -> String? {
        if let endpoint = device.address?.endpoint, !endpoint.isEmpty { return endpoint }
        if let switchID = device.sensorMap.switchID { return switchID }
        return shared.esphome.withLock { nodes -> String? in
            let announced = (nodes.entities[prefix] ?? [:]).values.filter { $0.component == "switch" }.map(\.objectID)
            if announced.count == 1 { return announced[0] }
            if let seen = nodes.switchesSeen[prefix], seen.count == 1 { return seen.first }
            return nil
        }
    }

    /// ESPHome's own discovery: what the node's sensors are goes to its registered outlets
    /// (`devices.discovered_sensor_map`, reloaded by every instance's registry), or, for a node no outlet uses
    /// yet, a pending outlet once it has a meter. Configs of other publishers (Zigbee2MQTT's, outletd's own) and
    /// removals (empty payloads) change nothing and are counted as ``IgnoredKind/otherDiscovery``.
    func handleESPHomeDiscovery(
        _ message: RawMessage, component: String, node: String, objectID: String, _ store: CommandStore,
        suggest: (DeviceSuggestion?) throws -> Void
    ) throws {
        guard
            let entity = ESPHomeDiscovery.entity(
                component: component, node: node, objectID: objectID, payload: message.payload)
        else {
            metrics.messageIgnored(IgnoredKind.otherDiscovery)
            return
        }
        let entities = shared.esphome.withLock { nodes -> [ESPHomeDiscovery.Entity] in
            nodes.entities[entity.prefix, default: [:]]["\(component)/\(objectID)"] = entity
            return (nodes.entities[entity.prefix] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        }
        if registry.lookup(.esphome, topic: entity.prefix).isEmpty {
            try suggest(ESPHomeDiscovery.suggestion(entities))
            return
        }
        // A node's configs come one per entity (at every reconnect, retained): its map is written once they have
        // settled (``writeSettledESPHomeMaps(_:now:)``), never from half of them.
        shared.esphome.withLock { $0.unsettled[entity.prefix] = message.receivedAt }
    }

    /// How long a registered node's discovery must be quiet before its map is written, seconds.
    static let discoverySettleSeconds = 1.0

    /// Writes the sensor maps of registered nodes whose configs stopped coming ``discoverySettleSeconds`` ago into
    /// `devices.discovered_sensor_map` (when they differ; every instance's registry reloads them).
    func writeSettledESPHomeMaps(_ store: CommandStore, now: Date) throws {
        let settled = shared.esphome.withLock { nodes -> [(prefix: String, map: String)] in
            let ready = nodes.unsettled.filter { now.timeIntervalSince($0.value) >= Self.discoverySettleSeconds }
            for prefix in ready.keys { nodes.unsettled[prefix] = nil }
            return ready.keys.sorted().map { prefix in
                let entities = (nodes.entities[prefix] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
                return (prefix, ESPHomeDiscovery.map(entities).text)
            }
        }
        for (prefix, map) in settled
        where try DeviceStore(connection: store.connection).setDiscoveredSensorMap(prefix: prefix, map) > 0 {
            logger.info("esphome sensors discovered", metadata: ["prefix": "\(prefix)", "sensors": "\(map)"])
        }
    }
}
