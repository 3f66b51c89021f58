import Foundation
import Telemetry

/// What the writer needs to know of a registered outlet.
public struct RegisteredDevice: Sendable, Equatable {
    /// `devices.id`, the key of its samples.
    public var id: Int32
    public var enabled: Bool
    public var protocolName: String

    public init(id: Int32, enabled: Bool, protocolName: String) {
        self.id = id
        self.enabled = enabled
        self.protocolName = protocolName
    }
}

/// The in-memory copy of the `devices` table that every message is checked against.
///
/// Filled and kept fresh by ``RegistryListener`` (LISTEN/NOTIFY plus a periodic full reload);
/// read by the writer thread. One lock guards the dictionary, hence `@unchecked Sendable`.
public final class DeviceRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var devices: [String: RegisteredDevice] = [:]
    private var loaded = false

    public init() {}

    /// The outlet registered under `code`, if any.
    public func lookup(_ code: String) -> RegisteredDevice? {
        lock.lock()
        defer { lock.unlock() }
        return devices[code]
    }

    /// Replaces everything (a full reload).
    public func replaceAll(_ entries: [String: RegisteredDevice]) {
        lock.lock()
        devices = entries
        loaded = true
        lock.unlock()
    }

    /// Sets or (with nil) removes one outlet.
    public func update(_ code: String, _ entry: RegisteredDevice?) {
        lock.lock()
        devices[code] = entry
        lock.unlock()
    }

    /// Whether a full load has happened (the writer waits for it before judging codes).
    public var isLoaded: Bool {
        lock.lock()
        defer { lock.unlock() }
        return loaded
    }

    /// Registered outlets.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return devices.count
    }
}
