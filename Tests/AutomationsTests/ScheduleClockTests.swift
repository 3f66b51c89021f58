import Automations
import Foundation
import Telemetry
import Testing

/// Schedules across daylight-saving changes, with the clock and the zone injected (docs/AUTOMATIONS.md, "Schedules
/// and the clock").
@Suite("ScheduleClock")
struct ScheduleClockTests {
    static func instant(_ text: String) -> Date { RFC3339.date(from: text) ?? .distantPast }

    @Test(
        "a local time fires at its instant, the first of two, or when the clocks jump over it",
        arguments: [
            // America/Sao_Paulo's last DST start: 2018-11-04 00:00 -03 became 01:00 -02.
            ("America/Sao_Paulo", "2018-11-03T12:00:00Z", "00:30", "2018-11-04T03:00:00Z"),  // missing: the jump
            ("America/Sao_Paulo", "2018-11-03T12:00:00Z", "00:00", "2018-11-04T03:00:00Z"),  // missing: the jump
            ("America/Sao_Paulo", "2018-11-04T00:00:00Z", "01:30", "2018-11-04T03:30:00Z"),  // after the jump
            ("America/Sao_Paulo", "2018-11-04T12:00:00Z", "23:00", "2018-11-05T01:00:00Z"),  // -02 that evening
            // Its last DST end: 2019-02-17 00:00 -02 went back to 2019-02-16 23:00 -03; 23:30 happened twice.
            ("America/Sao_Paulo", "2019-02-16T12:00:00Z", "23:30", "2019-02-17T01:30:00Z"),  // the first 23:30
            ("America/Sao_Paulo", "2019-02-17T01:30:00Z", "23:30", "2019-02-18T02:30:00Z"),  // not the second
            ("America/Sao_Paulo", "2019-02-16T12:00:00Z", "22:59", "2019-02-17T00:59:00Z"),
            // Europe/Berlin 2026: 02:00 CET became 03:00 CEST on 29 March; 03:00 CEST went back to 02:00 CET on
            // 25 October.
            ("Europe/Berlin", "2026-03-28T12:00:00Z", "02:30", "2026-03-29T01:00:00Z"),  // missing: 03:00 CEST
            ("Europe/Berlin", "2026-03-29T01:00:00Z", "02:30", "2026-03-30T00:30:00Z"),
            ("Europe/Berlin", "2026-03-28T12:00:00Z", "03:00", "2026-03-29T01:00:00Z"),
            ("Europe/Berlin", "2026-03-28T12:00:00Z", "01:59", "2026-03-29T00:59:00Z"),
            ("Europe/Berlin", "2026-10-24T12:00:00Z", "02:30", "2026-10-25T00:30:00Z"),  // the first 02:30 (CEST)
            ("Europe/Berlin", "2026-10-25T00:30:00Z", "02:30", "2026-10-26T01:30:00Z"),  // next day, CET
            ("Europe/Berlin", "2026-10-24T12:00:00Z", "03:00", "2026-10-25T02:00:00Z"),
            // Zones without DST, and a time already past today waits for tomorrow.
            ("UTC", "2026-11-27T10:00:00Z", "09:00", "2026-11-28T09:00:00Z"),
            ("UTC", "2026-11-27T08:59:59Z", "09:00", "2026-11-27T09:00:00Z"),
            ("America/Sao_Paulo", "2026-11-27T13:00:00Z", "10:00", "2026-11-28T13:00:00Z"),
            ("Asia/Kolkata", "2026-11-27T00:00:00Z", "06:00", "2026-11-27T00:30:00Z"),
        ] as [(String, String, String, String)])
    func dailyFirings(zone: String, after: String, at: String, expected: String) throws {
        let timeZone = try #require(TimeZone(identifier: zone))
        let minute = try #require(Tariff.minutes(at, allowsEndOfDay: false))
        let next = ScheduleClock.next(
            after: Self.instant(after), minute: minute, days: Weekday.allCases, in: timeZone)
        #expect(next == Self.instant(expected), "\(zone) \(at) after \(after)")
    }

