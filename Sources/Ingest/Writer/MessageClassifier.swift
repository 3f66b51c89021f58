import Foundation
import Telemetry

/// A reading or message outletd refused, with what an operator needs to see why.
public struct RejectedReading: Sendable, Equatable {
    public var receivedAt: Date
    public var topic: String
    /// The topic's code segment (possibly invalid), when the topic had one.
    public var deviceCode: String?
    public var reason: RejectionReason
    public var detail: String
    /// Position in a JSON array, nil for the whole message.
    public var index: Int?
}

/// A sample ready to store: the reading and the registry id of its outlet.
public struct DeviceSample: Sendable, Equatable {
    public var deviceID: Int32
    public var reading: Reading

    public init(deviceID: Int32, reading: Reading) {
        self.deviceID = deviceID
        self.reading = reading
    }
}

/// What one message turned into.
public struct ClassifiedMessage: Sendable, Equatable {
    public var samples: [DeviceSample] = []
    public var rejections: [RejectedReading] = []
    /// A well-formed but unregistered code, to upsert into `pending_devices`.
    public var unknownCode: String?
    /// Readings left out because an earlier reading of the message has the same time.
    public var duplicates = 0
    /// Messages that carried nothing to store and nothing wrong, by kind: this one when it yielded neither a
    /// sample nor a rejection, and Shelly Gen1 polls of only a counter that ended with it.
    public var ignored: [IgnoredKind] = []

    public init(
        samples: [DeviceSample] = [], rejections: [RejectedReading] = [], unknownCode: String? = nil,
        duplicates: Int = 0, ignored: [IgnoredKind] = []
    ) {
        self.samples = samples
        self.rejections = rejections
        self.unknownCode = unknownCode
        self.duplicates = duplicates
        self.ignored = ignored
    }
}

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

    public func classify(
        _ message: RawMessage, lookup: (String) -> RegisteredDevice?
    ) -> ClassifiedMessage {
        var result = ClassifiedMessage()
        func reject(_ reason: RejectionReason, _ detail: String, code: String?, index: Int? = nil) {
            result.rejections.append(
                RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: code, reason: reason,
                    detail: detail, index: index))
        }
        let native = NativeProtocol.parseTopic(message.topic, prefix: topicPrefix)
        if native == nil, let foreignResult = foreign?.classify(message, limits: limits) {
            return foreignResult
        }
        guard let match = native, match.kind == .telemetry
        else {
            reject(.invalidTopic, "not a telemetry topic under \(topicPrefix)/", code: nil)
            return result
        }
        let code = match.deviceCode
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
