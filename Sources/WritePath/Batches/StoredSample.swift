import Foundation
import Telemetry

/// A reading in the columns of `samples_stored` (sql/0024_compact_samples.sql), where it takes fewer bytes than
/// in the view `samples` it is read through, and reads back bit for bit.
///
/// Of the three times, only what measured_at does not already say is stored: the receive time as a delay in
/// microseconds (or whole, beyond ±35 minutes) when it differs or the device time is measured_at, the device time
/// when it differs ('-infinity' for none where a receive time is stored). Each value is a whole number of small
/// units (centivolts, milliamperes, centiwatts, thousandths, mWh) when that number divided back gives the very
/// double decoded; otherwise the double goes to its `*_exact` column. `outletd_compact_sample()` is the same
/// encoding in SQL.
enum StoredSample {
    /// The row for copy_samples.sql, its columns in that order.
    static func encode(_ sample: DeviceSample, _ encoder: inout CopyBinaryEncoder) {
        let reading = sample.reading
        let measured = CopyBinaryEncoder.microseconds(reading.measuredAt)
        let received = CopyBinaryEncoder.microseconds(reading.receivedAt)
        let device = reading.deviceTime.map(CopyBinaryEncoder.microseconds).flatMap {
            BatchStore.storableMicroseconds.contains($0) ? $0 : nil
        }
        let keepsReceived = device == measured || received != measured
        let (delay, overflow) = received.subtractingReportingOverflow(measured)
        let shortDelay = keepsReceived && !overflow ? Int32(exactly: delay) : nil
        let voltage = reading.voltageVolts.map { ($0, scaled($0, by: 100)) }
        let current = reading.currentAmperes.map { ($0, scaled($0, by: 1_000)) }
        let power = (reading.powerWatts, scaled(reading.powerWatts, by: 100))
        let powerFactor = reading.powerFactor.map { ($0, scaled($0, by: 1_000, limit: Int32(Int16.max))) }
        let energy = reading.energyWattHours.map { ($0, scaled($0, by: 1_000)) }
        let shortSequence = reading.sequence.flatMap { Int32(exactly: $0) }

        encoder.timestamp(microseconds: measured)
        if keepsReceived && shortDelay == nil { encoder.timestamp(microseconds: received) } else { encoder.null() }
        if let device, device != measured {
            encoder.timestamp(microseconds: device)
        } else if device == nil && keepsReceived {
            encoder.minusInfinity()
        } else {
            encoder.null()
        }
        encoder.int64(shortSequence == nil ? reading.sequence : nil)
        for value in [voltage, current, power, powerFactor, energy] {
            encoder.double(value?.1 == nil ? value?.0 : nil)
        }
        encoder.int32(sample.deviceID)
        encoder.int32(shortDelay)
        encoder.int32(shortSequence)
        encoder.int32(voltage?.1)
        encoder.int32(current?.1)
        encoder.int32(power.1)
        encoder.int32(energy?.1)
        if let thousandths = powerFactor?.1 { encoder.int16(Int16(thousandths)) } else { encoder.null() }
    }

    /// `value` × `scale` as a whole number within ±`limit`, when that number divided by `scale` (as the view
    /// `samples` divides it) is `value`, bit for bit; else nil (-0, NaN, more digits, too large).
    static func scaled(_ value: Double, by scale: Double, limit: Int32 = .max) -> Int32? {
        let product = value * scale
        guard abs(product) <= Double(limit) else { return nil }
        let whole = Int32(product.rounded(.toNearestOrEven))
        return (Double(whole) / scale).bitPattern == value.bitPattern ? whole : nil
    }
}
