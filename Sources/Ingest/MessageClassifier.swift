import Foundation
import Protocols
import Routing
import Storage
import Telemetry
import WritePath

/// Turns a raw message into samples and rejections: topic → device code → registry → decoder.
/// Pure apart from the registry lookup it is given, so it is tested with tables.
public struct MessageClassifier: Sendable {
    public var topicPrefix: String
    public var limits: ValidationLimits
    /// Tasmota and Shelly readings; nil when only the native protocol is read.
    public var foreign: ForeignReadings?

    public init(topicPrefix: String, limits: ValidationLimits, foreign: ForeignReadings? = nil) {
        self.topicPrefix = topicPrefix
        self.limits = limits
        self.foreign = foreign
    }

    /// Whether a reading spread over several messages (a Shelly Gen1 poll) waits for its other half. The writer
    /// does not end a batch meanwhile.
    public var isHolding: Bool { foreign?.heldUntil != nil }

    /// The readings of such polls, with what they have (their other half will not come in time).
    public func releaseHeld() -> ClassifiedMessage {
        foreign?.release(before: nil, limits: limits) ?? ClassifiedMessage()
    }

    /// Forgets what the foreign protocols hold across messages (open polls and cycles, last statuses), as a restart
    /// does: the writer reads those messages again from the spool (a failover's replay).
    public func reset() {
        foreign?.reset()
    }

    /// The route of a message whose record carries none (written before routes were carried, or a test's).
    public func route(_ topic: String) -> MessageRoute {
        if let match = NativeProtocol.parseTopic(topic, prefix: topicPrefix) {
            return .native(match.kind, code: match.deviceCode)
        }
        if let foreignTopic = foreign?.router.route(topic) { return .foreign(foreignTopic) }
        return .unknown
    }

    /// ``classify(_:route:lookup:)`` with the route decided here from the topic.
    public func classify(_ message: RawMessage, lookup: (String) -> RegisteredDevice?) -> ClassifiedMessage {
        classify(message, route: route(message.topic), lookup: lookup)
    }

    /// Classifies `message`, whose `route` the MQTT callback decided when it arrived.
    public func classify(
        _ message: RawMessage, route: MessageRoute, lookup: (String) -> RegisteredDevice?
    ) -> ClassifiedMessage {
        var result = ClassifiedMessage()
        func reject(_ reason: RejectionReason, _ detail: String, code: String?, index: Int? = nil) {
            result.rejections.append(
                RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: code, reason: reason,
                    detail: detail, index: index))
        }
        let code: String
        switch route {
        case .foreign(let topic) where topic.carriesReadings:
            if let foreignResult = foreign?.classify(message, topic, limits: limits) { return foreignResult }
            reject(.invalidTopic, "not a telemetry topic under \(topicPrefix)/", code: nil)
            return result
        case .native(.telemetry, let telemetryCode):
            code = telemetryCode
        default:
            reject(.invalidTopic, "not a telemetry topic under \(topicPrefix)/", code: nil)
            return result
        }
        guard let deviceCode = DeviceCode(code) else {
            reject(.invalidDeviceCode, "device code must be 1–64 of A-Z a-z 0-9 _ -", code: code)
            return result
        }
        guard let device = lookup(deviceCode.rawValue) else {
            reject(.unknownDevice, "device \(code) is not registered", code: code)
            result.unknownCode = code
            return result
        }
        guard device.enabled else {
            reject(.disabledDevice, "device \(code) is disabled", code: code)
            return result
        }
        let decoded = NativeProtocol.decodeTelemetry(message.payload, receivedAt: message.receivedAt, limits: limits)
        result.samples = decoded.readings.map { DeviceSample(deviceID: device.id, reading: $0) }
        result.duplicates = decoded.duplicates
        if let kind = decoded.ignored { result.ignored.append(kind) }
        for rejection in decoded.rejections {
            reject(rejection.reason, rejection.detail, code: code, index: rejection.index)
        }
        return result
    }
}
