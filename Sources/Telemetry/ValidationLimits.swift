/// The bounds every decoded reading must respect. All ranges are inclusive.
public struct ValidationLimits: Sendable, Equatable {
    /// Accepted line voltage, in volts.
    public var voltageVolts: ClosedRange<Double> = 0...500
    /// Accepted current, in amperes.
    public var currentAmperes: ClosedRange<Double> = 0...100
    /// Accepted active power (given or computed as voltage × current), in watts.
    public var powerWatts: ClosedRange<Double> = 0...50_000
    /// Accepted power factor (dimensionless).
    public var powerFactor: ClosedRange<Double> = -1...1
    /// The largest payload decoded, in bytes; bigger payloads are rejected before parsing.
    public var maxPayloadBytes: Int = 65_536
    /// The most readings accepted in one JSON array.
    public var maxReadingsPerMessage: Int = 1_000
    /// How far, in seconds, a device timestamp may be before or after the receive time and still be trusted.
    public var maxClockSkew: Double = 300
    /// How old, in seconds, a reading inside a JSON array (buffered while the outlet was offline) may be and still
    /// keep its device timestamp. The window for array elements is
    /// `[receivedAt − max(maxBackfill, maxClockSkew), receivedAt + maxClockSkew]`.
    public var maxBackfill: Double = 86_400

    /// The default limits.
    public init() {}

    /// Limits with any subset of the values changed; every parameter defaults to the standard value.
    public init(
        voltageVolts: ClosedRange<Double> = 0...500,
        currentAmperes: ClosedRange<Double> = 0...100,
        powerWatts: ClosedRange<Double> = 0...50_000,
        powerFactor: ClosedRange<Double> = -1...1,
        maxPayloadBytes: Int = 65_536,
        maxReadingsPerMessage: Int = 1_000,
        maxClockSkew: Double = 300,
        maxBackfill: Double = 86_400
    ) {
        self.voltageVolts = voltageVolts
        self.currentAmperes = currentAmperes
        self.powerWatts = powerWatts
        self.powerFactor = powerFactor
        self.maxPayloadBytes = maxPayloadBytes
        self.maxReadingsPerMessage = maxReadingsPerMessage
        self.maxClockSkew = maxClockSkew
        self.maxBackfill = maxBackfill
    }
}
