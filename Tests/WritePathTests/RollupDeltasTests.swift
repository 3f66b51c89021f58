import Foundation
import Postgres
import Storage
import Telemetry
import TestSupport
import Testing

@testable import WritePath

/// The writer's share of the rollup computation: pure, no database (but for the SQL's counter rule held to it).
@Suite struct RollupDeltasTests {
    static let base = Date(timeIntervalSince1970: 1_780_000_020)  // 2026-05-28T20:27:00Z, a minute start

    func sample(_ device: Int32, _ seconds: Double, _ power: Double, voltage: Double? = nil, energy: Double? = nil)
        -> DeviceSample
    {
        DeviceSample(
            deviceID: device,
            reading: Reading(
                measuredAt: Self.base.addingTimeInterval(seconds), receivedAt: Self.base, voltageVolts: voltage,
                currentAmperes: nil, powerWatts: power, energyWattHours: energy))
    }

    func micros(_ seconds: Double) -> Int64 { CopyBinaryEncoder.microseconds(Self.base.addingTimeInterval(seconds)) }

    @Test func oneOutletAcrossTwoMinutes() {
        // Shuffled on purpose: the chain is put in time order.
        let deltas = RollupDeltas(
            [
                sample(7, 70, 300, voltage: 231), sample(7, 10, 100, voltage: 229), sample(7, 40, 300, voltage: 228),
            ], maxGapSeconds: 600)
        #expect(deltas.chains.count == 1)
        #expect(deltas.chains[0].sampleCount == 3)
        #expect(deltas.chains[0].first == .init(micros: micros(10), powerWatts: 100, energyWattHours: nil))
        #expect(deltas.chains[0].last == .init(micros: micros(70), powerWatts: 300, energyWattHours: nil))
        #expect(deltas.minutes.count == 2)
        let first = deltas.minutes[0]
        #expect(first.bucketMicros == micros(0))
        #expect(first.sampleCount == 2)
        #expect(first.powerSumWatts == 400)
        // Segments 10→40 s (100→300 W) and 40→70 s (300 W), both starting in the first minute.
        let integral: Double = 200 * 30 + 300 * 30
        #expect(first.powerIntegralWattSeconds == integral)
        #expect(first.coveredSeconds == 60)
        #expect(first.energyWattHours == integral / 3600)
        #expect(first.minPowerWatts == 100)
        #expect(first.peakPowerWatts == 300)
        #expect(first.peakMicros == micros(40))
        #expect(first.minVoltageVolts == 228)
        #expect(first.maxVoltageVolts == 229)
        #expect(first.lastPowerWatts == 300)
        #expect(first.lastMicros == micros(40))
        let second = deltas.minutes[1]
        #expect(second.bucketMicros == micros(60))
        #expect(second.sampleCount == 1)
        #expect(second.powerIntegralWattSeconds == 0)  // its segment starts at the next batch
        #expect(second.coveredSeconds == 0)
        #expect(second.peakMicros == micros(70))
        // The chain's total: both minutes (what the batch adds to the outlet's hour and day).
        let total = deltas.chains[0].total
        #expect(total.sampleCount == 3)
        #expect(total.powerSumWatts == 700)
        #expect(total.powerIntegralWattSeconds == integral)
        #expect(total.coveredSeconds == 60)
        #expect(total.minPowerWatts == 100)
        #expect(total.peakPowerWatts == 300)
        #expect(total.peakMicros == micros(40))  // the earlier of the two 300 W samples
        #expect(total.minVoltageVolts == 228)
        #expect(total.maxVoltageVolts == 231)
        #expect(total.lastPowerWatts == 300)
        #expect(total.lastMicros == micros(70))
    }

    /// Energy of one segment, by the rules of `outletd_minute_rollups` (counters: `outletd_counter_energy`).
    @Test(
        arguments: [
            // (seconds apart, energy at start, energy at end, expected Wh, expected covered s)
            (30.0, nil, nil, 100.0 * 30 / 3600, 30.0),  // trapezoid of 100 W
            (900.0, nil, nil, 0.0, 0.0),  // longer than the gap: nothing
            (900.0, 10.0, 12.5, 2.5, 0.0),  // counter difference, whatever the gap
            (30.0, 10.0, 3.0, 3.0, 30.0),  // a decrease beyond the tolerance is a reset: the new reading counts
            (30.0, 1_000.0, 999.99, 0.0, 30.0),  // back by a rounding step: jitter, nothing
            (30.0, 6_294.0, 6_250.0, 0.0, 30.0),  // back by 0.7 %, restored behind after a power cut: jitter
            (30.0, 10.0, nil, 100.0 * 30 / 3600, 30.0),  // one end without counter: trapezoid
        ] as [(Double, Double?, Double?, Double, Double)])
    func segmentEnergy(seconds: Double, from: Double?, to: Double?, energy: Double, covered: Double) {
        let deltas = RollupDeltas(
            [sample(1, 0, 100, energy: from), sample(1, seconds, 100, energy: to)], maxGapSeconds: 600)
        #expect(abs(deltas.minutes[0].energyWattHours - energy) < 1e-12)
        #expect(deltas.minutes[0].coveredSeconds == covered)
    }

