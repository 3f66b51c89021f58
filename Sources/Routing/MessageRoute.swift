import Foundation
import Protocols
import Telemetry

/// Where one MQTT message belongs, decided once from its topic by ``TopicRouter`` (in the MQTT callback) and
/// carried with the message: in the command relay's inbox, and in the spool record (``tag``), so that neither
/// the writer nor the relay parses the topic again.
public enum MessageRoute: Sendable, Equatable {
    /// `<prefix>/<code>/<kind>` of the native protocol (the code not yet validated).
    case native(NativeProtocol.TopicKind, code: String)
    /// A Tasmota, Shelly, Zigbee2MQTT or ESPHome topic.
    case foreign(ForeignTopic)
    /// Came in through a subscription but is not read (Tasmota `stat/<t>/STATUS`, a Gen2 `status/sys`).
    case unread
    /// None of the above: stored for its rejection (`invalid_topic`).
    case unknown

    /// Whether the message goes to the spool (readings, and what is stored for its rejection).
    public var goesToSpool: Bool {
        switch self {
        case .native(let kind, _): kind == .telemetry || kind == .command
        case .foreign(let topic): topic.carriesReadings
        case .unknown: true
        case .unread: false
        }
    }

    /// Whether the message goes to the command relay (requests, state, availability, replies, discovery).
    public var goesToRelay: Bool {
        switch self {
        case .native(let kind, _): kind == .set || kind == .state || kind == .availability
        case .foreign(let topic): topic.carriesState
        case .unread, .unknown: false
        }
    }
}

/// Decides a message's ``MessageRoute`` from its topic: the native protocol under `mqtt.topic_prefix` first,
/// then the Tasmota and Shelly layouts of ``ProtocolRouter``.
public struct TopicRouter: Sendable {
    public let nativePrefix: String
    public let protocols: ProtocolRouter

    public init(nativePrefix: String, protocols: ProtocolRouter) {
        self.nativePrefix = nativePrefix
        self.protocols = protocols
    }

    public func route(_ topic: String) -> MessageRoute {
        if let match = NativeProtocol.parseTopic(topic, prefix: nativePrefix) {
            return .native(match.kind, code: match.deviceCode)
        }
        if let foreign = protocols.route(topic) { return .foreign(foreign) }
        return protocols.isUnreadForeignTopic(topic) ? .unread : .unknown
    }
}

extension MessageRoute {
    /// The route as the few bytes a spool record carries beside its message: a kind byte, then the route's
    /// values (strings as a 16-bit length and UTF-8, numbers as 32-bit), little endian.
    public var tag: [UInt8] {
        var bytes: [UInt8] = []
        func byte(_ value: UInt8) { bytes.append(value) }
        func number(_ value: Int) { withUnsafeBytes(of: Int32(truncatingIfNeeded: value).littleEndian) { bytes += $0 } }
        func text(_ value: String) {
            let length = min(value.utf8.count, Int(UInt16.max))
            withUnsafeBytes(of: UInt16(length).littleEndian) { bytes += $0 }
            bytes.appendUTF8(of: value, maxCount: length)
        }
        switch self {
        case .native(let kind, let code):
            byte(1)
            byte(UInt8(NativeProtocol.TopicKind.allCases.firstIndex(of: kind) ?? 0))
            text(code)
        case .foreign(.tasmota(let match)):
            byte(2)
            text(match.prefix)
            text(match.deviceTopic)
            text(match.suffix)
        case .foreign(.shellyGen1(let id, let kind)):
            byte(3)
            text(id)
            switch kind {
            case .relayState(let channel): byte(0); number(channel)
            case .power(let channel): byte(1); number(channel)
            case .energy(let channel): byte(2); number(channel)
            case .online: byte(3)
            case .announce: byte(4)
            }
        case .foreign(.shellyGen2(let prefix, let kind)):
            byte(4)
            text(prefix)
            switch kind {
            case .status(let component): byte(0); text(component)
            case .events: byte(1)
            case .online: byte(2)
            case .rpc: byte(3)
            }
        case .foreign(.shellyGen2Reply(let devicePrefix)):
            byte(5)
            text(devicePrefix)
        case .foreign(.tasmotaDiscovery):
            byte(6)
        case .unread:
            byte(7)
        case .unknown:
            byte(8)
        case .foreign(.zigbee2mqtt(let kind)):
            byte(9)
            switch kind {
            case .message(let path): byte(0); text(path)
            case .availability(let name): byte(1); text(name)
            case .bridgeDevices: byte(2)
            }
        case .foreign(.esphome(let prefix, let kind)):
            byte(10)
            text(prefix)
            switch kind {
            case .sensor(let objectID): byte(0); text(objectID)
            case .switchState(let objectID): byte(1); text(objectID)
            case .status: byte(2)
            }
        case .foreign(.esphomeDiscovery(let component, let node, let objectID)):
            byte(11)
            text(component)
            text(node)
            text(objectID)
        }
        return bytes
    }

