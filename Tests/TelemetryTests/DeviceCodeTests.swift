import Telemetry
import Testing

@Suite("DeviceCode")
struct DeviceCodeTests {
    @Test(
        "accepts codes made of letters, digits, '_' and '-' up to 64 bytes",
        arguments: ["A", "z", "0", "_", "-", "abc-123_XYZ", "SOID0001", String(repeating: "a", count: 64)]
    )
    func acceptsValidCode(_ text: String) {
        #expect(DeviceCode.isValid(text))
        #expect(DeviceCode(text)?.rawValue == text)
        #expect(DeviceCode(text)?.description == text)
    }

    @Test(
        "rejects empty, too long, non-ASCII, separators, wildcards and path tricks",
        arguments: [
            "", String(repeating: "a", count: 65), "é", "ação", "Ａ", "a/b", "a+b", "a#b", "+", "#", "a b", " a",
            "../", "..", "a.b", "a\u{0}b", "a\nb", "a\tb", "a:b", "a$b", "a'b", "a\"b", "a;b", "😀",
            "a\u{301}",
        ]
    )
    func rejectsInvalidCode(_ text: String) {
        #expect(!DeviceCode.isValid(text))
        #expect(DeviceCode(text) == nil)
    }

    @Test("validates substrings without copying them")
    func validatesSubstrings() {
        let topic = "outlets/ABC_1/telemetry"
        let parts = topic.split(separator: "/")
        #expect(DeviceCode.isValid(parts[1]))
        #expect(!DeviceCode.isValid(topic[...]))
    }

    @Test("orders codes by their bytes and compares case-sensitively")
    func ordersByBytes() throws {
        let codes = try ["b", "B", "a-2", "a_1", "A"].map { try #require(DeviceCode($0)) }
        #expect(codes.sorted().map(\.rawValue) == ["A", "B", "a-2", "a_1", "b"])
        #expect(DeviceCode("abc") != DeviceCode("ABC"))
        #expect(DeviceCode("abc") == DeviceCode("abc"))
    }
}
