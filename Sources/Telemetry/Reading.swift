import Foundation

/// One stored measurement of an outlet, in SI units, ready to be written to the `samples` table.
///
/// All dates produced by the decoders are rounded to whole microseconds (PostgreSQL's precision, see
/// ``Foundation/Date/roundedToMicroseconds``) so that a reading read back from the database compares equal.
public struct Reading: Sendable, Equatable {
    /// The time stored for the sample: ``deviceTime`` when it lies inside the accepted clock window, otherwise
    /// ``receivedAt``.
    public var measuredAt: Date
    /// When outletd received the MQTT message carrying this reading.
    public var receivedAt: Date
    /// The timestamp as the device reported it (`nil` when the payload had none). Kept even when it was outside
    /// the accepted window and therefore not used for ``measuredAt``, so clock problems can be diagnosed.
    public var deviceTime: Date?
    /// Line voltage in volts (RMS).
    public var voltageVolts: Double?
    /// Current in amperes (RMS).
    public var currentAmperes: Double?
    /// Active power in watts; voltage × current when the payload carried no active power.
    public var powerWatts: Double
    /// Power factor, -1…1 (dimensionless).
    public var powerFactor: Double?
    /// The device's cumulative energy counter in watt-hours, as reported (it may reset; see PROTOCOLS.md rule 5).
    public var energyWattHours: Double?
    /// The outlet's message sequence number (`seq`), when it sends one.
    public var sequence: Int64?

    /// Creates a reading; every optional field defaults to `nil`.
    public init(
        measuredAt: Date,
        receivedAt: Date,
        deviceTime: Date? = nil,
        voltageVolts: Double? = nil,
        currentAmperes: Double? = nil,
        powerWatts: Double,
        powerFactor: Double? = nil,
        energyWattHours: Double? = nil,
        sequence: Int64? = nil
    ) {
        self.measuredAt = measuredAt
        self.receivedAt = receivedAt
        self.deviceTime = deviceTime
        self.voltageVolts = voltageVolts
        self.currentAmperes = currentAmperes
        self.powerWatts = powerWatts
        self.powerFactor = powerFactor
        self.energyWattHours = energyWattHours
        self.sequence = sequence
    }
}
