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

    public init(
        receivedAt: Date, topic: String, deviceCode: String?, reason: RejectionReason, detail: String, index: Int?
    ) {
        self.receivedAt = receivedAt
        self.topic = topic
        self.deviceCode = deviceCode
        self.reason = reason
        self.detail = detail
        self.index = index
    }
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