    /// (previous counter, next counter, Wh): an increase counts; a decrease of at most max(1 Wh, 1 % of the
    /// previous value) is jitter; a larger one is a reset, and the new value is what was counted since.
    static let counterCases: [(Double, Double, Double)] = [
        (1_000, 1_000, 0), (1_000, 1_002.5, 2.5), (1_000, 999.99, 0), (1_000, 990, 0), (1_000, 989.9, 989.9),
        (50, 49, 0), (50, 48.9, 48.9), (0.5, 0, 0), (1, 0, 0), (1.5, 0, 0), (2.5, 0.4, 0.4),
        (6_294, 6_250, 0), (120_000, 118_900, 0), (120_000, 3, 3), (120_000, 0, 0),
    ]

    @Test(arguments: counterCases)
    func counterEnergyTellsJitterFromAReset(from: Double, to: Double, energy: Double) {
        #expect(abs(RollupDeltas.counterEnergy(from: from, to: to) - energy) < 1e-9)
    }

    /// The counter rule has two homes, `outletd_counter_energy` (SQL) and `RollupDeltas.counterEnergy`
    /// (the writer's): they give the same energy for every case.
    @Test func theCounterRuleIsTheSameInSQLAndInTheWriter() throws {
        let connection = try PostgresConnection(connectionString: try TestStack.shared().createDatabase())
        defer { connection.close() }
        try Migrator().migrate(connection)
        for (from, to, energy) in Self.counterCases {
            let result = try connection.execute("SELECT outletd_counter_energy($1, $2)", [from, to])
            let sql = try #require(try result.double(row: 0, column: 0))
            #expect(abs(sql - energy) < 1e-9, "SQL, \(from) → \(to)")
            #expect(abs(RollupDeltas.counterEnergy(from: from, to: to) - sql) < 1e-12, "Swift, \(from) → \(to)")
        }
    }

    @Test func equalPeaksKeepTheEarliestAndOutletsStaySeparate() {
        let deltas = RollupDeltas(
            [sample(2, 5, 80), sample(1, 20, 50), sample(2, 1, 80), sample(1, 10, 60)], maxGapSeconds: 600)
        #expect(deltas.chains.map(\.deviceID) == [1, 2])
        #expect(deltas.minutes.map(\.deviceID) == [1, 2])
        #expect(deltas.minutes[0].peakMicros == micros(10))
        #expect(deltas.minutes[1].peakMicros == micros(1))
        #expect(deltas.minutes[1].minVoltageVolts == nil)
    }

    /// A chain's first and last minute travel in its row; only the minutes between them are
    /// staged before the short way, the ends only for the outlets it leaves.
    @Test func middleAndEndMinutesPartitionEachChainsMinutes() {
        let deltas = RollupDeltas(
            [
                sample(1, 10, 100),  // one minute
                sample(2, 10, 100), sample(2, 70, 100),  // two
                sample(3, 10, 100), sample(3, 70, 100), sample(3, 130, 100), sample(3, 250, 100),  // four
                sample(4, 5, 100), sample(4, 15, 100),  // one, two samples
            ], maxGapSeconds: 600)
        #expect(deltas.chains.map(\.minuteCount) == [1, 2, 4, 1])
        #expect(deltas.chains.map(\.firstMinuteIndex) == [0, 1, 3, 7])
        func keys(_ minutes: [RollupDeltas.Minute]) -> [String] {
            minutes.map { "\($0.deviceID)@\(($0.bucketMicros - micros(0)) / 60_000_000)" }
        }
        #expect(keys(deltas.middleMinutes) == ["3@1", "3@2"])
        #expect(keys(deltas.endMinutes) == ["1@0", "2@0", "2@1", "3@0", "3@4", "4@0"])
        #expect(Set(keys(deltas.middleMinutes + deltas.endMinutes)) == Set(keys(deltas.minutes)))
        #expect(deltas.middleMinutes.count + deltas.endMinutes.count == deltas.minutes.count)
    }

    @Test func anOutletWithTwoDifferentReadingsAtOneTimeIsLeftToTheDatabase() {
        let deltas = RollupDeltas(
            [sample(3, 10, 100), sample(3, 10, 200), sample(4, 10, 100), sample(4, 20, 100)], maxGapSeconds: 600)
        #expect(deltas.chains.map(\.deviceID) == [4])
        #expect(deltas.minutes.map(\.deviceID) == [4])
    }

    @Test func aRepeatedReadingCountsOnce() {
        let once = RollupDeltas([sample(5, 10, 100, voltage: 230), sample(5, 20, 90)], maxGapSeconds: 600)
        let twice = RollupDeltas(
            [sample(5, 10, 100, voltage: 230), sample(5, 20, 90), sample(5, 10, 100, voltage: 230)],
            maxGapSeconds: 600)
        #expect(twice == once)
        #expect(twice.chains.first?.sampleCount == 2)
    }

    @Test(arguments: [
        (Int64(0), Int64(0)), (59_999_999, 0), (60_000_000, 60_000_000), (-1, -60_000_000),
        (-60_000_000, -60_000_000),
    ])
    func minuteStarts(micros: Int64, start: Int64) {
        #expect(RollupDeltas.minuteStart(micros) == start)
    }
}
