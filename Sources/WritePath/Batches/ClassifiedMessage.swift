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
///
/// Packed: 80 bytes, where an outlet id beside a `Reading` takes 128 (each optional of the reading pads to
/// 16). A batch holds up to `ingest.batch_max_rows` samples, and two batches are in memory while one
/// commits (docs/PERFORMANCE.md). Dates keep their exact value (seconds since the reference date); an absent
/// optional is a cleared bit of `present`.
public struct DeviceSample: Sendable, Equatable {
    public var deviceID: Int32
    private var present: UInt8
    private var measuredAt: Double
    private var receivedAt: Double
    private var deviceTime: Double
    private var voltageVolts: Double
    private var currentAmperes: Double
    private var powerWatts: Double
    private var powerFactor: Double
    private var energyWattHours: Double
    private var sequence: Int64

    private enum Present {
        static let deviceTime: UInt8 = 1 << 0
        static let voltage: UInt8 = 1 << 1
        static let current: UInt8 = 1 << 2
        static let powerFactor: UInt8 = 1 << 3
        static let energy: UInt8 = 1 << 4
        static let sequence: UInt8 = 1 << 5
    }

    public init(deviceID: Int32, reading: Reading) {
        self.deviceID = deviceID
        present = 0
        measuredAt = 0
        receivedAt = 0
        deviceTime = 0
        voltageVolts = 0
        currentAmperes = 0
        powerWatts = 0
        powerFactor = 0
        energyWattHours = 0
        sequence = 0
        self.reading = reading
    }

    public var reading: Reading {
        get {
            Reading(
                measuredAt: Date(timeIntervalSinceReferenceDate: measuredAt),
                receivedAt: Date(timeIntervalSinceReferenceDate: receivedAt),
                deviceTime: value(Present.deviceTime, deviceTime).map(Date.init(timeIntervalSinceReferenceDate:)),
                voltageVolts: value(Present.voltage, voltageVolts),
                currentAmperes: value(Present.current, currentAmperes),
                powerWatts: powerWatts,
                powerFactor: value(Present.powerFactor, powerFactor),
                energyWattHours: value(Present.energy, energyWattHours),
                sequence: value(Present.sequence, sequence))
        }
        set {
            present = 0
            measuredAt = newValue.measuredAt.timeIntervalSinceReferenceDate
            receivedAt = newValue.receivedAt.timeIntervalSinceReferenceDate
            deviceTime = store(Present.deviceTime, newValue.deviceTime?.timeIntervalSinceReferenceDate)
            voltageVolts = store(Present.voltage, newValue.voltageVolts)
            currentAmperes = store(Present.current, newValue.currentAmperes)
            powerWatts = newValue.powerWatts
            powerFactor = store(Present.powerFactor, newValue.powerFactor)
            energyWattHours = store(Present.energy, newValue.energyWattHours)
            sequence = store(Present.sequence, newValue.sequence)
        }
    }

    private func value<Value>(_ bit: UInt8, _ stored: Value) -> Value? {
        present & bit != 0 ? stored : nil
    }

    private mutating func store<Value: Numeric>(_ bit: UInt8, _ value: Value?) -> Value {
        guard let value else { return 0 }
        present |= bit
        return value
    }

    /// Equal when the readings are (not bitwise: 0 and -0, and NaN, compare as `Reading` compares them).
    public static func == (lhs: DeviceSample, rhs: DeviceSample) -> Bool {
        lhs.deviceID == rhs.deviceID && lhs.reading == rhs.reading
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
