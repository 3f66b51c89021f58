import Foundation
import OrderedCollections
import Protocols
import Runtime
import Telemetry

/// The registry's table of outlets by code, as ``DeviceStore/registryEntries()`` loads it.
///
/// An `OrderedDictionary` rather than a `Dictionary`: its codes and entries sit in two dense arrays
/// (16 bytes each per outlet) beside a table of bit-packed positions, where a `Dictionary` keeps both in
/// buckets of which up to five in eight stand empty after growth. Loaded, 100,000 outlets take 5.0 MB
/// instead of 9.3 MB, a million 38 MB instead of 67 MB (docs/PERFORMANCE.md, "A million outlets"). Order
/// means nothing here; removal swaps the last entry into the hole, so it stays O(1).
public typealias RegistryEntries = OrderedDictionary<String, RegisteredDevice>

/// What the writer needs to know of a registered outlet.
///
/// The registry holds one per registered outlet (100,000 and more), so the common case — a native
/// outlet with Tasmota's default FullTopic and words — is just an id and a flag (16 bytes, no
/// allocation); anything else lives in one shared, immutable box.
public struct RegisteredDevice: Sendable, Equatable {
    /// `devices.id`, the key of its samples.
    public var id: Int32
    public var enabled: Bool
    /// nil for a native outlet with the defaults.
    private let details: Details?

    private final class Details: Sendable {
        let protocolName: String
        let address: ProtocolAddress?
        let fullTopic: String
        let stateWords: TasmotaProtocol.StateWords
        let sensorMap: ESPHomeProtocol.SensorMap

        init(
            protocolName: String, address: ProtocolAddress?, fullTopic: String, stateWords: TasmotaProtocol.StateWords,
            sensorMap: ESPHomeProtocol.SensorMap
        ) {
            self.protocolName = protocolName
            self.address = address
            self.fullTopic = fullTopic
            self.stateWords = stateWords
            self.sensorMap = sensorMap
        }
    }

    public var protocolName: String { details?.protocolName ?? OutletProtocol.native.rawValue }
    /// Where a Tasmota or Shelly outlet lives in its protocol's topics; nil for native outlets.
    public var address: ProtocolAddress? { details?.address }
    /// Tasmota FullTopic (default `%prefix%/%topic%/`).
    public var fullTopic: String { details?.fullTopic ?? TasmotaProtocol.defaultFullTopic }
    /// Tasmota's configured ON/OFF words.
    public var stateWords: TasmotaProtocol.StateWords { details?.stateWords ?? TasmotaProtocol.StateWords() }
    /// ESPHome: which sensor is what (the discovered map over the `--sensor` flags, role by role).
    public var sensorMap: ESPHomeProtocol.SensorMap { details?.sensorMap ?? ESPHomeProtocol.SensorMap() }

    public init(
        id: Int32, enabled: Bool, protocolName: String, address: ProtocolAddress? = nil,
        fullTopic: String = TasmotaProtocol.defaultFullTopic,
        stateWords: TasmotaProtocol.StateWords = TasmotaProtocol.StateWords(),
        sensorMap: ESPHomeProtocol.SensorMap = ESPHomeProtocol.SensorMap()
    ) {
        self.id = id
        self.enabled = enabled
        if protocolName == OutletProtocol.native.rawValue && address == nil
            && fullTopic == TasmotaProtocol.defaultFullTopic && stateWords == TasmotaProtocol.StateWords()
            && sensorMap == ESPHomeProtocol.SensorMap()
        {
            details = nil
        } else {
            details = Details(
                protocolName: protocolName, address: address, fullTopic: fullTopic, stateWords: stateWords,
                sensorMap: sensorMap)
        }
    }

    public static func == (a: RegisteredDevice, b: RegisteredDevice) -> Bool {
        a.id == b.id && a.enabled == b.enabled && a.protocolName == b.protocolName && a.address == b.address
            && a.fullTopic == b.fullTopic && a.stateWords == b.stateWords && a.sensorMap == b.sensorMap
    }
}

/// The key of the (protocol, topic) → outlets index.
public struct ProtocolTopicKey: Sendable, Hashable {
    public var outletProtocol: OutletProtocol
    public var deviceTopic: String

