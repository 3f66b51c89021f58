import Foundation
import Protocols
import Storage
import Telemetry
import WritePath

extension ForeignReadings {
    /// A rejection of `message` for outlet `code`, added to `result`.
    static func reject(
        _ rejection: Rejection, _ message: RawMessage, code: String?, into result: inout ClassifiedMessage
    ) {
        result.rejections.append(
            RejectedReading(
                receivedAt: message.receivedAt, topic: message.topic, deviceCode: code, reason: rejection.reason,
                detail: rejection.detail, index: nil))
    }

    /// A Zigbee2MQTT message `<base>/<path>`: the JSON state of the registered device `path`, one sample per outlet
    /// whose meter values changed (docs/ZIGBEE-ESPHOME.md, "Zigbee2MQTT": the cached-values rule).
    ///
    /// Zigbee2MQTT publishes the device's whole cached state (`cache_state: true`, its default) whenever any
    /// attribute changes: a new power arrives with the last voltage, current and counter, and a change of `state`
    /// or `linkquality` repeats every meter value. Each outlet's last values are overlaid with the message's (a
    /// device that reports attributes in separate messages, or with `cache_state: false`, fills them one by one);
    /// the message is a new sample only when an overlaid value differs from the last ones, and otherwise it is
    /// ``IgnoredKind/cachedValues``. A path no registered outlet has is an attribute topic of one
    /// (``IgnoredKind/attributeTopic``) or a device that is no outlet (``IgnoredKind/notAnOutlet``): never a
    /// rejection, since the base topic carries every device of the Zigbee network.
    func classifyZigbee2MQTT(
        _ message: RawMessage, path: String, limits: ValidationLimits, into result: inout ClassifiedMessage
    ) -> IgnoredKind? {
        guard let outlets = enabledOutlets(.zigbee2mqtt, topic: path, message, into: &result) else { return nil }
        guard let meterOwner = outlets.first else {
            if let slash = path.lastIndex(of: "/"),
                !registry.lookup(.zigbee2mqtt, topic: String(path[..<slash])).isEmpty
            {
                return .attributeTopic
            }
            return .notAnOutlet
        }
        let members: [String: JSONValue]
        switch Zigbee2MQTTProtocol.members(message.payload, limits: limits) {
        case .failure(let rejection):
            Self.reject(rejection, message, code: meterOwner.code, into: &result)
            return nil
        case .success(let object): members = object
        }
        var ignored: IgnoredKind?
        for outlet in outlets {
            let endpoint = outlet.device.address?.endpoint ?? ""
            let update = Zigbee2MQTTProtocol.meterUpdate(
                members, endpoint: endpoint, deviceMeter: outlet.code == meterOwner.code)
            if update.isEmpty {
                ignored = ignored ?? .noReading
                continue
            }
            let (meter, skipped): (Zigbee2MQTTProtocol.Meter?, IgnoredKind?) = state.withLock { state in
                let last = state.zigbeeMeters[outlet.code]
                let next = (last ?? Zigbee2MQTTProtocol.Meter()).overlaid(with: update)
                if let last, last == next { return (nil, .cachedValues) }
                if let why = Zigbee2MQTTProtocol.withoutSample(next) {
                    state.zigbeeMeters[outlet.code] = next
                    return (nil, why)
                }
                return (next, nil)
            }
            guard let meter else {
                ignored = ignored ?? skipped
                continue
            }
            let decoded = Zigbee2MQTTProtocol.reading(meter, receivedAt: message.receivedAt, limits: limits)
            if let rejection = decoded.rejections.first {
                // Out of range: rejected, and not kept as the outlet's last values.
                Self.reject(rejection, message, code: outlet.code, into: &result)
                continue
            }
            state.withLock { $0.zigbeeMeters[outlet.code] = meter }
            result.samples += decoded.readings.map { DeviceSample(deviceID: outlet.device.id, reading: $0) }
        }
        return ignored
    }

    /// The enabled outlets registered at `topic` of `outletProtocol` (empty: none is registered there). When every
    /// one there is disabled, the message is rejected as `disabled_device` for the first, and nil comes back.
    func enabledOutlets(
        _ outletProtocol: OutletProtocol, topic: String, _ message: RawMessage, into result: inout ClassifiedMessage
    ) -> [(channel: Int, code: String, device: RegisteredDevice)]? {
        let registered = registry.lookup(outletProtocol, topic: topic)
        let outlets = registered.filter { $0.device.enabled }
        if outlets.isEmpty, let disabled = registered.first {
            Self.reject(
                Rejection(reason: .disabledDevice, detail: "device \(disabled.code) is disabled"), message,
                code: disabled.code, into: &result)
            return nil
        }
        return outlets
    }
}
