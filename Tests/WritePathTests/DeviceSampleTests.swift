import Foundation
import Testing

@testable import Telemetry
@testable import WritePath

/// A batch keeps its samples packed (`DeviceSample`): what goes in comes out, optionals absent or present.
@Suite struct DeviceSampleTests {
    static let at = Date(timeIntervalSince1970: 1_780_000_000.123456)

    static let readings: [Reading] = [
        Reading(measuredAt: at, receivedAt: at, powerWatts: 0),
        Reading(
            measuredAt: at, receivedAt: at.addingTimeInterval(0.25), deviceTime: at, voltageVolts: 229.8,
            currentAmperes: 0.52, powerWatts: 119.5, powerFactor: -0.97, energyWattHours: 1_234.5, sequence: 42),
        Reading(measuredAt: at, receivedAt: at, voltageVolts: 0, powerWatts: -0.0, energyWattHours: 0, sequence: 0),
        Reading(
            measuredAt: Date(timeIntervalSinceReferenceDate: -1e9), receivedAt: .distantFuture,
            deviceTime: .distantPast, powerWatts: 1e9, sequence: .min),
    ]

    @Test(arguments: readings)
    func aReadingComesOutAsItWentIn(_ reading: Reading) {
        let sample = DeviceSample(deviceID: 7, reading: reading)
        #expect(sample.reading == reading)
        #expect(sample.deviceID == 7)
        var changed = sample
        changed.reading.powerWatts += 1
        #expect(changed != sample && changed.reading.powerWatts == reading.powerWatts + 1)
    }

    @Test func itTakesEightyBytes() {
        #expect(MemoryLayout<DeviceSample>.stride == 80)
    }
}
