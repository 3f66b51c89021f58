import Foundation
import Telemetry
import Testing

@testable import WritePath

/// The order a batch's samples are stored in, and the running totals the writer computes from it: pure, no
/// database (`RollupTests` checks the totals against the stored samples).
@Suite struct SampleOrderTests {
    static let base = Date(timeIntervalSince1970: 1_780_000_020)

    static func sample(_ device: Int32, _ seconds: Double, _ power: Double) -> DeviceSample {
        DeviceSample(
            deviceID: device,
            reading: Reading(
                measuredAt: base.addingTimeInterval(seconds), receivedAt: base, voltageVolts: nil,
                currentAmperes: nil, powerWatts: power, energyWattHours: nil))
    }

    static func micros(_ seconds: Double) -> Int64 { CopyBinaryEncoder.microseconds(base.addingTimeInterval(seconds)) }

    @Test func samplesAreOrderedByOutletThenTimeInOneRunPerOutlet() {
        let samples = [
            Self.sample(9, 5, 1), Self.sample(2, 7, 2), Self.sample(9, 1, 3), Self.sample(2, 3, 4),
            Self.sample(5, 0, 5),
        ]
        let order = SampleOrder(samples)
        #expect(order.keys.map(\.index) == [3, 1, 4, 2, 0])
        #expect(order.keys.map(\.micros) == [3, 7, 0, 1, 5].map { Self.micros(Double($0)) })
        #expect(order.runs.map { $0.map(\.deviceID) } == [[2, 2], [5], [9, 9]])
        #expect(!order.hasRepeatedTimes)
        #expect(order.outletCount == 3)
        #expect(SampleOrder([]).runs.map(\.count).isEmpty)
        #expect(SampleOrder([]).outletCount == 0)
    }

    /// (outlet, seconds) of a batch's samples, and whether two of one outlet share a time.
    static let repeatedTimeCases: [(samples: [(device: Int32, seconds: Double)], repeated: Bool)] = [
        ([(1, 0), (1, 1)], false),
        ([(1, 0), (2, 0)], false),  // two outlets at one time
        ([(1, 0), (1, 0)], true),
        ([(3, 4), (1, 0), (3, 2), (3, 4)], true),
        ([(1, 0.000_001), (1, 0.000_002)], false),  // a microsecond apart
    ]

    @Test(arguments: repeatedTimeCases)
    func repeatedTimesAreThoseOfOneOutlet(_ samples: [(device: Int32, seconds: Double)], _ repeated: Bool) {
        #expect(SampleOrder(samples.map { Self.sample($0.device, $0.seconds, 10) }).hasRepeatedTimes == repeated)
    }

    /// An outlet's powers at seconds 0, 1, 2, … (given shuffled, in time order here), and what they add to
    /// its totals: sum, peak and when (the earliest of equal peaks).
    static let totalsCases: [(powers: [Double], sum: Double, peak: Double, peakSecond: Double)] = [
        ([100], 100, 100, 0),
        ([100, 300, 200], 600, 300, 1),
        ([50, 80, 80, 20], 230, 80, 1),
        ([-5, -2, -9], -16, -2, 1),  // an outlet that feeds power back
        ([0, 0], 0, 0, 0),
    ]

    @Test(arguments: totalsCases)
    func totalsOfAnOutlet(_ powers: [Double], _ sum: Double, _ peak: Double, _ peakSecond: Double) {
        var samples = powers.enumerated().map { Self.sample(4, Double($0.offset), $0.element) }
        samples.reverse()
        let totals = SampleOrder(samples).outletTotals(of: samples)
        #expect(
            totals == [
                OutletTotals(
                    deviceID: 4, sampleCount: powers.count, firstMicros: Self.micros(0),
                    lastMicros: Self.micros(Double(powers.count - 1)), powerSumWatts: sum, peakPowerWatts: peak,
                    peakMicros: Self.micros(peakSecond))
            ])
    }

    @Test func eachOutletHasItsOwnTotals() {
        let samples = [Self.sample(2, 10, 40), Self.sample(1, 5, 70), Self.sample(2, 0, 60), Self.sample(1, 6, 30)]
        let totals = SampleOrder(samples).outletTotals(of: samples)
        #expect(totals.map(\.deviceID) == [1, 2])
        #expect(totals.map(\.sampleCount) == [2, 2])
        #expect(totals.map(\.powerSumWatts) == [100, 100])
        #expect(totals.map(\.peakMicros) == [Self.micros(5), Self.micros(0)])
        #expect(totals.map(\.lastMicros) == [Self.micros(6), Self.micros(10)])
    }
}