    @Test func weekdaysAreTheLocalDatesAndTheWeekWraps() throws {
        let saoPaulo = try #require(TimeZone(identifier: "America/Sao_Paulo"))
        let weekdays = try #require(Weekday.parseList("mon-fri"))
        // Friday 2026-11-27 23:30 -03 (Saturday 02:30 UTC): the next weekday 23:00 is Monday's.
        #expect(
            ScheduleClock.next(
                after: Self.instant("2026-11-28T02:30:00Z"), minute: 23 * 60, days: weekdays, in: saoPaulo)
                == Self.instant("2026-12-01T02:00:00Z"))
        // Friday 22:00 -03 is Saturday 01:00 UTC, yet Friday's 23:00 is still to come.
        #expect(
            ScheduleClock.next(
                after: Self.instant("2026-11-28T01:00:00Z"), minute: 23 * 60, days: weekdays, in: saoPaulo)
                == Self.instant("2026-11-28T02:00:00Z"))
        let sunday = try #require(Weekday.parseList("sun"))
        #expect(
            ScheduleClock.next(after: Self.instant("2026-11-30T00:00:00Z"), minute: 0, days: sunday, in: .gmt)
                == Self.instant("2026-12-06T00:00:00Z"))
        #expect(ScheduleClock.next(after: Date(), minute: 0, days: [], in: .gmt) == nil)
    }

    @Test func aYearOfDailyFiringsInBerlinIsOnePerLocalDate() throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        var instant = Self.instant("2026-01-01T00:00:00Z")
        var dates: [ScheduleClock.LocalDate] = []
        for _ in 0..<365 {
            instant = try #require(ScheduleClock.next(after: instant, minute: 150, days: Weekday.allCases, in: berlin))
            dates.append(ScheduleClock.localDate(of: instant, in: berlin))
        }
        #expect(Set(dates.map(\.daysSince1970)).count == 365)
        #expect(zip(dates, dates.dropFirst()).allSatisfy { $1.daysSince1970 == $0.daysSince1970 + 1 })
    }

    @Test(
        "civil dates and their weekdays",
        arguments: [
            (0, 1970, 1, 1, Weekday.thu), (-1, 1969, 12, 31, .wed), (20_784, 2026, 11, 27, .fri),
            (17_839, 2018, 11, 4, .sun), (11_016, 2000, 2, 29, .tue),
        ] as [(Int, Int, Int, Int, Weekday)])
    func civilDates(days: Int, year: Int, month: Int, day: Int, weekday: Weekday) {
        let date = ScheduleClock.LocalDate(daysSince1970: days)
        #expect(date == ScheduleClock.LocalDate(year: year, month: month, day: day))
        #expect(date.daysSince1970 == days)
        #expect(date.weekday == weekday)
    }
}

@Suite("Automation input")
struct AutomationInputTests {
    @Test(
        "days as people type them",
        arguments: [
            ("mon-fri", "mon,tue,wed,thu,fri"), ("sat", "sat"), ("sat,sun", "sat,sun"), ("SAT, Sun", "sat,sun"),
            ("fri-mon", "mon,fri,sat,sun"), ("mon-wed,fri", "mon,tue,wed,fri"),
            ("daily", "mon,tue,wed,thu,fri,sat,sun"),
            ("monday", "mon"), ("sun-sun", "sun"), ("mon,mon", "mon"),
            ("", nil), ("funday", nil), ("mon-", nil), ("mo", nil), ("mon-tue-wed", nil), ("mond", nil), (",", nil),
        ] as [(String, String?)])
    func days(text: String, expected: String?) {
        #expect(Weekday.parseList(text)?.map(\.rawValue).joined(separator: ",") == expected)
    }

    @Test(
        "days described as they read back",
        arguments: [("mon-fri", "mon-fri"), ("sat,sun", "sat,sun"), ("mon,wed-fri", "mon,wed-fri"), ("daily", "daily")])
    func describeDays(text: String, expected: String) throws {
        let days = try #require(Weekday.parseList(text))
        #expect(Weekday.describe(days) == expected)
        #expect(Weekday.parseList(Weekday.describe(days)) == days)
    }

    @Test(
        "durations with s, m and h",
        arguments: [
            ("20s", 20), ("10m", 600), ("2h", 7_200), ("1h30m", 5_400), ("90S", 90), ("1d", 86_400),
            ("-1s", nil), ("0s", nil), ("10", nil), ("s", nil), ("1.5h", nil), ("", nil), ("10x", nil),
            ("9999999999h", nil), ("２s", nil),
        ] as [(String, Int?)])
    func durations(text: String, expected: Int?) {
        #expect(AutomationDuration.parse(text) == expected)
        if let expected { #expect(AutomationDuration.parse(AutomationDuration.format(expected)) == expected) }
    }

    @Test func rulesOutsideTheirBoundsSayWhy() {
        let now = Date()
        #expect(AutomationRule.schedule(state: .off, minute: 1_440, days: [.mon]).problem(now: now) != nil)
        #expect(AutomationRule.schedule(state: .off, minute: 0, days: []).problem(now: now) != nil)
        #expect(AutomationRule.timer(state: .off, at: now.addingTimeInterval(-1)).problem(now: now) != nil)
        #expect(AutomationRule.timer(state: .off, at: now.addingTimeInterval(40_000_000)).problem(now: now) != nil)
        #expect(AutomationRule.overPower(watts: 0, holdSeconds: 10).problem(now: now) != nil)
        #expect(AutomationRule.overPower(watts: .nan, holdSeconds: 10).problem(now: now) != nil)
        #expect(AutomationRule.overPower(watts: 2_000, holdSeconds: 0).problem(now: now) != nil)
        #expect(AutomationRule.idle(watts: -1, holdSeconds: 10).problem(now: now) != nil)
        #expect(AutomationRule.idle(watts: 5, holdSeconds: 1_800).problem(now: now) == nil)
        let group = AutomationRule.GroupLimit(
            name: "kitchen", watts: 3_500, holdSeconds: 5, outlets: ["a", "b"],
            restore: .init(marginWatts: 300, afterSeconds: 600))
        #expect(AutomationRule.groupLimit(group).problem(now: now) == nil)
        var twice = group
        twice.outlets = ["a", "a"]
        #expect(AutomationRule.groupLimit(twice).problem(now: now) != nil)
        var badCode = group
        badCode.outlets = ["a/b"]
        #expect(AutomationRule.groupLimit(badCode).problem(now: now) != nil)
        var wideMargin = group
        wideMargin.restore = .init(marginWatts: 3_500, afterSeconds: 600)
        #expect(AutomationRule.groupLimit(wideMargin).problem(now: now) != nil)
    }
}
