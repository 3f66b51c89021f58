import Foundation
import Protocols
import Routing
import Storage
import Synchronization
import Telemetry
import WritePath

/// Turns Tasmota, Shelly, Zigbee2MQTT and ESPHome reading messages into samples, on the writer thread.
///
/// Holds what those protocols spread over several messages (docs/PROTOCOLS.md):
/// - Shelly Gen1's open polls (``ShellyGen1Polls``): a `relay/<n>/power` waits, at most
///   `ShellyGen1Polls.window`, for the `relay/<n>/energy` of the same poll, so that the sample carries that
///   poll's counter. While a poll is open the writer does not end its batch (``heldUntil``): the power's
///   spool record is committed only with its sample, so a crash loses nothing.
/// - Shelly Gen2's last known component status: NotifyStatus deltas are overlaid on it. A Gen2 status equal to
///   the last one stored for the outlet and received within ``duplicateWindowSeconds`` of it is not stored
///   again: with both `status/switch:<n>` and `events/rpc` subscribed the same values arrive twice. The overlay
///   is memory only; after a restart the first messages rebuild it.
/// - Zigbee2MQTT's last meter values per outlet (``ForeignReadings/classifyZigbee2MQTT``): a state message is a
///   new sample only when a meter value changed.
/// - ESPHome's open update cycles (``ESPHomeCycles``), held like Gen1 polls (``ForeignReadings/classifyESPHome``).
///
/// Messages a firmware sends in normal operation that carry no reading are ``IgnoredKind``s, never rejections.
/// One `Mutex` guards the state.
public final class ForeignReadings: Sendable {
    /// See the type documentation, seconds.
    public static let duplicateWindowSeconds = 5.0

    /// A Gen1 outlet with an open poll.
    struct Gen1Outlet: Hashable, Sendable {
        var deviceID: Int32
        var code: String
    }

    /// The layouts of the foreign protocols.
    let router: ProtocolRouter
    let registry: DeviceRegistry
    struct State: Sendable {
        var gen1Polls = ShellyGen1Polls<Gen1Outlet>()
        var gen2Status: [String: ShellyGen2Protocol.MeterStatus] = [:]
        var gen2LastStored: [String: (status: ShellyGen2Protocol.MeterStatus, at: Date)] = [:]
        /// Zigbee2MQTT: the last meter values of each outlet, by code.
        var zigbeeMeters: [String: Zigbee2MQTTProtocol.Meter] = [:]
        /// ESPHome: the open update cycles.
        var esphomeCycles = ESPHomeCycles<Gen1Outlet>()
        /// ESPHome outlets (by code) that sent a kept total under the usual ids (`total_energy`): from then on a
        /// plain `energy` (counted since boot) is not their counter.
        var esphomeTotals: Set<String> = []
    }
    let state = Mutex(State())

    public init(router: ProtocolRouter, registry: DeviceRegistry) {
        self.router = router
        self.registry = registry
    }

    /// Forgets everything held, as a restart does (``MessageClassifier/reset()``).
    func reset() {
        state.withLock { $0 = State() }
    }

    /// Until when a Shelly Gen1 poll waits for its other half; nil when none does. The batch holding its
    /// first half is not written before then (or before it completes).
    var heldUntil: Date? {
        state.withLock { state in
            switch (state.gen1Polls.nextExpiry, state.esphomeCycles.nextExpiry) {
            case (nil, nil): nil
            case (let poll?, nil): poll
            case (nil, let cycle?): cycle
            case (let poll?, let cycle?): min(poll, cycle)
            }
        }
    }

    /// The samples of the Gen1 polls opened more than their window before `time` (every one when `time` is
    /// nil: nothing more will come), with what they have.
    func release(before time: Date?, limits: ValidationLimits) -> ClassifiedMessage {
        let (completed, cycles) = state.withLock { state in
            var polls: [ShellyGen1Polls<Gen1Outlet>.Completed] = []
            var cycles: [ESPHomeCycles<Gen1Outlet>.Completed] = []
            if !state.gen1Polls.isEmpty {
                polls = time.map { state.gen1Polls.expire(openedBefore: $0) } ?? state.gen1Polls.completeAll()
            }
            if !state.esphomeCycles.isEmpty {
                cycles = time.map { state.esphomeCycles.expire(openedBefore: $0) } ?? state.esphomeCycles.completeAll()
            }
            return (polls, cycles)
        }
        var result = ClassifiedMessage()
        Self.add(completed, to: &result, limits: limits)
        Self.add(cycles, to: &result, limits: limits)
        return result
    }

