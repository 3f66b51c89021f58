/// The seam between outletd's command lifecycle and one firmware's way of switching.
///
/// The relay knows commands, states and availability; a `SwitchProtocol` knows topics and payloads. Only the
/// native protocol exists now; Tasmota (`cmnd/<t>/POWER` `ON`, `stat/<t>/POWER`, `tele/<t>/LWT`) and Shelly
/// translations plug in here (see PROTOCOLS.md), chosen by `devices.protocol`.
public protocol SwitchProtocol: Sendable {
    /// The value of `devices.protocol` this translation serves.
    var name: String { get }

    /// The message that tells outlet `code` to switch: topic and payload, published QoS 1.
    func commandMessage(prefix: String, code: DeviceCode, commandID: Int64, state: SwitchState) -> (
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

    public func commandMessage(prefix: String, code: DeviceCode, commandID: Int64, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        (
            NativeProtocol.topic(prefix: prefix, code: code, kind: .command),
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

/// The translations outletd knows, by `devices.protocol`.
public struct SwitchProtocols: Sendable {
    private let byName: [String: any SwitchProtocol]

    public init(_ protocols: [any SwitchProtocol] = [NativeSwitchProtocol()]) {
        var byName: [String: any SwitchProtocol] = [:]
        for item in protocols { byName[item.name] = item }
        self.byName = byName
    }

    /// The translation for `name`, or nil when outletd cannot switch outlets of that protocol.
    public func named(_ name: String) -> (any SwitchProtocol)? { byName[name] }
}
