import Foundation
import Telemetry

/// Zigbee2MQTT: Zigbee plugs behind the bridge, one JSON state per device under `<base>/<friendly name>`
/// (docs/ZIGBEE-ESPHOME.md, "Zigbee2MQTT").
///
/// A friendly name may hold `/`, so a topic alone cannot say whether `<base>/a/b` is the state of device `a/b` or
/// the attribute topic `b` of device `a` (`output: attribute_and_json`): the registry decides (``TopicKind``).
public enum Zigbee2MQTTProtocol {
    /// The default base topic (`mqtt.base_topic` of Zigbee2MQTT).
    public static let defaultBaseTopic = "zigbee2mqtt"

    /// What a topic under the base topic carries.
    public enum TopicKind: Sendable, Equatable, Hashable {
        /// `<base>/<path>`: a device's JSON state when `path` is a registered friendly name; otherwise an attribute
        /// topic of one (`<name>/<attribute>`) or a device that is no outlet.
        case message(path: String)
        /// `<base>/<name>/availability`: `{"state":"online"}` or the legacy plain `online`.
        case availability(name: String)
        /// The retained `<base>/bridge/devices`: every device the bridge knows, with its exposes.
        case bridgeDevices
    }

    /// Splits a topic under `baseTopic`; `nil` for the bridge's other topics (`bridge/state`, `bridge/logging`,
    /// `bridge/response/…`), requests (`…/set`, `…/get`, outletd's own commands among them) and anything else.
    public static func parseTopic(_ topic: String, baseTopic: String = defaultBaseTopic) -> TopicKind? {
        guard topic.hasPrefix(baseTopic + "/"), !topic.contains("+"), !topic.contains("#") else { return nil }
        let path = topic.dropFirst(baseTopic.count + 1)
        let levels = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !levels.isEmpty, !levels.contains(where: \.isEmpty) else { return nil }
        if levels[0] == "bridge" { return levels.count == 2 && levels[1] == "devices" ? .bridgeDevices : nil }
        // Requests to the bridge's devices, never state: `<name>/set`, `<name>/set/<attribute>`, `<name>/get`,
        // `<name>/<endpoint>/set`.
        if levels.dropFirst().contains(where: { $0 == "set" || $0 == "get" }) { return nil }
        if levels.count >= 2, levels.last == "availability" {
            return .availability(name: levels.dropLast().joined(separator: "/"))
        }
        return .message(path: String(path))
    }

    /// The subscription that covers every topic of the bridge.
    public static func subscription(baseTopic: String) -> String { "\(baseTopic)/#" }

    // MARK: - Readings

    /// The meter values of one state message, in stored units; a key absent from the message is `nil` here and
    /// keeps its last value when overlaid (``Meter/overlaid(with:)``).
    public struct MeterUpdate: Sendable, Equatable {
        /// Each field present in the message: its value (`nil` for `null`: no value).
        public var power: Double??
        public var voltage: Double??
        public var current: Double??
        /// Wh (the message says kWh).
        public var energy: Double??

        public init(power: Double?? = nil, voltage: Double?? = nil, current: Double?? = nil, energy: Double?? = nil) {
            self.power = power
            self.voltage = voltage
            self.current = current
            self.energy = energy
        }

        /// Whether the message carried any meter value.
        public var isEmpty: Bool { power == nil && voltage == nil && current == nil && energy == nil }
    }

    /// The last known meter values of one outlet, in stored units (W, V, A, Wh).
    public struct Meter: Sendable, Equatable {
        public var powerWatts: Double?
        public var voltageVolts: Double?
        public var currentAmperes: Double?
        public var energyWattHours: Double?

        public init(
            powerWatts: Double? = nil, voltageVolts: Double? = nil, currentAmperes: Double? = nil,
            energyWattHours: Double? = nil
        ) {
            self.powerWatts = powerWatts
            self.voltageVolts = voltageVolts
            self.currentAmperes = currentAmperes
            self.energyWattHours = energyWattHours
        }

        /// These values with the fields the update carries replaced (`null` clears one).
        public func overlaid(with update: MeterUpdate) -> Meter {
            var next = self
            if let power = update.power { next.powerWatts = power }
            if let voltage = update.voltage { next.voltageVolts = voltage }
            if let current = update.current { next.currentAmperes = current }
            if let energy = update.energy { next.energyWattHours = energy }
            return next
        }
    }

    /// The keys of one outlet in a state message: `power`, or `power_<endpoint>` for an endpoint of a multi-socket
    /// device. `deviceMeter`: whether the device-level keys (no suffix) are this outlet's, i.e. it is the device's
    /// only outlet or, on a device with one meter for several sockets, the first registered endpoint.
    public static func meterUpdate(
        _ members: [String: JSONValue], endpoint: String, deviceMeter: Bool
    ) -> MeterUpdate {
        func value(_ key: String) -> Double?? {
            if !endpoint.isEmpty, let own = members["\(key)_\(endpoint)"] { return .some(PayloadText.number(own)) }
            guard deviceMeter, let shared = members[key] else { return nil }
            return .some(PayloadText.number(shared))
        }
        var update = MeterUpdate(power: value("power"), voltage: value("voltage"), current: value("current"))
        if let kilowattHours = value("energy") { update.energy = .some(kilowattHours.map { $0 * 1_000 }) }
        return update
    }

