import Foundation
import Postgres
import Testing

/// One parameter round trip: bind `value` into a column of `sqlType`, read the column's text output back.
struct BindCase: Sendable, CustomTestStringConvertible {
    let name: String
    let sqlType: String
    let value: (any PostgresBindable & Sendable)?
    let expectedText: String?

    var testDescription: String { name }

    init(_ name: String, _ sqlType: String, _ value: (any PostgresBindable & Sendable)?, _ expectedText: String?) {
        self.name = name
        self.sqlType = sqlType
        self.value = value
        self.expectedText = expectedText
    }
}

@Suite struct PostgresBindableTests {
    static let tricky = "Olá, mundo 🌍 'single' \"double\" back\\slash \\x00 tab\tnew\nline ; -- $1 {a,b}"

    static let cases: [BindCase] = [
        BindCase("text with unicode, quotes and backslashes", "text", tricky, tricky),
        BindCase("empty text", "text", "", ""),
        BindCase("NULL text", "text", nil, nil),
        BindCase("Int", "bigint", 42, "42"),
        BindCase("Int64.max", "bigint", Int64.max, "9223372036854775807"),
        BindCase("Int64.min", "bigint", Int64.min, "-9223372036854775808"),
        BindCase("Int32.min", "integer", Int32.min, "-2147483648"),
        BindCase("Int16", "smallint", Int16(-7), "-7"),
        BindCase("UInt32.max as oid", "oid", UInt32.max, "4294967295"),
        BindCase("Double 0.1", "double precision", 0.1, "0.1"),
        BindCase("Double.pi", "double precision", Double.pi, "3.141592653589793"),
        BindCase("tiny Double", "double precision", 1e-300, "1e-300"),
        BindCase("huge Double", "double precision", Double.greatestFiniteMagnitude, "1.7976931348623157e+308"),
        BindCase("negative Double", "double precision", -1234.5678, "-1234.5678"),
        BindCase("Double NaN", "double precision", Double.nan, "NaN"),
        BindCase("Double -infinity", "double precision", -Double.infinity, "-Infinity"),
        BindCase("Float", "real", Float(1.1), "1.1"),
        BindCase("Bool true", "boolean", true, "t"),
        BindCase("Bool false", "boolean", false, "f"),
        BindCase("bytes", "bytea", [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x5C, 0x27] as [UInt8], "\\x00017f80ff5c27"),
        BindCase("empty bytes", "bytea", [] as [UInt8], "\\x"),
        BindCase(
            "Date", "timestamptz", Date(microsecondsSince1970: 1_709_251_199_123_456),
            "2024-02-29 23:59:59.123456+00"),
        BindCase(
            "UUID", "uuid", UUID(uuidString: "123E4567-E89B-12D3-A456-426614174000"),
            "123e4567-e89b-12d3-a456-426614174000"),
        BindCase(
            "String array with quotes, NULL, commas", "text[]",
            ["a", "b\"c", nil, "d,e", "{x}", "NULL", " sp ", "back\\slash", ""] as [String?],
            #"{a,"b\"c",NULL,"d,e","{x}","NULL"," sp ","back\\slash",""}"#),
        BindCase("empty String array", "text[]", [] as [String], "{}"),
        BindCase("Int64 array", "bigint[]", [1, -2, Int64.max] as [Int64], "{1,-2,9223372036854775807}"),
        BindCase("Double array", "double precision[]", [1.5, -0.25, 1e-300] as [Double], "{1.5,-0.25,1e-300}"),
        BindCase("Int32 array", "integer[]", [1, 2, 3] as [Int32], "{1,2,3}"),
        BindCase("Int32 array with NULL", "integer[]", [1, nil] as [Int32?], "{1,NULL}"),
    ]

    @Test(arguments: cases)
    func roundTripsThroughAColumn(_ bindCase: BindCase) throws {
        let connection = try TestDatabase().connect()
        try connection.execute("SET TimeZone = 'UTC'")
        try connection.execute("CREATE TABLE t (v \(bindCase.sqlType))")
        let inserted = try connection.execute("INSERT INTO t (v) VALUES ($1)", [bindCase.value])
        #expect(inserted.affectedRows == 1)
        let result = try connection.execute("SELECT v FROM t")
        #expect(result[0, 0] == bindCase.expectedText)
        // And the same value compares equal when bound again.
        if bindCase.value != nil && bindCase.name != "Double NaN" {
            let matches = try connection.execute("SELECT count(*) FROM t WHERE v = $1", [bindCase.value])
            #expect(matches[0, 0] == "1")
        }
    }

    @Test func stringArrayElementsSurviveExactly() throws {
        let connection = try TestDatabase().connect()
        let elements: [String?] = ["a", "b\"c", nil, "d,e", "{x}", "NULL", " sp ", "back\\slash", "", "é🌍"]
        let result = try connection.execute(
            "SELECT e, e IS NULL FROM unnest($1::text[]) WITH ORDINALITY AS u(e, n) ORDER BY n", [elements])
        #expect(result.rowCount == elements.count)
        for (row, element) in elements.enumerated() {
            #expect(result[row, 0] == element)
            #expect(try result.bool(row: row, column: 1) == (element == nil))
        }
    }

    @Test func sqlInjectionAttemptIsStoredVerbatim() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE devices (code text)")
        let attack = "x'); DROP TABLE devices; --"
        try connection.execute("INSERT INTO devices (code) VALUES ($1)", [attack])
        let found = try connection.execute("SELECT code FROM devices WHERE code = $1", [attack])
        #expect(found.rowCount == 1)
        #expect(found[0, 0] == attack)
    }

    @Test(arguments: ["UTC", "Asia/Kolkata", "America/Sao_Paulo", "America/St_Johns", "Asia/Kathmandu"])
    func dateRoundTripsAtMicrosecondPrecision(timeZone: String) throws {
        let connection = try TestDatabase().connect()
        try connection.execute("SET TimeZone = '\(timeZone)'")
        try connection.execute("CREATE TABLE t (n int, at timestamptz)")
        let microseconds: [Int64] = [
            1_709_251_199_123_456,  // 2024-02-29, leap day
            0,
            -1,  // one microsecond before the epoch
            -2_208_988_800_000_001,  // before 1900
            1_700_000_000_000_001,
            4_102_444_799_999_999,  // 2099-12-31 23:59:59.999999
        ]
        for (index, value) in microseconds.enumerated() {
            let date = Date(microsecondsSince1970: value)
            try connection.execute("INSERT INTO t VALUES ($1, $2)", [index, date])
        }
        let result = try connection.execute(
            "SELECT at, (extract(epoch FROM at) * 1000000)::bigint FROM t ORDER BY n")
        for (row, expected) in microseconds.enumerated() {
            #expect(try result.int64(row: row, column: 1) == expected, "server saw row \(row)")
            let date = try #require(try result.date(row: row, column: 0), "\(result[row, 0] ?? "NULL")")
            #expect(date.microsecondsSince1970 == expected, "\(result[row, 0] ?? "")")
        }
    }

    @Test func datesWithHistoricOffsetSecondsParse() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("SET TimeZone = 'Europe/Amsterdam'")
        let result = try connection.execute(
            "SELECT v, extract(epoch FROM v)::bigint FROM (SELECT '1900-06-01 12:00:00+00'::timestamptz AS v) s")
        #expect(result[0, 0]?.hasSuffix("+00:19:32") == true, "\(result[0, 0] ?? "")")
        let date = try #require(try result.date(row: 0, column: 0))
        #expect(try Int64(date.timeIntervalSince1970) == result.int64(row: 0, column: 1))
    }
}
