import Automations
import Foundation
import Telemetry
import Testing

/// What a round decides, without a database: which occurrences fire or are missed, what a power rule goes on from
/// and which rows it writes, whom a group limit sheds, and the words each firing records (docs/AUTOMATIONS.md).
@Suite("Round decisions")
struct RoundDecisionTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    static let outlet = AutomationTarget(deviceID: 7, code: "heater", enabled: true, ownerStillOwns: true)

    // MARK: Firings

    @Test(
        "a firing on an outlet that may not be switched is skipped, saying why",
        arguments: [
            (outlet, AutomationResult.fired, AutomationResult.fired, "timer: off"),
            (
                AutomationTarget(deviceID: 7, code: "heater", enabled: false, ownerStillOwns: true), .fired, .skipped,
                "disabled_device: outlet heater is disabled; timer: off"
            ),
            (
                AutomationTarget(deviceID: 7, code: "heater", enabled: true, ownerStillOwns: false), .fired, .skipped,
                "not_owner: the owner who made the rule no longer owns the outlet; timer: off"
            ),
            (AutomationTarget.none, .fired, .skipped, "timer: off"),
            (
                AutomationTarget(deviceID: 7, code: "heater", enabled: false, ownerStillOwns: true), .missed, .missed,
                "timer: off"
            ),
        ] as [(AutomationTarget, AutomationResult, AutomationResult, String)])
    func firingResolution(
        target: AutomationTarget, proposed: AutomationResult, result: AutomationResult, reason: String
    ) {
        let firing = PlannedFiring(
            automationID: 1, kind: .timer, target: target, state: .off, dueAt: Self.t0, cause: "timer: off",
            result: proposed)
        #expect(firing.result == result)
        #expect(firing.reason == reason)
        #expect(firing.cause == "timer: off")
        let outcome = firing.outcome(RecordedFiring(commandID: 9))
        #expect(outcome.result == result && outcome.reason == reason && outcome.code == target.code)
    }

    // MARK: Schedules and timers

    static func due(_ kind: AutomationKind, dueAt: Double, now: Double, days: [Weekday] = Weekday.allCases) -> DueRule {
        DueRule(
            id: 3, kind: kind, state: .off, minute: 23 * 60, days: days, nextDueAt: at(dueAt), target: outlet,
            zone: TimeZone(identifier: "UTC") ?? .gmt, now: at(now))
    }

    @Test(
        "a timer fires on time, fires late within the catch-up, and is missed beyond it",
        arguments: [
            (0.0, 0.5, AutomationResult.fired, "timer: off"),
            (0, 5, .fired, "timer: off (5 s late, caught up at start)"),
            (
                0, 120, .missed,
                "missed: timer: off was due 120 s ago, while no outletd ran (automations.catch_up_seconds: 60)"
            ),
        ] as [(Double, Double, AutomationResult, String)])
    func timer(dueAt: Double, now: Double, result: AutomationResult, reason: String) {
        let (firings, next) = DueRules.firings(of: Self.due(.timer, dueAt: dueAt, now: now), catchUpSeconds: 60)
        #expect(firings.map(\.result) == [result])
        #expect(firings.map(\.reason) == [reason])
        #expect(firings.map(\.dueAt) == [Self.at(dueAt)])
        #expect(next == nil)
    }

    @Test func aScheduleDueSeveralTimesOverRecordsEachAndGoesOnToItsNext() throws {
        // 23:00 UTC daily, due three days and an hour ago: three missed, then the next 23:00 after now.
        let first = try #require(
            ScheduleClock.next(after: Self.t0, minute: 23 * 60, days: Weekday.allCases, in: .gmt))
        let now = first.timeIntervalSince(Self.t0) + 2 * 86_400 + 3_600
        let rule = Self.due(.schedule, dueAt: first.timeIntervalSince(Self.t0), now: now)
        let (firings, next) = DueRules.firings(of: rule, catchUpSeconds: 60)
        #expect(firings.map(\.result) == [.missed, .missed, .missed])
        #expect(firings.map(\.dueAt) == [0, 1, 2].map { first.addingTimeInterval(Double($0) * 86_400) })
        #expect(firings.allSatisfy { $0.reason.hasPrefix("missed: schedule: off at 23:00 daily was due ") })
        #expect(next == first.addingTimeInterval(3 * 86_400))
    }

    @Test func aRoundRecordsAtMostItsShareOfOccurrences() {
        // Every day for two years: the round stops at its bound, and the next round goes on from there.
        let rule = Self.due(.schedule, dueAt: 0, now: 2 * 365 * 86_400)
        let (firings, next) = DueRules.firings(of: rule, catchUpSeconds: 60)
        #expect(firings.count == DueRules.occurrencesPerRound)
        #expect(next.map { $0 < rule.now } == true)
    }

    // MARK: Power rules

    static func powerRow(
        id: Int64 = 1, _ kind: AutomationKind = .overPower, hold: Int = 2, stored: PowerWatch = PowerWatch(),
        newest: Double? = 100, now: Double = 100, reportsOn: Bool = true
    ) -> PowerRuleRow {
        PowerRuleRow(
            id: id, kind: kind, watts: 2_000, holdSeconds: hold, stored: stored, target: outlet, reportsOn: reportsOn,
            newestReading: newest.map(at), now: at(now))
    }

    @Test(
        "a rule goes on from its row, or afresh from its hold plus the slack back",
        arguments: [
            // (seen until, run start, hold; since, run start kept)
            (90.0, 80.0, 2, 90.0, true),  // followed recently: on from where it was
            (30.0, 20.0, 10, 30.0, true),  // 70 s ago, within 10 + 60
            (20.0, 10.0, 10, 30.0, false),  // 80 s ago: not followed for longer than it looks back
            (nil, nil, 5, 35.0, false),  // a new rule
        ] as [(Double?, Double?, Int, Double, Bool)])
    func powerRuleHorizon(seenUntil: Double?, runStart: Double?, hold: Int, since: Double, keepsRun: Bool) {
        let stored = PowerWatch(runStart: runStart.map(Self.at), seenUntil: seenUntil.map(Self.at))
        let rules = PowerRules([Self.powerRow(hold: hold, stored: stored)], memory: PowerWatchMemory())
        #expect(rules.rules[0].since == Self.at(since))
        #expect(rules.rules[0].watch.runStart == (keepsRun ? runStart.map(Self.at) : nil))
    }

    @Test func onlyOutletsWithNewerReadingsAreRead() {
        let rows = [
            Self.powerRow(id: 1, stored: PowerWatch(seenUntil: Self.at(95)), newest: 99),
            Self.powerRow(id: 2, stored: PowerWatch(seenUntil: Self.at(95)), newest: 95),
            Self.powerRow(id: 3, stored: PowerWatch(seenUntil: Self.at(95)), newest: nil),
            Self.powerRow(id: 4, stored: PowerWatch(seenUntil: Self.at(90)), newest: 97),
        ]
        let rules = PowerRules(rows, memory: PowerWatchMemory())
        #expect(rules.needingReadings == [0, 3])
        #expect(rules.readingsUntil(rules.needingReadings) == Self.at(99))
        #expect(rules.readingsUntil([]) == Self.at(100))
    }

    @Test func aRuleThatMetSwitchesItsOutletOffOnceAndSavesItsRow() {
        var rules = PowerRules([Self.powerRow()], memory: PowerWatchMemory())
        let readings = [(95.0, 2_100.0), (96, 2_100), (97, 2_150.04)].map { PowerReading(at: Self.at($0), watts: $1) }
        let firings = rules.follow([readings])
        #expect(firings.count == 1)
        #expect(firings.first?.state == .off)
        #expect(firings.first?.dueAt == Self.at(97))
        #expect(firings.first?.reason == "over-power: 2150 W, at or above 2000 W for 2s (rule: 2s)")
        #expect(rules.toSave.map(\.automationID) == [1])
        #expect(rules.toSave.first?.watch.firedRun == Self.at(95))
        // The same readings again, as the next round would see them if the row was not written: nothing new.
        var again = PowerRules([Self.powerRow(stored: rules.toSave[0].watch)], memory: rules.memory)
        #expect(again.follow([readings]).isEmpty)
    }

    @Test func anIdleRuleSaysSoAndWaitsWhileTheOutletReportsItselfOff() {
        let readings = [(95.0, 1.0), (98, 1.0)].map { PowerReading(at: Self.at($0), watts: $1) }
        var off = PowerRules([Self.powerRow(.idle, reportsOn: false)], memory: PowerWatchMemory())
        #expect(off.follow([readings]).isEmpty)
        var on = PowerRules([Self.powerRow(.idle)], memory: PowerWatchMemory())
        #expect(
            on.follow([readings]).map(\.reason) == ["idle: 1 W, at or below 2000 W while on for 3s (rule: 2s)"])
    }

    @Test(
        "a row is written when a run starts or ends, and otherwise at most every few seconds",
        arguments: [
            // (readings, seconds since the row was written; written)
            ([(99.0, 2_100.0)], 0.0, true),  // a run starts
            ([(99.0, 100.0)], 0.0, false),  // nothing met, only seen until moves
            ([(99.0, 100.0)], PowerRules.persistSeconds, true),  // …but not for longer than that
        ] as [([(Double, Double)], Double, Bool)])
    func rowWrites(pairs: [(Double, Double)], age: Double, written: Bool) {
        let stored = PowerWatch(seenUntil: Self.at(90))
        let readings = pairs.map { PowerReading(at: Self.at($0), watts: $1) }
        // Memory that says this runner wrote the row `age` seconds ago.
        var first = PowerRules([Self.powerRow(stored: stored, now: 100 - age)], memory: PowerWatchMemory())
        _ = first.follow([[]])
        var rules = PowerRules([Self.powerRow(stored: stored)], memory: first.memory)
        _ = rules.follow([readings])
        #expect(rules.toSave.isEmpty == !written)
        #expect(rules.memory.automationIDs == [1])
    }

    @Test func anotherRunnersWriteWinsOverWhatThisOneRemembers() {
        // This runner followed a reading that changed nothing worth a write: it remembers where the rule is.
        let stored = PowerWatch(seenUntil: Self.at(90))
        var first = PowerRules([Self.powerRow(stored: stored)], memory: PowerWatchMemory())
        _ = first.follow([[PowerReading(at: Self.at(99), watts: 100)]])
        #expect(first.toSave.isEmpty)
        // Unchanged row: this runner's memory goes on.
        let same = PowerRules([Self.powerRow(stored: stored)], memory: first.memory)
        #expect(same.rules[0].watch.seenUntil == Self.at(99))
        #expect(same.rules[0].since == Self.at(99))
        // Another runner wrote the row since: its state is taken, not this runner's memory.
        let theirs = PowerWatch(runStart: Self.at(97), seenUntil: Self.at(98))
        let rules = PowerRules([Self.powerRow(stored: theirs)], memory: first.memory)
        #expect(rules.rules[0].watch == theirs)
        // No rules: nothing remembered.
        #expect(PowerRules([], memory: first.memory).memory.automationIDs.isEmpty)
    }

    // MARK: Group limits

    static func groupRow(seenUntil: Double? = 95, restore: AutomationRule.Restore? = nil) -> GroupLimitRow {
        GroupLimitRow(
            id: 5, name: "kitchen", watts: 3_500, holdSeconds: 5, restore: restore,
            stored: GroupWatch(members: [], seenUntil: seenUntil.map(at)), now: at(100))
    }

    static func member(
        _ code: String, _ watts: Double?, enabled: Bool = true, shedAt: Double? = nil, shedWatts: Double? = nil
    )
        -> GroupMemberRow
    {
        GroupMemberRow(
            deviceID: Int64(code.unicodeScalars.first?.value ?? 0), enabled: enabled,
            member: .init(code: code, watts: watts, shedAt: shedAt.map(at), shedWatts: shedWatts))
    }

    @Test(
        "a group goes on from its row, or afresh from its longest wait plus the slack back",
        arguments: [
            (95.0, nil, 95.0),
            (10.0, nil, 35.0),  // 5 s hold + 60 s slack
            (10.0, AutomationRule.Restore(marginWatts: 100, afterSeconds: 30), 10.0),  // 30 s + 60 s
            (nil, AutomationRule.Restore(marginWatts: 100, afterSeconds: 30), 10.0),
        ] as [(Double?, AutomationRule.Restore?, Double)])
    func groupHorizon(seenUntil: Double?, restore: AutomationRule.Restore?, since: Double) {
        #expect(GroupLimits(Self.groupRow(seenUntil: seenUntil, restore: restore)).since == Self.at(since))
    }

    @Test func aGroupShedsTheLeastImportantDrawingPowerSayingWhy() {
        var group = GroupLimits(Self.groupRow())
        let members = [Self.member("kettle", 0), Self.member("oven", 2_000, enabled: false), Self.member("fan", 1_000)]
        let readings = [(96.0, 2, 1_600.0), (97, 2, 1_600), (102, 2, 1_650)].map {
            (member: Int($1), reading: PowerReading(at: Self.at($0), watts: $2))
        }
        let firings = group.follow(members: members, readings: readings)
        #expect(firings.map(\.target.code) == ["oven"])
        #expect(firings.map(\.state) == [.off])
        // The oven is disabled: skipped, and the cause kept after the reason.
        #expect(firings.map(\.result) == [.skipped])
        #expect(
            firings.map(\.reason) == [
                "disabled_device: outlet oven is disabled; group-limit kitchen: 3650 W above 3500 W for 5s; shed "
                    + "oven (the least important drawing power: 2000 W)"
            ])
        #expect(group.watch.members[1].shedAt == Self.at(102))
    }

    @Test func aGroupWithNothingLeftToShedSaysSoOnceWithNoOutlet() {
        var group = GroupLimits(Self.groupRow())
        let members = [Self.member("kettle", 0, shedAt: 50, shedWatts: 2_000), Self.member("oven", 0)]
        let readings = [(96.0, 0, 4_000.0), (102, 0, 4_000), (103, 0, 4_000)].map {
            (member: Int($1), reading: PowerReading(at: Self.at($0), watts: $2))
        }
        let firings = group.follow(members: members, readings: readings)
        #expect(firings.map(\.result) == [.skipped])
        #expect(firings.map(\.target) == [.none])
        #expect(
            firings.map(\.reason) == [
                "nothing_to_shed: group-limit kitchen: 4000 W above 3500 W for 5s, and every outlet is shed or draws "
                    + "nothing"
            ])
    }

    @Test func aShedOutletComesBackWhenThereIsRoom() {
        var group = GroupLimits(Self.groupRow(restore: .init(marginWatts: 300, afterSeconds: 2)))
        let members = [Self.member("kettle", 0, shedAt: 50, shedWatts: 2_000), Self.member("fan", 1_000)]
        let readings = [(96.0, 1, 1_000.0), (98, 1, 1_000)].map {
            (member: Int($1), reading: PowerReading(at: Self.at($0), watts: $2))
        }
        let firings = group.follow(members: members, readings: readings)
        #expect(firings.map(\.state) == [.on])
        #expect(firings.map(\.result) == [.fired])
        #expect(
            firings.map(\.reason) == [
                "group-limit kitchen: 1000 W plus the 2000 W it drew stayed below 3200 W for 2s; restore kettle"
            ])
        #expect(group.watch.members[0].shedAt == nil)
    }
}
