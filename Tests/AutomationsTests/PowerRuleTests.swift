import Automations
import Foundation
import Telemetry
import Testing

/// Over-power, idle and group-limit decisions from readings (docs/AUTOMATIONS.md, "Power rules", "Group limits").
@Suite("Power rules")
struct PowerRuleTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// Readings `(seconds after t0, watts)`.
    static func readings(_ pairs: [(Double, Double)]) -> [PowerReading] {
        pairs.map { PowerReading(at: t0.addingTimeInterval($0), watts: $1) }
    }

    @Test(
        "over-power meets at the first reading held long enough, once per run",
        arguments: [
            // (readings, hold, seconds of the reading that met it, or nil)
            ([(0, 2_100), (1, 2_100), (2, 2_100), (3, 2_100)], 2, 2.0),
            ([(0, 2_000), (1, 2_000), (2, 2_000)], 2, 2.0),  // at the limit counts
            ([(0, 1_999.9), (1, 1_999.9), (2, 1_999.9), (3, 1_999.9)], 2, nil),  // not quite
            ([(0, 2_100), (1, 2_100), (1.5, 1_900), (2, 2_100), (3, 2_100)], 2, nil),  // a dip starts again
            ([(0, 2_100), (1, 2_100), (1.5, 1_900), (2, 2_100), (3, 2_100), (4, 2_100)], 2, 4.0),
            ([(0, 2_100), (10, 2_100)], 5, 10.0),  // reports every 10 s: met at the next reading
            ([(0, 2_100)], 1, nil),  // one reading holds for nothing yet
            ([(0, 5_000), (0.5, 5_000), (0.9, 5_000)], 1, nil),
        ] as [([(Double, Double)], Int, Double?)])
    func overPower(pairs: [(Double, Double)], hold: Int, expected: Double?) {
        var watch = PowerWatch()
        let met = watch.follow(Self.readings(pairs), condition: .atLeast(2_000), holdSeconds: hold)
        #expect(met?.at == expected.map { Self.t0.addingTimeInterval($0) })
    }

    @Test func aRunFiresOnceAndTheNextRunAgain() {
        var watch = PowerWatch()
        let first = watch.follow(
            Self.readings([(0, 2_100), (2, 2_100), (3, 2_100), (4, 2_100)]), condition: .atLeast(2_000), holdSeconds: 2)
        #expect(first?.at == Self.t0.addingTimeInterval(2))
        // The same run, read later (the outlet did not obey): no second firing.
        #expect(
            watch.follow(Self.readings([(5, 2_100), (9, 2_100)]), condition: .atLeast(2_000), holdSeconds: 2) == nil)
        // Off, then a new run: it fires again.
        let again = watch.follow(
            Self.readings([(10, 0), (11, 2_200), (13, 2_200)]), condition: .atLeast(2_000), holdSeconds: 2)
        #expect(again?.at == Self.t0.addingTimeInterval(13))
    }

    @Test func readingsSplitAcrossEvaluationsDecideAsOneAndOldOnesArePassedOver() {
        var whole = PowerWatch()
        let all = Self.readings([(0, 2_100), (1, 2_100), (2, 2_100), (3, 2_100)])
        let once = whole.follow(all, condition: .atLeast(2_000), holdSeconds: 3)
        var split = PowerWatch()
        #expect(split.follow(Array(all.prefix(2)), condition: .atLeast(2_000), holdSeconds: 3) == nil)
        // A late reading older than what was followed changes nothing.
        #expect(split.follow(Self.readings([(0.5, 0)]), condition: .atLeast(2_000), holdSeconds: 3) == nil)
        let later = split.follow(Array(all.dropFirst(2)), condition: .atLeast(2_000), holdSeconds: 3)
        #expect(once == later && once != nil)
        #expect(whole == split)
    }

    @Test func idleNeedsTheOutletToReportItselfOn() {
        let low = Self.readings([(0, 3), (60, 2), (120, 4), (180, 3)])
        var on = PowerWatch()
        #expect(
            on.follow(low, condition: .atMost(5), holdSeconds: 120, reportsOn: true)?.at
                == Self.t0.addingTimeInterval(120))
        var off = PowerWatch()
        #expect(off.follow(low, condition: .atMost(5), holdSeconds: 120, reportsOn: false) == nil)
        var spike = PowerWatch()
        let withSpike = Self.readings([(0, 3), (60, 80), (120, 4), (180, 3)])
        #expect(spike.follow(withSpike, condition: .atMost(5), holdSeconds: 120, reportsOn: true) == nil)
    }

    static let group = AutomationRule.GroupLimit(
        name: "kitchen", watts: 3_500, holdSeconds: 5, outlets: ["kettle", "oven", "fridge"],
        restore: .init(marginWatts: 300, afterSeconds: 60))

    static func members() -> [GroupWatch.Member] {
        [.init(code: "kettle", watts: 2_000), .init(code: "oven", watts: 1_200), .init(code: "fridge", watts: 150)]
    }

    @Test func aGroupShedsTheLeastImportantAfterTheHoldAndWaitsAgainBeforeTheNext() {
        var watch = GroupWatch(members: Self.members())
        // The oven goes up: 2000 + 2500 + 150 = 4650 > 3500 from t=0.
        var actions = watch.follow(
            [
                (1, PowerReading(at: Self.t0, watts: 2_500)),
                (2, PowerReading(at: Self.t0.addingTimeInterval(4), watts: 150)),
            ],
            rule: Self.group)
        #expect(actions.isEmpty)  // 4 s above: not yet
        actions = watch.follow([(2, PowerReading(at: Self.t0.addingTimeInterval(5), watts: 150))], rule: Self.group)
        #expect(actions == [.shed(index: 0, watts: 2_000, total: 4_650, at: Self.t0.addingTimeInterval(5))])
        // The kettle obeys: 0 + 2500 + 150 = 2650, under the limit; nothing more.
        actions = watch.follow(
            [
                (0, PowerReading(at: Self.t0.addingTimeInterval(6), watts: 0)),
                (2, PowerReading(at: Self.t0.addingTimeInterval(20), watts: 150)),
            ], rule: Self.group)
        #expect(actions.isEmpty)
        #expect(watch.members[0].shedAt == Self.t0.addingTimeInterval(5))
    }

    @Test func aGroupShedsOneAtATimeAndSaysOnceWhenNothingIsLeft() {
        var watch = GroupWatch(members: [.init(code: "a", watts: 2_000), .init(code: "b", watts: 2_000)])
        var rule = Self.group
        rule.outlets = ["a", "b"]
        rule.restore = nil
        // Nobody obeys: the total stays at 4000.
        let readings = stride(from: 0.0, through: 30, by: 1).map {
            (Int($0) % 2, PowerReading(at: Self.t0.addingTimeInterval($0), watts: 2_000))
        }
        let actions = watch.follow(readings, rule: rule)
        #expect(
            actions == [
                .shed(index: 0, watts: 2_000, total: 4_000, at: Self.t0.addingTimeInterval(5)),
                .shed(index: 1, watts: 2_000, total: 4_000, at: Self.t0.addingTimeInterval(11)),
                .nothingToShed(total: 4_000, at: Self.t0.addingTimeInterval(17)),
            ])
    }

    @Test func aShedOutletComesBackOnlyWhenItsPowerFitsUnderTheMarginForTheWholeWait() {
        var watch = GroupWatch(
            members: [
                .init(code: "kettle", watts: 0, shedAt: Self.t0, shedWatts: 2_000),
                .init(code: "oven", watts: 1_200), .init(code: "fridge", watts: 150),
            ])
        // 1350 + 2000 = 3350, not below 3500 - 300 = 3200: no restore, however long.
        var actions = watch.follow(
            (1...100).map { (2, PowerReading(at: Self.t0.addingTimeInterval(Double($0)), watts: 150)) },
            rule: Self.group)
        #expect(actions.isEmpty)
        // The oven drops to 1000: 1150 + 2000 = 3150 < 3200 from t=101; back at t=161, not before.
        actions = watch.follow([(1, PowerReading(at: Self.t0.addingTimeInterval(101), watts: 1_000))], rule: Self.group)
        actions += watch.follow(
            (102...160).map { (2, PowerReading(at: Self.t0.addingTimeInterval(Double($0)), watts: 150)) },
            rule: Self.group)
        #expect(actions.isEmpty)
        actions = watch.follow([(2, PowerReading(at: Self.t0.addingTimeInterval(161), watts: 150))], rule: Self.group)
        #expect(actions == [.restore(index: 0, watts: 2_000, total: 1_150, at: Self.t0.addingTimeInterval(161))])
        #expect(watch.members[0].shedAt == nil)
    }

    @Test func restoringGoesInReverseOrderOfShedding() {
        var watch = GroupWatch(
            members: [
                .init(code: "a", watts: 0, shedAt: Self.t0, shedWatts: 500),
                .init(code: "b", watts: 0, shedAt: Self.t0.addingTimeInterval(10), shedWatts: 500),
                .init(code: "c", watts: 100),
            ])
        var rule = Self.group
        rule.outlets = ["a", "b", "c"]
        let actions = watch.follow(
            (20...200).map { (2, PowerReading(at: Self.t0.addingTimeInterval(Double($0)), watts: 100)) }, rule: rule)
        #expect(actions.map { if case .restore(let index, _, _, _) = $0 { index } else { -1 } } == [1, 0])
    }
}