    /// The samples and rejections of `message`, a reading topic `route` of a foreign protocol.
    func classify(_ message: RawMessage, _ route: ForeignTopic, limits: ValidationLimits) -> ClassifiedMessage {
        var result = ClassifiedMessage()
        // Polls whose other half did not come within the window end here, in spool order.
        if let expiry = heldUntil, expiry < message.receivedAt {
            result = release(before: message.receivedAt, limits: limits)
        }
        let before = result.samples.count + result.rejections.count
        let ignored = classify(message, route, limits: limits, into: &result)
        if result.samples.count + result.rejections.count == before, let ignored { result.ignored.append(ignored) }
        return result
    }

    /// Adds what `message` yields to `result`; returns why it may yield nothing.
    private func classify(
        _ message: RawMessage, _ route: ForeignTopic, limits: ValidationLimits, into result: inout ClassifiedMessage
    ) -> IgnoredKind? {
        func reject(_ reason: RejectionReason, _ detail: String, code: String?) {
            result.rejections.append(
                RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: code, reason: reason,
                    detail: detail, index: nil))
        }
        var ignored: IgnoredKind?
        func add(_ decoded: DecodedMessage, code: String, device: RegisteredDevice) {
            result.samples += decoded.readings.map { DeviceSample(deviceID: device.id, reading: $0) }
            for rejection in decoded.rejections { reject(rejection.reason, rejection.detail, code: code) }
            ignored = ignored ?? decoded.ignored
        }
        switch route {
        case .zigbee2mqtt(.message(let path)):
            return classifyZigbee2MQTT(message, path: path, limits: limits, into: &result)
        case .esphome(let prefix, .sensor(let objectID)):
            return classifyESPHome(message, prefix: prefix, objectID: objectID, limits: limits, into: &result)
        default:
            break
        }
        let outletProtocol: OutletProtocol
        let deviceTopic: String
        switch route {
        case .tasmota(let match): (outletProtocol, deviceTopic) = (.tasmota, match.deviceTopic)
        case .shellyGen1(let id, _): (outletProtocol, deviceTopic) = (.shellyGen1, id)
        case .shellyGen2(let prefix, _): (outletProtocol, deviceTopic) = (.shellyGen2, prefix)
        case .shellyGen2Reply, .tasmotaDiscovery, .zigbee2mqtt, .esphome, .esphomeDiscovery: return nil
        }
        let outlets = registry.lookup(outletProtocol, topic: deviceTopic).filter { $0.device.enabled }
        guard !outlets.isEmpty else {
            reject(.unknownDevice, "no enabled \(outletProtocol.rawValue) outlet has topic \(deviceTopic)", code: nil)
            if DeviceCode(deviceTopic) != nil { result.unknownCode = deviceTopic }
            return nil
        }
        switch route {
        case .tasmota:
            let meterChannel = outlets.map(\.channel).min()
            for outlet in outlets {
                add(
                    TasmotaProtocol.decodeSensor(
                        message.payload, channel: outlet.channel, channelCount: outlets.count,
                        meterChannel: meterChannel, receivedAt: message.receivedAt, limits: limits),
                    code: outlet.code, device: outlet.device)
            }
        case .shellyGen1(_, let kind):
            ignored = addGen1(kind, message, outlets, limits: limits, to: &result)
        case .shellyGen2(_, let kind):
            let updates: [ShellyGen2Protocol.ComponentUpdate]
            switch ShellyGen2Protocol.updates(message.payload, kind: kind, limits: limits) {
            case .failure(let rejection):
                reject(rejection.reason, rejection.detail, code: outlets[0].code)
                return nil
            case .success(let parsed): updates = parsed
            }
            if updates.isEmpty { ignored = .noReading }
            for update in updates {
                guard
                    let outlet = outlets.first(where: {
                        ShellyGen2Protocol.components(channel: $0.channel).contains(update.component)
                    })
                else {
                    ignored = ignored ?? .unregisteredChannel
                    continue
                }
                let (status, skipped): (ShellyGen2Protocol.MeterStatus?, IgnoredKind?) = state.withLock { state in
                    let base = state.gen2Status[outlet.code] ?? ShellyGen2Protocol.MeterStatus()
                    let next = base.overlaid(with: update.fields)
                    state.gen2Status[outlet.code] = next
                    guard ShellyGen2Protocol.MeterStatus.hasMeterFields(update.fields) else { return (nil, .noReading) }
                    // A counter update (`aenergy` once a minute) while the power is not known yet: the counter
                    // stays in the overlay and goes with the channel's next sample.
                    guard next.powerWatts != nil || (next.voltageVolts != nil && next.currentAmperes != nil) else {
                        return (nil, .energyOnly)
                    }
                    if let last = state.gen2LastStored[outlet.code], last.status == next,
                        message.receivedAt.timeIntervalSince(last.at) < Self.duplicateWindowSeconds
                    {
                        return (nil, .repeatedStatus)
                    }
                    state.gen2LastStored[outlet.code] = (next, message.receivedAt)
                    return (next, nil)
                }
                guard let status else {
                    ignored = ignored ?? skipped
                    continue
                }
                add(
                    ShellyGen2Protocol.reading(
                        status, deviceTime: update.deviceTime, receivedAt: message.receivedAt, limits: limits),
                    code: outlet.code, device: outlet.device)
            }
        default:
            break
        }
        return ignored
    }

    /// A Shelly Gen1 `relay/<n>/power` or `relay/<n>/energy`: checked at once, then paired into its poll.
    /// Returns why it yields nothing when it is for no registered channel.
    private func addGen1(
        _ kind: ShellyGen1Protocol.TopicKind, _ message: RawMessage,
        _ outlets: [(channel: Int, code: String, device: RegisteredDevice)], limits: ValidationLimits,
        to result: inout ClassifiedMessage
    ) -> IgnoredKind? {
        let channel: Int
        switch kind {
        case .power(let number), .energy(let number): channel = number
        default: return nil
        }
        guard let outlet = outlets.first(where: { $0.channel == channel }) else { return .unregisteredChannel }
        func reject(_ rejection: Rejection) {
            result.rejections.append(
                RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: outlet.code,
                    reason: rejection.reason, detail: rejection.detail, index: nil))
        }
        let key = Gen1Outlet(deviceID: outlet.device.id, code: outlet.code)
        let completed: [ShellyGen1Polls<Gen1Outlet>.Completed]
        if case .power = kind {
            // Checked now, so that a completed poll can no longer be refused.
            let watts: Double
            switch ShellyGen1Protocol.power(message.payload) {
            case .failure(let rejection):
                reject(rejection)
                return nil
            case .success(let value): watts = value
            }
            let check = ShellyGen1Protocol.reading(
                powerWatts: watts, energyWattMinutes: nil, receivedAt: message.receivedAt, limits: limits)
            if let rejection = check.rejections.first {
                reject(rejection)
                return nil
            }
            completed = state.withLock { $0.gen1Polls.addPower(watts, of: key, at: message.receivedAt) }
        } else {
            let wattMinutes: Double?
            switch ShellyGen1Protocol.number(message.payload) {
            case .failure(let rejection):
                reject(rejection)
                return nil
            case .success(let value): wattMinutes = value
            }
            if let wattMinutes, wattMinutes < 0 {
                reject(Rejection(reason: .outOfRange, detail: "energy \(wattMinutes) Wmin is negative"))
                return nil
            }
            completed = state.withLock { $0.gen1Polls.addEnergy(wattMinutes, of: key, at: message.receivedAt) }
        }
        Self.add(completed, to: &result, limits: limits)
        return nil
    }

    /// Completed Gen1 polls as samples (or, for a poll of only a counter, an ignored message).
    private static func add(
        _ completed: [ShellyGen1Polls<Gen1Outlet>.Completed], to result: inout ClassifiedMessage,
        limits: ValidationLimits
    ) {
        for poll in completed {
            guard let watts = poll.powerWatts else {
                result.ignored.append(.energyOnly)
                continue
            }
            let decoded = ShellyGen1Protocol.reading(
                powerWatts: watts, energyWattMinutes: poll.energyWattMinutes, receivedAt: poll.receivedAt,
                limits: limits)
            result.samples += decoded.readings.map { DeviceSample(deviceID: poll.outlet.deviceID, reading: $0) }
        }
    }
}