    /// The members of a state message, or why it is none (empty, too large, no JSON object).
    public static func members(_ payload: [UInt8], limits: ValidationLimits) -> Result<[String: JSONValue], Rejection> {
        PayloadText.object(payload, limits: limits)
    }

    /// A reading from an outlet's overlaid meter values, at the receive time (Zigbee2MQTT sends no device time).
    public static func reading(_ meter: Meter, receivedAt: Date, limits: ValidationLimits) -> DecodedMessage {
        ReadingBuilder.message(
            ReadingBuilder.build(
                powerWatts: meter.powerWatts, voltageVolts: meter.voltageVolts, currentAmperes: meter.currentAmperes,
                powerFactor: nil, energyWattHours: meter.energyWattHours, deviceTime: nil, receivedAt: receivedAt,
                limits: limits))
    }

    /// Decodes one state message for one outlet without any earlier values (tests, the benchmark): what
    /// ``ForeignReadings`` stores for the first message of an outlet.
    public static func decodeState(
        _ payload: [UInt8], endpoint: String = "", deviceMeter: Bool = true, receivedAt: Date, limits: ValidationLimits
    ) -> DecodedMessage {
        let members: [String: JSONValue]
        switch PayloadText.object(payload, limits: limits) {
        case .failure(let rejection): return DecodedMessage(rejections: [rejection])
        case .success(let object): members = object
        }
        let update = meterUpdate(members, endpoint: endpoint, deviceMeter: deviceMeter)
        if update.isEmpty { return .ignored(.noReading) }
        let meter = Meter().overlaid(with: update)
        if let ignored = withoutSample(meter) { return .ignored(ignored) }
        return reading(meter, receivedAt: receivedAt, limits: limits)
    }

    /// Why overlaid values make no sample yet: a counter alone (``IgnoredKind/energyOnly``), a voltage or current
    /// alone (``IgnoredKind/noPower``); nil when there is a power, or a voltage and a current.
    public static func withoutSample(_ meter: Meter) -> IgnoredKind? {
        if meter.powerWatts != nil || (meter.voltageVolts != nil && meter.currentAmperes != nil) { return nil }
        return meter.energyWattHours != nil ? .energyOnly : .noPower
    }

    // MARK: - State, availability, commands

    /// The outlet's relay state in a state message: `state`, or `state_<endpoint>`; `nil` when the message has none.
    public static func stateReport(_ members: [String: JSONValue], endpoint: String) -> Result<StateReport, Rejection>?
    {
        let key = endpoint.isEmpty ? "state" : "state_\(endpoint)"
        guard let value = members[key] else { return nil }
        guard case .string(let word) = value else {
            return .failure(Rejection(reason: .invalidStateReport, detail: "\(key) is not ON or OFF"))
        }
        switch word.uppercased() {
        case "ON": return .success(StateReport(state: .on))
        case "OFF": return .success(StateReport(state: .off))
        default:
            return .failure(
                Rejection(reason: .invalidStateReport, detail: "\(key) \"\(word.prefix(40))\" is not ON/OFF"))
        }
    }

    /// ``stateReport(_:endpoint:)`` from a payload; `nil` when it is no JSON object or has no state.
    public static func stateReport(_ payload: [UInt8], endpoint: String) -> Result<StateReport, Rejection>? {
        guard case .object(let members)? = try? JSONParser.parse(payload) else { return nil }
        return stateReport(members, endpoint: endpoint)
    }

    /// `<base>/<name>/availability`: `{"state":"online"}` / `{"state":"offline"}`, or the legacy plain words.
    public static func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        var word = PayloadText.trimmed(payload)
        if word.hasPrefix("{") {
            guard case .object(let members)? = try? JSONParser.parse(payload),
                case .string(let state)? = members["state"]
            else { return .failure(Rejection(reason: .invalidStateReport, detail: "availability without state")) }
            word = state
        }
        switch word.lowercased() {
        case "online": return .success(true)
        case "offline": return .success(false)
        default:
            return .failure(Rejection(reason: .invalidStateReport, detail: "availability \"\(word.prefix(40))\""))
        }
    }

    /// `<base>/<name>/set` with `{"state":"OFF"}` (`{"state_l2":"OFF"}` for endpoint `l2`); confirmed by the next
    /// state message.
    public static func commandMessage(baseTopic: String, name: String, endpoint: String, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        let key = endpoint.isEmpty ? "state" : "state_\(endpoint)"
        return ("\(baseTopic)/\(name)/set", Array(#"{\#(jsonString(key)):"\#(state == .on ? "ON" : "OFF")"}"#.utf8))
    }
}