    /// Reads a ``tag`` back; nil for bytes of another shape (a record written before routes were carried has
    /// none: route it from its topic).
    public init?(tag: [UInt8]) {
        var position = 0
        func byte() -> UInt8? {
            guard position < tag.count else { return nil }
            defer { position += 1 }
            return tag[position]
        }
        func number() -> Int? {
            guard position + 4 <= tag.count else { return nil }
            defer { position += 4 }
            return Int((0..<4).reduce(UInt32(0)) { $0 | UInt32(tag[position + $1]) << (8 * UInt32($1)) }.asSigned)
        }
        func text() -> String? {
            guard position + 2 <= tag.count else { return nil }
            let length = Int(UInt16(tag[position]) | UInt16(tag[position + 1]) << 8)
            guard position + 2 + length <= tag.count else { return nil }
            defer { position += 2 + length }
            return String(decoding: tag[(position + 2)..<(position + 2 + length)], as: UTF8.self)
        }
        let route: MessageRoute?
        switch byte() {
        case 1?:
            guard let index = byte(), Int(index) < NativeProtocol.TopicKind.allCases.count, let code = text() else {
                return nil
            }
            route = .native(NativeProtocol.TopicKind.allCases[Int(index)], code: code)
        case 2?:
            guard let prefix = text(), let deviceTopic = text(), let suffix = text() else { return nil }
            route = .foreign(.tasmota(.init(prefix: prefix, deviceTopic: deviceTopic, suffix: suffix)))
        case 3?:
            guard let id = text(), let kind = byte() else { return nil }
            switch kind {
            case 0: route = number().map { .foreign(.shellyGen1(id: id, kind: .relayState(channel: $0))) }
            case 1: route = number().map { .foreign(.shellyGen1(id: id, kind: .power(channel: $0))) }
            case 2: route = number().map { .foreign(.shellyGen1(id: id, kind: .energy(channel: $0))) }
            case 3: route = .foreign(.shellyGen1(id: id, kind: .online))
            case 4: route = .foreign(.shellyGen1(id: id, kind: .announce))
            default: route = nil
            }
        case 4?:
            guard let prefix = text(), let kind = byte() else { return nil }
            switch kind {
            case 0: route = text().map { .foreign(.shellyGen2(prefix: prefix, kind: .status(component: $0))) }
            case 1: route = .foreign(.shellyGen2(prefix: prefix, kind: .events))
            case 2: route = .foreign(.shellyGen2(prefix: prefix, kind: .online))
            case 3: route = .foreign(.shellyGen2(prefix: prefix, kind: .rpc))
            default: route = nil
            }
        case 5?: route = text().map { .foreign(.shellyGen2Reply(devicePrefix: $0)) }
        case 6?: route = .foreign(.tasmotaDiscovery)
        case 7?: route = .unread
        case 8?: route = .unknown
        case 9?:
            switch byte() {
            case 0?: route = text().map { .foreign(.zigbee2mqtt(.message(path: $0))) }
            case 1?: route = text().map { .foreign(.zigbee2mqtt(.availability(name: $0))) }
            case 2?: route = .foreign(.zigbee2mqtt(.bridgeDevices))
            default: route = nil
            }
        case 10?:
            guard let prefix = text() else { return nil }
            switch byte() {
            case 0?: route = text().map { .foreign(.esphome(prefix: prefix, kind: .sensor(objectID: $0))) }
            case 1?: route = text().map { .foreign(.esphome(prefix: prefix, kind: .switchState(objectID: $0))) }
            case 2?: route = .foreign(.esphome(prefix: prefix, kind: .status))
            default: route = nil
            }
        case 11?:
            guard let component = text(), let node = text(), let objectID = text() else { return nil }
            route = .foreign(.esphomeDiscovery(component: component, node: node, objectID: objectID))
        default: route = nil
        }
        guard let route, position == tag.count else { return nil }
        self = route
    }
}

extension UInt32 {
    fileprivate var asSigned: Int32 { Int32(bitPattern: self) }
}
