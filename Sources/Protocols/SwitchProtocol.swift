import Telemetry

/// The seam between outletd's command lifecycle and one firmware's way of switching.
///
/// The relay knows commands, states and availability; a `SwitchProtocol` knows topics and payloads. One
/// translation per value of `devices.protocol`: native, Tasmota, Shelly Gen1 and Gen2 (docs/PROTOCOLS.md). The
/// relay reads Tasmota and Shelly state reports per channel itself (one message may concern several outlets);
/// ``stateReport(_:)`` and ``availability(_:)`` here read a single-relay payload.
public protocol SwitchProtocol: Sendable {
    /// The value of `devices.protocol` this translation serves.
    var name: String { get }

    /// The message that tells outlet `target` to switch: topic and payload, published QoS 1.
    func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    )

    /// Reads a state report.
    func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection>

    /// Reads an availability report (`true` = online).
    func availability(_ payload: [UInt8]) -> Result<Bool, Rejection>
}

/// outletd's own protocol (see `NativeProtocol+Commands.swift`).
public struct NativeSwitchProtocol: SwitchProtocol {
    public init() {}

    public var name: String { "native" }

    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        (
            NativeProtocol.topic(prefix: target.nativePrefix, code: target.code, kind: .command),
            NativeProtocol.encodeCommand(id: commandID, state: state)
        )
    }

    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        NativeProtocol.parseStateReport(payload)
    }

    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        NativeProtocol.parseAvailability(payload)
    }
}

/// Everything a translation needs to address one outlet.
public struct SwitchTarget: Sendable, Equatable {
    /// The registry code.
    public var code: DeviceCode
    /// The native protocol's topic prefix (`outlets`).
    public var nativePrefix: String
    /// Tasmota topic / Shelly id / Shelly Gen2 prefix (empty for native).
    public var deviceTopic: String = ""
    /// Relay number (Tasmota 1-based, Shelly 0-based).
    public var channel: Int = 0
    /// Tasmota FullTopic.
    public var fullTopic: String = TasmotaProtocol.defaultFullTopic
    /// Tasmota prefixes.
    public var tasmotaPrefixes = TasmotaProtocol.Prefixes()
    /// Shelly Gen1 topic prefix (`shellies`).
    public var shellyGen1Prefix = "shellies"
    /// outletd's own Gen2 reply prefix (`src`); replies arrive on `<replyPrefix>/rpc`.
    public var shellyGen2ReplyPrefix = ""
    /// Zigbee2MQTT's base topic (`zigbee2mqtt`).
    public var zigbee2mqttBaseTopic = Zigbee2MQTTProtocol.defaultBaseTopic
    /// Zigbee2MQTT endpoint (`l2`), ESPHome switch object id; empty for a device's only outlet.
    public var endpoint = ""

    /// A target for the native protocol; set the other fields for the foreign ones.
    public init(code: DeviceCode, nativePrefix: String) {
        self.code = code
        self.nativePrefix = nativePrefix
    }
}

/// Tasmota: `cmnd/<t>/POWER<n>` `ON`/`OFF`, confirmed by `stat/<t>/RESULT` or `POWER<n>`.
public struct TasmotaSwitchProtocol: SwitchProtocol {
    public init() {}
    public var name: String { OutletProtocol.tasmota.rawValue }
    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        TasmotaProtocol.commandMessage(
            fullTopic: target.fullTopic, prefixes: target.tasmotaPrefixes, deviceTopic: target.deviceTopic,
            channel: max(target.channel, 1), state: state)
    }
    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        TasmotaProtocol.stateReport(payload, suffix: "POWER", channel: 1)
            ?? .failure(Rejection(reason: .invalidStateReport, detail: "no POWER"))
    }
    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> { TasmotaProtocol.availability(payload) }
}

/// Shelly Gen1: `relay/<n>/command` `on`/`off`, confirmed by the next `relay/<n>`.
public struct ShellyGen1SwitchProtocol: SwitchProtocol {
    public init() {}
    public var name: String { OutletProtocol.shellyGen1.rawValue }
    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        ShellyGen1Protocol.commandMessage(
            prefix: target.shellyGen1Prefix, id: target.deviceTopic, channel: target.channel, state: state)
    }
    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        ShellyGen1Protocol.stateReport(payload)
    }
    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        ShellyGen1Protocol.availability(payload)
    }
}

/// Shelly Gen2/Gen3: JSON-RPC `Switch.Set` on `<prefix>/rpc`, confirmed by `NotifyStatus` `output`.
public struct ShellyGen2SwitchProtocol: SwitchProtocol {
    public init() {}
    public var name: String { OutletProtocol.shellyGen2.rawValue }
    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        ShellyGen2Protocol.commandMessage(
            prefix: target.deviceTopic, replyPrefix: target.shellyGen2ReplyPrefix, channel: target.channel,
            commandID: commandID, state: state)
    }
    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        guard case .object(let members)? = try? JSONParser.parse(payload), case .bool(let isOn)? = members["output"]
        else { return .failure(Rejection(reason: .invalidStateReport, detail: "no boolean output")) }
        return .success(StateReport(state: SwitchState(isOn: isOn)))
    }
    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        ShellyGen2Protocol.availability(payload)
    }
}

/// Zigbee2MQTT: `<base>/<name>/set` `{"state":"OFF"}` (`state_<endpoint>`), confirmed by the next state message.
public struct Zigbee2MQTTSwitchProtocol: SwitchProtocol {
    public init() {}
    public var name: String { OutletProtocol.zigbee2mqtt.rawValue }
    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        Zigbee2MQTTProtocol.commandMessage(
            baseTopic: target.zigbee2mqttBaseTopic, name: target.deviceTopic, endpoint: target.endpoint, state: state)
    }
    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        Zigbee2MQTTProtocol.stateReport(payload, endpoint: "")
            ?? .failure(Rejection(reason: .invalidStateReport, detail: "no state"))
    }
    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        Zigbee2MQTTProtocol.availability(payload)
    }
}

/// ESPHome: `<prefix>/switch/<object id>/command` `ON`/`OFF`, confirmed by the switch's next `state`. The relay
/// fills ``SwitchTarget/endpoint`` with the switch (registered, discovered, or the node's only one).
public struct ESPHomeSwitchProtocol: SwitchProtocol {
    public init() {}
    public var name: String { OutletProtocol.esphome.rawValue }
    public func commandMessage(target: SwitchTarget, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        ESPHomeProtocol.commandMessage(prefix: target.deviceTopic, switchID: target.endpoint, state: state)
    }
    public func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        ESPHomeProtocol.switchState(payload)
    }
    public func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> { ESPHomeProtocol.availability(payload) }
}

/// The translations outletd knows, by `devices.protocol`.
public struct SwitchProtocols: Sendable {
    private let byName: [String: any SwitchProtocol]

    public init(
        _ protocols: [any SwitchProtocol] = [
            NativeSwitchProtocol(), TasmotaSwitchProtocol(), ShellyGen1SwitchProtocol(), ShellyGen2SwitchProtocol(),
            Zigbee2MQTTSwitchProtocol(), ESPHomeSwitchProtocol(),
        ]
    ) {
        var byName: [String: any SwitchProtocol] = [:]
        for item in protocols { byName[item.name] = item }
        self.byName = byName
    }

    /// The translation for `name`, or nil when outletd cannot switch outlets of that protocol.
    public func named(_ name: String) -> (any SwitchProtocol)? { byName[name] }
}