    public init(_ outletProtocol: OutletProtocol, _ deviceTopic: String) {
        self.outletProtocol = outletProtocol
        self.deviceTopic = deviceTopic
    }
}

/// One outlet's place at a (protocol, topic): its channel and its named endpoint.
struct AddressSlot: Sendable, Hashable, Comparable {
    var channel: Int
    var endpoint: String

    init(_ address: ProtocolAddress) {
        channel = address.channel
        endpoint = address.endpoint
    }

    static func < (a: AddressSlot, b: AddressSlot) -> Bool {
        (a.channel, a.endpoint) < (b.channel, b.endpoint)
    }
}

/// The in-memory copy of the `devices` table that every message is checked against.
///
/// Filled and kept fresh by ``RegistryListener`` (LISTEN/NOTIFY plus a periodic full reload);
/// read by the writer thread. One ``Guarded`` lock (its condition lets the first load be awaited) guards it.
public final class DeviceRegistry: Sendable {
    private struct State: Sendable {
        var devices: RegistryEntries = [:]
        /// (protocol, device topic) → (channel, endpoint) → code, for the foreign protocols' outlets; kept with
        /// `devices`.
        var byAddress: [ProtocolTopicKey: [AddressSlot: String]] = [:]
        var loaded = false
    }
    private let state = Guarded(State())

    public init() {}

    /// The outlet registered under `code`, if any.
    public func lookup(_ code: String) -> RegisteredDevice? {
        state.withLock { $0.devices[code] }
    }

    /// The outlets registered at a foreign protocol topic: (channel, code, device), by channel and endpoint (the
    /// endpoint is `device.address?.endpoint`).
    public func lookup(_ outletProtocol: OutletProtocol, topic deviceTopic: String) -> [(
        channel: Int, code: String, device: RegisteredDevice
    )] {
        state.withLock { state in
            guard let channels = state.byAddress[ProtocolTopicKey(outletProtocol, deviceTopic)] else { return [] }
            return channels.sorted { $0.key < $1.key }.compactMap { slot, code in
                state.devices[code].map { (slot.channel, code, $0) }
            }
        }
    }

    /// Every distinct Tasmota FullTopic registered (to derive subscriptions).
    public var tasmotaFullTopics: Set<String> {
        state.withLock { Set($0.devices.values.filter { $0.address?.outletProtocol == .tasmota }.map(\.fullTopic)) }
    }

    /// Replaces everything (a full reload).
    public func replaceAll(_ entries: RegistryEntries) {
        var index: [ProtocolTopicKey: [AddressSlot: String]] = [:]
        for (code, entry) in entries {
            guard let address = entry.address else { continue }
            index[ProtocolTopicKey(address.outletProtocol, address.deviceTopic), default: [:]][AddressSlot(address)] =
                code
        }
        state.update { $0 = State(devices: entries, byAddress: index, loaded: true) }
    }

    /// Waits until the first full load happened; false when `deadline` passed first.
    public func waitUntilLoaded(until deadline: Date) -> Bool {
        state.wait(until: deadline, for: \.loaded) { _, ready in ready }
    }

    /// Sets or (with nil) removes one outlet.
    public func update(_ code: String, _ entry: RegisteredDevice?) {
        state.withLock { state in
            if let old = state.devices[code]?.address {
                let key = ProtocolTopicKey(old.outletProtocol, old.deviceTopic)
                if state.byAddress[key]?[AddressSlot(old)] == code { state.byAddress[key]?[AddressSlot(old)] = nil }
                if state.byAddress[key]?.isEmpty == true { state.byAddress[key] = nil }
            }
            if let entry {
                state.devices[code] = entry
            } else if let position = state.devices.index(forKey: code) {
                // OrderedDictionary closes a hole by moving every later entry; the last one fills it instead.
                state.devices.swapAt(position, state.devices.count - 1)
                state.devices.removeLast()
            }
            if let address = entry?.address {
                state.byAddress[ProtocolTopicKey(address.outletProtocol, address.deviceTopic), default: [:]][
                    AddressSlot(address)] = code
            }
        }
    }

    /// Whether a full load has happened (the writer waits for it before judging codes).
    public var isLoaded: Bool {
        state.withLock { $0.loaded }
    }

    /// Registered outlets.
    public var count: Int {
        state.withLock { $0.devices.count }
    }
}
