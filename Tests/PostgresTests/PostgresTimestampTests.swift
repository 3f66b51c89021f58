import Foundation
import Postgres
import Testing

@Suite struct PostgresTimestampTests {
    struct ParseCase: Sendable, CustomTestStringConvertible {
        let text: String
        let microsecondsSince1970: Int64?
        var testDescription: String { text }
    }

    static let parseCases: [ParseCase] = [
        ParseCase(text: "2024-02-29 23:59:59.123456+00", microsecondsSince1970: 1_709_251_199_123_456),
        ParseCase(text: "2024-03-01 05:29:59.123456+05:30", microsecondsSince1970: 1_709_251_199_123_456),
        ParseCase(text: "2024-02-29 20:59:59.123456-03", microsecondsSince1970: 1_709_251_199_123_456),
        ParseCase(text: "2024-02-29 20:29:59.123456-03:30", microsecondsSince1970: 1_709_251_199_123_456),
        ParseCase(text: "2024-02-29 23:59:59.1+00", microsecondsSince1970: 1_709_251_199_100_000),
        ParseCase(text: "2024-02-29 23:59:59+00", microsecondsSince1970: 1_709_251_199_000_000),
        ParseCase(text: "2024-02-29T23:59:59Z", microsecondsSince1970: 1_709_251_199_000_000),
        ParseCase(text: "1970-01-01 00:00:00+00", microsecondsSince1970: 0),
        ParseCase(text: "1969-12-31 23:59:59.999999+00", microsecondsSince1970: -1),
        ParseCase(text: "1900-06-01 12:19:32+00:19:32", microsecondsSince1970: -2_195_899_200_000_000),
        ParseCase(text: "2024-02-29 23:59:59", microsecondsSince1970: 1_709_251_199_000_000),
        ParseCase(text: "2024-02-29", microsecondsSince1970: 1_709_164_800_000_000),
        ParseCase(text: "0001-01-01 00:00:00+00", microsecondsSince1970: -62_135_596_800_000_000),
        ParseCase(text: "0001-12-31 00:00:00+00 BC", microsecondsSince1970: -62_135_683_200_000_000),
        ParseCase(text: "12024-01-01 00:00:00+00", microsecondsSince1970: 317_273_587_200_000_000),
        ParseCase(text: "2024-13-01 00:00:00+00", microsecondsSince1970: nil),
        ParseCase(text: "2024-02-29 23:59:59.+00", microsecondsSince1970: nil),
        ParseCase(text: "2024-02-29 23:59:59+00 trailing", microsecondsSince1970: nil),
        ParseCase(text: "24-02-29 23:59:59+00", microsecondsSince1970: nil),
        ParseCase(text: "", microsecondsSince1970: nil),
        ParseCase(text: "yesterday", microsecondsSince1970: nil),
    ]

    @Test(arguments: parseCases)
    func parsesPostgresOutput(_ parseCase: ParseCase) {
        let date = PostgresTimestamp.date(from: parseCase.text)
        #expect(date.map(\.microsecondsSince1970) == parseCase.microsecondsSince1970)
    }

    @Test func infinityMapsToDistantDates() {
        #expect(PostgresTimestamp.date(from: "infinity") == .distantFuture)
        #expect(PostgresTimestamp.date(from: "-infinity") == .distantPast)
    }

    @Test(arguments: [
        (Int64(1_709_251_199_123_456), "2024-02-29 23:59:59.123456+00"),
        (0, "1970-01-01 00:00:00.000000+00"),
        (-1, "1969-12-31 23:59:59.999999+00"),
        (-62_135_596_800_000_000, "0001-01-01 00:00:00.000000+00"),
        (-62_135_683_200_000_000, "0001-12-31 00:00:00.000000+00 BC"),
        (317_273_587_200_000_000, "12024-01-01 00:00:00.000000+00"),
    ])
    func formatsUTCWithMicroseconds(microseconds: Int64, expected: String) {
        let date = Date(microsecondsSince1970: microseconds)
        #expect(PostgresTimestamp.text(for: date) == expected)
        #expect(date.postgresText == expected)
    }

    @Test func formattingRoundsToTheNearestMicrosecond() {
        let epoch = Date(timeIntervalSince1970: 0)
        #expect(PostgresTimestamp.text(for: epoch + 0.000_000_4) == "1970-01-01 00:00:00.000000+00")
        #expect(PostgresTimestamp.text(for: epoch + 0.000_000_6) == "1970-01-01 00:00:00.000001+00")
        #expect(PostgresTimestamp.text(for: epoch - 0.000_000_6) == "1969-12-31 23:59:59.999999+00")
        #expect(PostgresTimestamp.text(for: Date(timeIntervalSince1970: .infinity)) == "infinity")
    }

    @Test func formatAndParseAgreeAcrossManyInstants() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            // 1866 to 2136: where a `Date` holds microseconds exactly.
            let microseconds = Int64.random(in: -3_250_000_000_000_000...5_200_000_000_000_000, using: &generator)
            let date = Date(microsecondsSince1970: microseconds)
            let text = PostgresTimestamp.text(for: date)
            let parsed = PostgresTimestamp.date(from: text)
            #expect(parsed?.microsecondsSince1970 == microseconds, "\(text)")
            if parsed?.microsecondsSince1970 != microseconds { break }
        }
    }
}
