import Foundation

/// A fast, locale-free parser for RFC 3339 / ISO 8601 date-times such as `2024-05-01T12:30:00.123456Z`.
///
/// Accepted: `YYYY-MM-DD`, then `T`, `t` or a space, then `hh:mm:ss` (second 60 is accepted as a leap second and
/// lands on the next minute), an optional fraction of any number of digits (kept to the nanosecond), and an offset
/// `Z`, `z`, `+hh:mm` or `-hh:mm` (`-00:00` is read as UTC). Dates are checked (2023-02-29 is refused). Calendar
/// arithmetic is done here (days-from-civil, proleptic Gregorian), not with `DateFormatter`.
public enum RFC3339 {
    /// A parsed date-time, before the UTC offset is applied.
    public struct DateTime: Sendable, Equatable {
        /// The wall-clock date and time read as if it were UTC, in whole seconds since 1970-01-01T00:00:00.
        public var wallClockSecondsSince1970: Int64
        /// The fraction of the second, 0…999 999 999 ns (digits beyond the ninth are dropped).
        public var nanoseconds: Int
        /// The UTC offset in seconds (east positive), or `nil` when the text had none (device local time).
        public var utcOffsetSeconds: Int?

        /// Creates a date-time.
        public init(wallClockSecondsSince1970: Int64, nanoseconds: Int, utcOffsetSeconds: Int?) {
            self.wallClockSecondsSince1970 = wallClockSecondsSince1970
            self.nanoseconds = nanoseconds
            self.utcOffsetSeconds = utcOffsetSeconds
        }

        /// The instant, when the text carried an offset; `nil` for local time without offset.
        public var date: Date? {
            guard let utcOffsetSeconds else { return nil }
            return date(assumingUTCOffsetSeconds: utcOffsetSeconds)
        }

        /// Whole microseconds since 1970-01-01T00:00:00Z (fraction rounded half up), using the text's offset or,
        /// when it had none, `fallbackOffsetSeconds`.
        public func microsecondsSince1970(assumingUTCOffsetSeconds fallbackOffsetSeconds: Int) -> Int64 {
            // Saturating arithmetic: a hand-built DateTime with absurd fields must not trap.
            let offset = Int64(utcOffsetSeconds ?? fallbackOffsetSeconds)
            let seconds = wallClockSecondsSince1970.subtractingReportingOverflow(offset)
            let microseconds = seconds.partialValue.multipliedReportingOverflow(by: 1_000_000)
            let fraction = Int64(min(max(nanoseconds, 0), 999_999_999) + 500) / 1_000
            guard !seconds.overflow, !microseconds.overflow else {
                return (wallClockSecondsSince1970 < 0) ? Int64.min : Int64.max
            }
            let total = microseconds.partialValue.addingReportingOverflow(fraction)
            return total.overflow ? Int64.max : total.partialValue
        }

        /// The instant, rounded to whole microseconds, using the text's offset or, when it had none,
        /// `fallbackOffsetSeconds` (e.g. the device's configured zone).
        public func date(assumingUTCOffsetSeconds fallbackOffsetSeconds: Int) -> Date {
            Date(microsecondsSince1970: microsecondsSince1970(assumingUTCOffsetSeconds: fallbackOffsetSeconds))
        }
    }

    /// The instant written in `text`, rounded to whole microseconds; `nil` when the text is not a complete RFC 3339
    /// date-time **with** a UTC offset.
    public static func date(from text: some StringProtocol) -> Date? {
        parse(text)?.date
    }

    /// Parses `text` (the whole of it) as a date-time whose offset may be missing; `nil` when it is malformed.
    public static func parse(_ text: some StringProtocol) -> DateTime? {
        var text = Substring(text)
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days-from-civil); exact for any year.
    public static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Whether `year` is a Gregorian leap year.
    public static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    /// A calendar date written `YYYY-MM-DD` (four-digit year 1…9999, a real day of its month) as its parts, or nil.
    /// Callers narrow the years they accept themselves.
    public static func calendarDate(_ text: some StringProtocol) -> (year: Int, month: Int, day: Int)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].utf8.count == 4, parts[1].utf8.count == 2,
            parts[2].utf8.count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...9_999).contains(year), (1...12).contains(month),
            (1...daysInMonth(year: year, month: month)).contains(day)
        else { return nil }
        return (year, month, day)
    }

    /// The number of days in `month` (1…12) of `year`.
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> DateTime? {
        var cursor = 0

        func digits(_ count: Int) -> Int? {
            guard bytes.count - cursor >= count else { return nil }
            var value = 0
            for _ in 0..<count {
                let digit = bytes[cursor] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
                cursor += 1
            }
            return value
        }
        func expect(_ byte: UInt8) -> Bool {
            guard cursor < bytes.count, bytes[cursor] == byte else { return false }
            cursor += 1
            return true
        }

        guard let year = digits(4), expect(UInt8(ascii: "-")),
            let month = digits(2), expect(UInt8(ascii: "-")),
            let day = digits(2), (1...12).contains(month), (1...daysInMonth(year: year, month: month)).contains(day),
            cursor < bytes.count
        else { return nil }
        switch bytes[cursor] {
        case UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " "): cursor += 1
        default: return nil
        }
        guard let hour = digits(2), expect(UInt8(ascii: ":")),
            let minute = digits(2), expect(UInt8(ascii: ":")),
            let second = digits(2), hour < 24, minute < 60, second <= 60
        else { return nil }

        var nanoseconds = 0
        if expect(UInt8(ascii: ".")) {
            var fractionDigits = 0
            while cursor < bytes.count, case let digit = bytes[cursor] &- UInt8(ascii: "0"), digit < 10 {
                if fractionDigits < 9 {
                    nanoseconds = nanoseconds * 10 + Int(digit)
                }
                fractionDigits += 1
                cursor += 1
            }
            guard fractionDigits > 0 else { return nil }
            for _ in fractionDigits..<max(fractionDigits, 9) {
                nanoseconds *= 10
            }
        }

        var utcOffsetSeconds: Int?
        if cursor < bytes.count {
            switch bytes[cursor] {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"):
                cursor += 1
                utcOffsetSeconds = 0
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign = bytes[cursor] == UInt8(ascii: "-") ? -1 : 1
                cursor += 1
                guard let offsetHours = digits(2), expect(UInt8(ascii: ":")), let offsetMinutes = digits(2),
                    offsetHours < 24, offsetMinutes < 60
                else { return nil }
                utcOffsetSeconds = sign * (offsetHours * 3_600 + offsetMinutes * 60)
            default:
                return nil
            }
        }
        guard cursor == bytes.count else { return nil }

        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3_600 + minute * 60 + second)
        return DateTime(
            wallClockSecondsSince1970: seconds, nanoseconds: nanoseconds,
            utcOffsetSeconds: utcOffsetSeconds)
    }
}
