import Foundation
import Protocols
import Telemetry
import WritePath

extension ForeignReadings {
    /// An ESPHome sensor value `<prefix>/sensor/<object id>/state`: checked at once, then paired into its outlet's
    /// update cycle (``ESPHomeCycles``); the sample comes when the cycle completes.
    ///
    /// The sensor's role comes from the outlet's map (the node's discovery over the `--sensor` flags, role by
    /// role), else from the usual object ids. A sensor named by one outlet's own map is that outlet's; any other
    /// goes to the node's first outlet (one meter for the node's switches). A sensor that is no meter (Wi-Fi
    /// signal, uptime, a daily energy) is ``IgnoredKind/noMeter``, a node no outlet uses
    /// ``IgnoredKind/notAnOutlet``, a value `nan`/`None` ``IgnoredKind/noReading``.
    func classifyESPHome(
        _ message: RawMessage, prefix: String, objectID: String, limits: ValidationLimits,
        into result: inout ClassifiedMessage
    ) -> IgnoredKind? {
        guard let outlets = enabledOutlets(.esphome, topic: prefix, message, into: &result) else { return nil }
        guard let meterOwner = outlets.first else { return .notAnOutlet }
        let named = outlets.first { outlet in
            outlet.device.sensorMap.sources.values.contains { $0.objectID == objectID }
        }
        let outlet = named ?? meterOwner
        guard let (role, factor) = outlet.device.sensorMap.role(of: objectID) else { return .noMeter }
        let raw: Double?
        switch ESPHomeProtocol.value(message.payload) {
        case .failure(let rejection):
            Self.reject(rejection, message, code: outlet.code, into: &result)
            return nil
        case .success(let value): raw = value
        }
        guard let raw else { return .noReading }
        let value = raw * factor
        if role == .energy, outlet.device.sensorMap.sources[.energy] == nil {
            // Two counters by the usual ids (`energy` since boot, `total_energy` kept): the total, once seen.
            let isTotal = ESPHomeProtocol.isTotal(objectID)
            let superseded = state.withLock { state -> Bool in
                if isTotal { state.esphomeTotals.insert(outlet.code) }
                return !isTotal && state.esphomeTotals.contains(outlet.code)
            }
            if superseded { return .noMeter }
        }
        if let rejection = Self.check(value, role, limits) {
            Self.reject(rejection, message, code: outlet.code, into: &result)
            return nil
        }
        let key = Gen1Outlet(deviceID: outlet.device.id, code: outlet.code)
        let completed = state.withLock { $0.esphomeCycles.add(value, role: role, of: key, at: message.receivedAt) }
        Self.add(completed, to: &result, limits: limits)
        return nil
    }

    /// A value out of its role's bounds (`validation.*`), checked before it joins a cycle so that a completed
    /// cycle is never refused for one of its values.
    static func check(_ value: Double, _ role: ESPHomeProtocol.SensorRole, _ limits: ValidationLimits) -> Rejection? {
        let range: ClosedRange<Double>
        switch role {
        case .power: range = limits.powerWatts
        case .voltage: range = limits.voltageVolts
        case .current: range = limits.currentAmperes
        case .powerFactor: range = limits.powerFactor
        case .energy: range = 0...Double.greatestFiniteMagnitude
        }
        guard value.isFinite, range.contains(value) else {
            return Rejection(reason: .outOfRange, detail: "\(role.rawValue) \(value) outside \(range)")
        }
        return nil
    }

    /// Completed ESPHome cycles as samples, or as what they are when they make none.
    static func add(
        _ completed: [ESPHomeCycles<Gen1Outlet>.Completed], to result: inout ClassifiedMessage, limits: ValidationLimits
    ) {
        for cycle in completed {
            if let ignored = cycle.ignored {
                result.ignored.append(ignored)
                continue
            }
            let decoded = ESPHomeProtocol.reading(cycle.values, receivedAt: cycle.receivedAt, limits: limits)
            result.samples += decoded.readings.map { DeviceSample(deviceID: cycle.outlet.deviceID, reading: $0) }
            for rejection in decoded.rejections {
                // Voltage × current beyond the power bound: every value was in range alone.
                result.rejections.append(
                    RejectedReading(
                        receivedAt: cycle.receivedAt, topic: "esphome update cycle", deviceCode: cycle.outlet.code,
                        reason: rejection.reason, detail: rejection.detail, index: nil))
            }
        }
    }
}
