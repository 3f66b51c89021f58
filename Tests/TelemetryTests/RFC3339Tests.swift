import Foundation
import Telemetry
import TestSupport
import Testing

@Suite("RFC3339")
struct RFC3339Tests {
    @Test(
        "parses date-times with an offset to the right microsecond",
        arguments: [
            ("2024-05-01T12:00:00Z", 1_714_564_800_000_000),
            ("2024-05-01t12:00:00z", 1_714_564_800_000_000),
            ("2024-05-01 12:00:00Z", 1_714_564_800_000_000),
            ("2024-05-01T09:00:00-03:00", 1_714_564_800_000_000),
            ("2024-05-01T17:30:00+05:30", 1_714_564_800_000_000),
            ("2024-05-01T12:00:00-00:00", 1_714_564_800_000_000),
            ("2024-05-01T12:00:00.5Z", 1_714_564_800_500_000),
            ("2024-05-01T12:00:00.123Z", 1_714_564_800_123_000),
            ("2024-05-01T12:00:00.123456Z", 1_714_564_800_123_456),
            ("2024-05-01T12:00:00.1234565Z", 1_714_564_800_123_457),  // rounded half up to the microsecond
            ("2024-05-01T12:00:00.123456789123Z", 1_714_564_800_123_457),
            ("2024-05-01T12:00:00.000000Z", 1_714_564_800_000_000),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59Z", -1_000_000),
            ("2024-02-29T23:59:59Z", 1_709_251_199_000_000),
            ("2016-12-31T23:59:60Z", 1_483_228_800_000_000),  // leap second lands on the next minute
            ("9999-12-31T23:59:59Z", 253_402_300_799_000_000),
            ("0001-01-01T00:00:00Z", -62_135_596_800_000_000),
            ("1600-03-01T00:00:00Z", -11_670_912_000_000_000),
        ] as [(String, Int64)]
    )
    func parsesDateTime(text: String, expectedMicroseconds: Int64) throws {
        let date = try #require(RFC3339.date(from: text))
        #expect(date.microsecondsSince1970 == expectedMicroseconds)
        #expect(date == Date(microsecondsSince1970: expectedMicroseconds))
    }

    @Test(
        "refuses malformed date-times",
        arguments: [
            "", "2024", "2024-05-01", "2024-05-01T12:00Z", "2024-5-01T12:00:00Z", "2024-05-1T12:00:00Z",
            "24-05-01T12:00:00Z", "2024-13-01T12:00:00Z", "2024-00-01T12:00:00Z", "2024-05-00T12:00:00Z",
            "2023-02-29T12:00:00Z", "2024-04-31T12:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z",
            "2024-05-01T12:00:61Z", "2024-05-01X12:00:00Z", "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00,5Z",
            "2024-05-01T12:00:00+0300", "2024-05-01T12:00:00+03", "2024-05-01T12:00:00+24:00",
            "2024-05-01T12:00:00+03:60", "2024-05-01T12:00:00ZZ", "2024-05-01T12:00:00Z ", " 2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00UTC", "2024-05-01T12:00:00GMT", "１９７０-01-01T00:00:00Z", "+2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00Z\u{0}", "1700000000",
        ]
    )
    func refusesMalformed(_ text: String) {
        #expect(RFC3339.parse(text) == nil)
        #expect(RFC3339.date(from: text) == nil)
    }

    @Test(
        "keeps a date-time without offset but gives no instant for it",
        arguments: ["2018-02-15T17:37:10", "2018-02-15 17:37:10.250"]
    )
    func keepsLocalTimeWithoutOffset(_ text: String) throws {
        let parsed = try #require(RFC3339.parse(text))
        #expect(parsed.utcOffsetSeconds == nil)
        #expect(parsed.date == nil)
        #expect(RFC3339.date(from: text) == nil)
        // 2018-02-15T17:37:10 read in UTC-03:00 is 20:37:10Z.
        let instant = parsed.date(assumingUTCOffsetSeconds: -10_800)
        #expect(instant.microsecondsSince1970 / 1_000_000 == 1_518_727_030)
    }

    /// Foundation switches to the Julian calendar before October 1582, so the oracle starts in 1583; the
    /// proleptic Gregorian years before that are pinned by `parsesDateTime` (0001-01-01, 1600-03-01).
    @Test("computes days since 1970 like Foundation's Gregorian calendar")
    func daysMatchFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        var generator = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let year = Int.random(in: 1583...9999, using: &generator)
            let month = Int.random(in: 1...12, using: &generator)
            let day = Int.random(in: 1...RFC3339.daysInMonth(year: year, month: month), using: &generator)
            let components = DateComponents(year: year, month: month, day: day)
            let date = try #require(calendar.date(from: components))
            let expectedDays = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
            #expect(RFC3339.daysSince1970(year: year, month: month, day: day) == expectedDays, "\(components)")
        }
    }

    @Test(
        "knows leap years",
        arguments: [(2024, true), (2023, false), (2000, true), (1900, false), (2100, false), (1600, true)]
    )
    func knowsLeapYears(year: Int, isLeap: Bool) {
        #expect(RFC3339.isLeapYear(year) == isLeap)
        #expect(RFC3339.daysInMonth(year: year, month: 2) == (isLeap ? 29 : 28))
    }

    @Test("round-trips microseconds through Date from 1870 to 2135")
    func microsecondsRoundTrip() {
        var generator = SplitMix64(seed: 11)
        for _ in 0..<10_000 {
            let microseconds = Int64.random(in: -3_155_673_600_000_000...5_206_896_000_000_000, using: &generator)
            let date = Date(microsecondsSince1970: microseconds)
            #expect(date.microsecondsSince1970 == microseconds)
            #expect(date.roundedToMicroseconds == date)
        }
        #expect(Date(timeIntervalSince1970: 1.000_000_4).microsecondsSince1970 == 1_000_000)
        #expect(Date(timeIntervalSince1970: 1.000_000_6).microsecondsSince1970 == 1_000_001)
    }
}
