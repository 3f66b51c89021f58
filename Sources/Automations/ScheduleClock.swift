import Foundation
import Telemetry

/// When a schedule fires: a local time on given weekdays, in a time zone, across daylight-saving changes.
///
/// The rule (docs/AUTOMATIONS.md, "Schedules and the clock"):
/// - a local time that happens once that day fires at that instant;
/// - a local time that happens twice (clocks go back) fires once, at its first occurrence;
/// - a local time that does not happen (clocks go forward over it) fires at the first minute after the gap, the
///   instant the clocks jump (Berlin's 02:30 on the last Sunday of March fires at 03:00 CEST);
/// - the weekday is the local date's, and a schedule fires at most once per local date.
///
/// Pure: the zone is a parameter and "now" an argument, so tests inject both.
public enum ScheduleClock {
    /// A day of the proleptic Gregorian calendar.
    public struct LocalDate: Sendable, Equatable, Comparable, CustomStringConvertible {
        public var year: Int
        public var month: Int
        public var day: Int

        public init(year: Int, month: Int, day: Int) {
            self.year = year
            self.month = month
            self.day = day
        }

        /// Days since 1970-01-01.
        public var daysSince1970: Int { RFC3339.daysSince1970(year: year, month: month, day: day) }

        /// The date `days` days after 1970-01-01 (Howard Hinnant's civil_from_days).
        public init(daysSince1970 days: Int) {
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let monthPrime = (5 * dayOfYear + 2) / 153
            day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
            month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
            year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        }

        /// 1970-01-01 was a Thursday.
        public var weekday: Weekday {
            Weekday.allCases[((daysSince1970 % 7 + 7) % 7 + 3) % 7]
        }

        public func adding(days: Int) -> LocalDate { LocalDate(daysSince1970: daysSince1970 + days) }

        public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool { lhs.daysSince1970 < rhs.daysSince1970 }

        public var description: String {
            String(format: "%04d-%02d-%02d", year, month, day)
        }
    }

    /// The local date of `instant` in `zone`.
    public static func localDate(of instant: Date, in zone: TimeZone) -> LocalDate {
        let local = Int((instant.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: instant))).rounded(.down))
        return LocalDate(daysSince1970: Int((Double(local) / 86_400).rounded(.down)))
    }

    /// The instant a schedule at `minute` (after local midnight) fires on local date `date` in `zone`: the first
    /// occurrence of that local time, or, when the clocks skip it, the instant they jump.
    public static func instant(on date: LocalDate, minute: Int, in zone: TimeZone) -> Date {
        let wall = Double(date.daysSince1970 * 86_400 + minute * 60)
        let offsets = Set(
            [-86_400.0, 86_400.0].map { zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall + $0)) })
        let valid = offsets.compactMap { offset -> Double? in
            let candidate = wall - Double(offset)
            return zone.secondsFromGMT(for: Date(timeIntervalSince1970: candidate)) == offset ? candidate : nil
        }
        if let first = valid.min() { return Date(timeIntervalSince1970: first) }
        // In the gap: the jump lies between the wall time read with the later offset and with the earlier one.
        let later = Double(offsets.max() ?? 0)
        var low = wall - later  // still before the jump
        var high = wall - Double(offsets.min() ?? 0)  // already after it
        let before = zone.secondsFromGMT(for: Date(timeIntervalSince1970: low))
        while high - low > 1 {
            let middle = ((low + high) / 2).rounded(.down)
            if zone.secondsFromGMT(for: Date(timeIntervalSince1970: middle)) == before {
                low = middle
            } else {
                high = middle
            }
        }
        return Date(timeIntervalSince1970: high)
    }

    /// The first firing strictly after `instant` of a schedule at `minute` on `days` in `zone`; nil only when
    /// `days` is empty.
    public static func next(after instant: Date, minute: Int, days: [Weekday], in zone: TimeZone) -> Date? {
        guard !days.isEmpty else { return nil }
        let start = localDate(of: instant, in: zone)
        // A day of the week comes back within 7 days; the 8th covers today's time having passed.
        for offset in 0...7 {
            let date = start.adding(days: offset)
            guard days.contains(date.weekday) else { continue }
            let firing = Self.instant(on: date, minute: minute, in: zone)
            if firing > instant { return firing }
        }
        return nil
    }
}
