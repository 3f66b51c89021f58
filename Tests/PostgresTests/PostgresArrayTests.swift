import Foundation
import Postgres
import Testing

@Suite struct PostgresArrayTests {
    @Test(arguments: [
        ([] as [String?], "{}"),
        (["a"], #"{"a"}"#),
        (["a", "b\"c", nil], #"{"a","b\"c",NULL}"#),
        (["back\\slash", "d,e", "{x}", "NULL", " "], #"{"back\\slash","d,e","{x}","NULL"," "}"#),
    ])
    func buildsQuotedLiterals(elements: [String?], expected: String) {
        #expect(PostgresArray.literal(elements) == expected)
    }

    @Test func arraysOfBindablesUseLiteralsAndBytesUseBytea() {
        #expect([Int64(1), -2].postgresText == #"{"1","-2"}"#)
        #expect([Int32(3)].postgresText == #"{"3"}"#)
        #expect([1.5, Double.nan].postgresText == #"{"1.5","NaN"}"#)
        #expect(["x", nil].postgresText == #"{"x",NULL}"#)
        #expect([UInt8(0x0A), 0xFF].postgresText == #"\x0aff"#)
    }
}
