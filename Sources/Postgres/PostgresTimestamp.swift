import Foundation

/// Fast conversion between `Date` and PostgreSQL's `timestamptz` text, without `DateFormatter`.
///
/// Precision is one microsecond, PostgreSQL's own: formatting rounds to the nearest microsecond. A `Date` holds
/// microseconds exactly only from about 1865 to 2137; outside that its `Double` is coarser and the nearest
/// microsecond is used.
public enum PostgresTimestamp {
    private static let microsecondsPerSecond: Int64 = 1_000_000
    private static let microsecondsPerDay: Int64 = 86_400 * microsecondsPerSecond
    /// 2001-01-01 00:00:00 UTC, `Date`'s reference date, in seconds since 1970.
    private static let referenceDateSince1970: Int64 = 978_307_200
    /// Beyond about ±290,000 years microseconds overflow `Int64`; PostgreSQL's range ends before that anyway.
    private static let largestSeconds: Double = 9_000_000_000_000

    /// `YYYY-MM-DD HH:MM:SS.ffffff+00` in UTC, e.g. `2024-01-02 03:04:05.123456+00`; years before 1 get PostgreSQL's
    /// ` BC` suffix, years after 9999 more digits. Dates too far out for PostgreSQL (and NaN) become `infinity` /
    /// `-infinity`.
    public static func text(for date: Date) -> String {
        // `Date` stores seconds since 2001 as a `Double`; splitting that into whole seconds and a fraction before
        // scaling avoids adding rounding errors of its own, so microseconds survive exactly from about 1865 to
        // 2137 (farther out the `Double` itself is coarser than a microsecond).
        let sinceReference = date.timeIntervalSinceReferenceDate
        guard sinceReference.isFinite, abs(sinceReference) < largestSeconds else {
            return sinceReference < 0 ? "-infinity" : "infinity"
        }
        let wholeSeconds = sinceReference.rounded(.down)
        let fractionMicroseconds = Int64(((sinceReference - wholeSeconds) * 1_000_000).rounded())
        let totalMicroseconds =
            (Int64(wholeSeconds) + referenceDateSince1970) * microsecondsPerSecond + fractionMicroseconds
        let (days, microsecondOfDay) = floorDivide(totalMicroseconds, microsecondsPerDay)
        let (year, month, day) = civilDate(fromDaysSince1970: days)
        let secondOfDay = microsecondOfDay / microsecondsPerSecond
        let fraction = microsecondOfDay % microsecondsPerSecond

        var text: [UInt8] = []
        text.reserveCapacity(32)
        let isBeforeCommonEra = year <= 0
        append(isBeforeCommonEra ? 1 - year : year, digits: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        append(month, digits: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        append(day, digits: 2, to: &text)
        text.append(UInt8(ascii: " "))
        append(secondOfDay / 3600, digits: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        append(secondOfDay / 60 % 60, digits: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        append(secondOfDay % 60, digits: 2, to: &text)
        text.append(UInt8(ascii: "."))
        append(fraction, digits: 6, to: &text)
        text.append(contentsOf: "+00".utf8)
        if isBeforeCommonEra {
            text.append(contentsOf: " BC".utf8)
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses PostgreSQL's ISO output of `timestamptz` (and `timestamp`, `date`), or `nil` when `text` is not one.
    ///
    /// Accepted: `YYYY-MM-DD[( |T)HH:MM:SS[.f…]][Z|(+|-)HH[:MM[:SS]]][ BC]`, a year of four or more digits,
    /// 1 to 6 fractional digits (more are cut to microseconds). Without an offset (`timestamp`, `date`) the value is
    /// taken as UTC. `infinity` is `Date.distantFuture`, `-infinity` is `Date.distantPast`.
    public static func date(from text: String) -> Date? {
        switch text {
        case "infinity": return .distantFuture
        case "-infinity": return .distantPast
        default: break
        }
        var scanner = Scanner(Array(text.utf8))
        guard var year = scanner.number(minDigits: 4, maxDigits: 9), scanner.skip("-"),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip("-"),
            let day = scanner.number(minDigits: 2, maxDigits: 2),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }

        var secondOfDay: Int64 = 0
        var fraction: Int64 = 0
        var offsetSeconds: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
                let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
                let second = scanner.number(minDigits: 2, maxDigits: 2),
                hour <= 24, minute <= 59, second <= 60
            else { return nil }
            secondOfDay = hour * 3600 + minute * 60 + second
            if scanner.skip(".") {
                var digits = 0
                while let digit = scanner.digit() {
                    if digits < 6 {
                        fraction = fraction * 10 + digit
                    }
                    digits += 1
                }
                guard digits > 0 else { return nil }
                for _ in digits..<max(digits, 6) {
                    fraction *= 10
                }
            }
            if scanner.skip("Z") {
                offsetSeconds = 0
            } else if let sign = scanner.sign() {
                guard let offsetHours = scanner.number(minDigits: 2, maxDigits: 2), offsetHours <= 15 else {
                    return nil
                }
                var offset = offsetHours * 3600
                if scanner.skip(":") {
                    guard let offsetMinutes = scanner.number(minDigits: 2, maxDigits: 2), offsetMinutes <= 59 else {
                        return nil
                    }
                    offset += offsetMinutes * 60
                    if scanner.skip(":") {
                        guard let offsetSecondsPart = scanner.number(minDigits: 2, maxDigits: 2),
                            offsetSecondsPart <= 59
                        else { return nil }
                        offset += offsetSecondsPart
                    }
                }
                offsetSeconds = sign * offset
            }
        }
        if scanner.skip(" BC") {
            guard year >= 1 else { return nil }
            year = 1 - year
        }
        guard scanner.isAtEnd else { return nil }

        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + secondOfDay - offsetSeconds
        return Date(
            timeIntervalSinceReferenceDate: Double(seconds - referenceDateSince1970) + Double(fraction) / 1_000_000)
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, Howard Hinnant's algorithms)

    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilDate(fromDaysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        var quotient = value / divisor
        var remainder = value % divisor
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }

    private static func append(_ value: Int64, digits: Int, to text: inout [UInt8]) {
        var decimal: [UInt8] = []
        var remaining = value
        repeat {
            decimal.append(UInt8(ascii: "0") + UInt8(remaining % 10))
            remaining /= 10
        } while remaining > 0
        for _ in decimal.count..<max(decimal.count, digits) {
            text.append(UInt8(ascii: "0"))
        }
        text.append(contentsOf: decimal.reversed())
    }

    /// A cursor over ASCII bytes.
    private struct Scanner {
        private let bytes: [UInt8]
        private var position = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { position == bytes.count }

        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            let matches = literal.withUTF8Buffer { expected in
                expected.elementsEqual(bytes[position..<position + count])
            }
            if matches {
                position += count
            }
            return matches
        }

        mutating func digit() -> Int64? {
            guard position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9")
            else { return nil }
            defer { position += 1 }
            return Int64(bytes[position] - UInt8(ascii: "0"))
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            let start = position
            var value: Int64 = 0
            while position - start < maxDigits, let digit = digit() {
                value = value * 10 + digit
            }
            guard position - start >= minDigits else {
                position = start
                return nil
            }
            return value
        }

        mutating func sign() -> Int64? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
