import Foundation
import Telemetry

/// Turns Tasmota and Shelly reading messages into samples, on the writer thread.
///
/// Holds what those protocols spread over several messages: Shelly Gen1's last energy counter per outlet (attached
/// to the next `relay/<n>/power` reading) and Shelly Gen2's last known component status (NotifyStatus deltas are
/// overlaid on it). A Gen2 status equal to the last one stored for the outlet and received within
/// ``duplicateWindowSeconds`` of it is not stored again: with both `status/switch:<n>` and `events/rpc` subscribed
/// the same values arrive twice. The state is memory only; after a restart the first messages rebuild it.
/// One lock guards it, hence `@unchecked Sendable`.
public final class ForeignReadings: @unchecked Sendable {
    /// See the type documentation, seconds.
    public static let duplicateWindowSeconds = 5.0

    private let router: ProtocolRouter
    private let registry: DeviceRegistry
    private let lock = NSLock()
    private var gen1EnergyWattMinutes: [String: Double] = [:]
    private var gen2Status: [String: ShellyGen2Protocol.MeterStatus] = [:]
    private var gen2LastStored: [String: (status: ShellyGen2Protocol.MeterStatus, at: Date)] = [:]

    public init(router: ProtocolRouter, registry: DeviceRegistry) {
        self.router = router
        self.registry = registry
    }

    /// The samples and rejections of `message`, or nil when its topic is no foreign reading topic.
    func classify(_ message: RawMessage, limits: ValidationLimits) -> ClassifiedMessage? {
        guard let route = router.route(message.topic), route.carriesReadings else { return nil }
        var result = ClassifiedMessage()
        func reject(_ reason: RejectionReason, _ detail: String, code: String?) {
            result.rejections.append(
                RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: code, reason: reason,
                    detail: detail, index: nil))
        }
        func add(_ decoded: DecodedMessage, code: String, device: RegisteredDevice) {
            result.samples += decoded.readings.map { DeviceSample(deviceID: device.id, reading: $0) }
            for rejection in decoded.rejections { reject(rejection.reason, rejection.detail, code: code) }
        }
        let outletProtocol: OutletProtocol
        let deviceTopic: String
        switch route {
        case .tasmota(let match): (outletProtocol, deviceTopic) = (.tasmota, match.deviceTopic)
        case .shellyGen1(let id, _): (outletProtocol, deviceTopic) = (.shellyGen1, id)
        case .shellyGen2(let prefix, _): (outletProtocol, deviceTopic) = (.shellyGen2, prefix)
        case .shellyGen2Reply, .tasmotaDiscovery: return nil
        }
        let outlets = registry.lookup(outletProtocol, topic: deviceTopic).filter { $0.device.enabled }
        guard !outlets.isEmpty else {
            reject(.unknownDevice, "no enabled \(outletProtocol.rawValue) outlet has topic \(deviceTopic)", code: nil)
            if DeviceCode(deviceTopic) != nil { result.unknownCode = deviceTopic }
            return result
        }
        switch route {
        case .tasmota:
            for outlet in outlets {
                add(
                    TasmotaProtocol.decodeSensor(
                        message.payload, channel: outlet.channel, channelCount: outlets.count,
                        receivedAt: message.receivedAt, limits: limits), code: outlet.code, device: outlet.device)
            }
        case .shellyGen1(_, .energy(let channel)):
            guard let outlet = outlets.first(where: { $0.channel == channel }) else { return result }
            switch ShellyGen1Protocol.number(message.payload) {
            case .failure(let rejection): reject(rejection.reason, rejection.detail, code: outlet.code)
            case .success(let wattMinutes):
                lock.withLock { gen1EnergyWattMinutes[outlet.code] = wattMinutes }
            }
        case .shellyGen1(_, .power(let channel)):
            guard let outlet = outlets.first(where: { $0.channel == channel }) else { return result }
            let energy = lock.withLock { gen1EnergyWattMinutes[outlet.code] }
            add(
                ShellyGen1Protocol.reading(
                    powerPayload: message.payload, energyWattMinutes: energy, receivedAt: message.receivedAt,
                    limits: limits), code: outlet.code, device: outlet.device)
        case .shellyGen2(_, let kind):
            let updates: [ShellyGen2Protocol.ComponentUpdate]
            switch ShellyGen2Protocol.updates(message.payload, kind: kind, limits: limits) {
            case .failure(let rejection):
                reject(rejection.reason, rejection.detail, code: outlets[0].code)
                return result
            case .success(let parsed): updates = parsed
            }
            for update in updates {
                guard
                    let outlet = outlets.first(where: {
                        ShellyGen2Protocol.components(channel: $0.channel).contains(update.component)
                    })
                else { continue }
                let status: ShellyGen2Protocol.MeterStatus? = lock.withLock {
                    let base = gen2Status[outlet.code] ?? ShellyGen2Protocol.MeterStatus()
                    let next = base.overlaid(with: update.fields)
                    gen2Status[outlet.code] = next
                    guard ShellyGen2Protocol.MeterStatus.hasMeterFields(update.fields) else { return nil }
                    if let last = gen2LastStored[outlet.code], last.status == next,
                        message.receivedAt.timeIntervalSince(last.at) < Self.duplicateWindowSeconds
                    {
                        return nil
                    }
                    gen2LastStored[outlet.code] = (next, message.receivedAt)
                    return next
                }
                guard let status else { continue }
                add(
                    ShellyGen2Protocol.reading(
                        status, deviceTime: update.deviceTime, receivedAt: message.receivedAt, limits: limits),
                    code: outlet.code, device: outlet.device)
            }
        default:
            break
        }
        return result
    }
}
