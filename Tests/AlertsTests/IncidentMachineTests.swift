import Alerts
import Foundation
import Testing

/// The incident state machine: opens once the condition held for the hold time, resolves once it stayed clear for
/// `resolve_after`; a condition back within that time is the same incident.
@Suite struct IncidentMachineTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Looks at a condition every `step` seconds through `pattern` (true: met), with a store that gives each opened
    /// incident the next id; returns the actions taken, with their times (seconds from the start).
    static func run(
        _ pattern: [Bool], step: Double = 10, hold: Int = 0, resolveAfter: Int = 120,
        since: (Int) -> Date? = { _ in nil }
    ) -> [String] {
        var watch: AlertWatch?
        var nextID: Int64 = 1
        var log: [String] = []
        for (index, met) in pattern.enumerated() {
            let now = start.addingTimeInterval(Double(index) * step)
            let result = IncidentMachine.step(
                watch, met: met, since: since(index), now: now, holdSeconds: hold, resolveAfterSeconds: resolveAfter)
            watch = result.watch
            switch result.action {
            case .none: break
            case .open(let since):
                watch?.incidentID = nextID
                log.append(
                    "open#\(nextID)@\(Int(now.timeIntervalSince(start)))s since \(Int(since.timeIntervalSince(start)))")
                nextID += 1
            case .resolve(let id, let clearSince):
                log.append(
                    "resolve#\(id)@\(Int(now.timeIntervalSince(start)))s clear since \(Int(clearSince.timeIntervalSince(start)))"
                )
            }
        }
        return log
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var pattern: [Bool]
        var hold = 0
        var resolveAfter = 120
        var expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "quiet stays quiet", pattern: Array(repeating: false, count: 30), expected: []),
        Case(
            name: "met then clear for long enough: one incident, resolved after resolve_after",
            pattern: [false, true, true] + Array(repeating: false, count: 15),
            expected: ["open#1@10s since 10", "resolve#1@150s clear since 30"]),
        Case(
            name: "flapping every 20 s for ten minutes is one incident",
            pattern: (0..<60).map { ($0 / 2) % 2 == 1 } + Array(repeating: false, count: 14),
            expected: ["open#1@20s since 20", "resolve#1@720s clear since 600"]),
        Case(
            name: "back after resolve_after is a second incident",
            pattern: [true] + Array(repeating: false, count: 13) + [true] + Array(repeating: false, count: 13),
            expected: [
                "open#1@0s since 0", "resolve#1@130s clear since 10", "open#2@140s since 140",
                "resolve#2@270s clear since 150",
            ]),
        Case(
            name: "hold: a condition shorter than the hold opens nothing",
            pattern: [true, true, true, false, true, true, false], hold: 60, expected: []),
        Case(
            name: "hold: open once held for the hold time",
            pattern: Array(repeating: true, count: 8) + [false, false], hold: 60, resolveAfter: 0,
            expected: ["open#1@60s since 0", "resolve#1@80s clear since 80"]),
        Case(
            name: "resolve_after 0 resolves at the first clear look",
            pattern: [true, false, true, false], resolveAfter: 0,
            expected: [
                "open#1@0s since 0", "resolve#1@10s clear since 10", "open#2@20s since 20",
                "resolve#2@30s clear since 30",
            ]),
    ]

    @Test(arguments: cases) func steps(_ test: Case) {
        #expect(Self.run(test.pattern, hold: test.hold, resolveAfter: test.resolveAfter) == test.expected)
    }

    @Test func theDataSaysWhenTheConditionBegan() {
        // on-too-long whose outlet was switched on 50 minutes before the first look, with a one-hour hold.
        let log = Self.run(
            Array(repeating: true, count: 70), step: 10, hold: 3_600, resolveAfter: 60,
            since: { _ in Self.start.addingTimeInterval(-3_000) })
        #expect(log == ["open#1@600s since -3000"])
    }

    @Test func anOpenIncidentStaysOpenWhileMet() {
        let watch = AlertWatch(metSince: Self.start, incidentID: 7)
        let result = IncidentMachine.step(
            watch, met: true, now: Self.start.addingTimeInterval(10_000), holdSeconds: 0, resolveAfterSeconds: 0)
        #expect(result.action == .none)
        #expect(result.watch == watch)
    }

    @Test func aRoundLeavesOutWhatDidNotChange() throws {
        let rule = try AlertRule.validated(kind: .offline, parameters: .init())
        let now = Self.start
        let open = AlertWatch(metSince: now.addingTimeInterval(-100), incidentID: 3)
        let observations = [
            AlertObservation(subject: .init(ruleID: 1, deviceID: 1), rule: rule, met: true, watch: open),
            AlertObservation(subject: .init(ruleID: 1, deviceID: 2), rule: rule, met: true),
            AlertObservation(subject: .init(ruleID: 1, deviceID: 3), rule: rule, met: false, watch: open),
        ]
        let decisions = AlertRound.decide(observations, now: now)
        #expect(decisions.map(\.observation.subject.deviceID) == [2, 3])
        #expect(decisions.map(\.action) == [.open(since: now), .none])
        #expect(decisions[1].watch?.clearSince == now)
    }
}
