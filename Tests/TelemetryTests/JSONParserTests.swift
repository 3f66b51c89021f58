import Foundation
import Telemetry
import TestSupport
import Testing

struct ValidJSONCase: Sendable, CustomTestStringConvertible {
    var text: String
    var expected: JSONValue
    var testDescription: String { text.debugDescription }

    init(_ text: String, _ expected: JSONValue) {
        self.text = text
        self.expected = expected
    }
}

struct MalformedJSONCase: Sendable, CustomTestStringConvertible {
    var bytes: [UInt8]
    var code: JSONParseError.Code
    var byteOffset: Int?
    var testDescription: String { String(decoding: bytes, as: UTF8.self).debugDescription }

    init(_ text: String, _ code: JSONParseError.Code, at byteOffset: Int? = nil) {
        self.bytes = Array(text.utf8)
        self.code = code
        self.byteOffset = byteOffset
    }

    init(bytes: [UInt8], _ code: JSONParseError.Code, at byteOffset: Int? = nil) {
        self.bytes = bytes
        self.code = code
        self.byteOffset = byteOffset
    }
}

@Suite("JSONParser")
struct JSONParserTests {
    static let validCases: [ValidJSONCase] = [
        ValidJSONCase("null", .null),
        ValidJSONCase("true", .bool(true)),
        ValidJSONCase(" \t\r\nfalse \n", .bool(false)),
        ValidJSONCase("0", .number(0)),
        ValidJSONCase("-0", .number(-0.0)),
        ValidJSONCase("227.1", .number(227.1)),
        ValidJSONCase("-12.5e3", .number(-12_500)),
        ValidJSONCase("1E2", .number(100)),
        ValidJSONCase("1e+2", .number(100)),
        ValidJSONCase("25e-1", .number(2.5)),
        ValidJSONCase("0.1", .number(0.1)),
        ValidJSONCase("9007199254740993", .number(9_007_199_254_740_992)),  // 2^53 + 1 rounds to even
        ValidJSONCase("123456789012345678901234567890", .number(1.2345678901234568e29)),
        ValidJSONCase("1e308", .number(1e308)),
        ValidJSONCase("1e400", .number(.infinity)),
        ValidJSONCase("-1e400", .number(-.infinity)),
        ValidJSONCase("1e-400", .number(0)),
        ValidJSONCase("4.9406564584124654e-324", .number(.leastNonzeroMagnitude)),
        ValidJSONCase("0e99999999999999999999", .number(0)),
        ValidJSONCase("\"\"", .string("")),
        ValidJSONCase("\"plain ascii\"", .string("plain ascii")),
        ValidJSONCase("\"ação ✓ 😀\"", .string("ação ✓ 😀")),
        ValidJSONCase(#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{C}\n\r\t")),
        ValidJSONCase(#""\u00e9\u00C9\u0000x""#, .string("éÉ\u{0}x")),
        ValidJSONCase(#""\ud83d\ude00""#, .string("😀")),
        ValidJSONCase(#""a\u2028b""#, .string("a\u{2028}b")),
        ValidJSONCase("[]", .array([])),
        ValidJSONCase("[ 1 , [ ] , { } ]", .array([.number(1), .array([]), .object([:])])),
        ValidJSONCase("{}", .object([:])),
        ValidJSONCase(
            #"{"voltage":227.1,"ok":true,"n":null,"list":[1,"x"]}"#,
            .object([
                "voltage": .number(227.1), "ok": .bool(true), "n": .null, "list": .array([.number(1), .string("x")]),
            ])
        ),
        ValidJSONCase(#"{"a":1,"a":2}"#, .object(["a": .number(2)])),
        ValidJSONCase(#"{"\u0061":1}"#, .object(["a": .number(1)])),
    ]

    @Test("parses valid documents", arguments: validCases)
    func parsesValidDocument(_ testCase: ValidJSONCase) throws {
        let value = try JSONParser.parse(Array(testCase.text.utf8))
        #expect(value == testCase.expected)
        if case .number(let number) = value, number == 0 {
            // -0 and 0 compare equal: check the sign explicitly.
            #expect(number.sign == (testCase.text.hasPrefix("-") ? .minus : .plus))
        }
    }

    static let malformedCases: [MalformedJSONCase] = [
        MalformedJSONCase("", .unexpectedEndOfInput, at: 0),
        MalformedJSONCase("   ", .unexpectedEndOfInput, at: 3),
        MalformedJSONCase("{", .unexpectedEndOfInput),
        MalformedJSONCase("[1,", .unexpectedEndOfInput),
        MalformedJSONCase("[1", .unexpectedEndOfInput),
        MalformedJSONCase(#"{"a""#, .unexpectedEndOfInput),
        MalformedJSONCase(#"{"a":"#, .unexpectedEndOfInput),
        MalformedJSONCase(#""abc"#, .unexpectedEndOfInput),
        MalformedJSONCase(#""\"#, .unexpectedEndOfInput),
        MalformedJSONCase(#""\u12"#, .unexpectedEndOfInput),
        MalformedJSONCase("[1,]", .unexpectedCharacter, at: 3),
        MalformedJSONCase(#"{"a":1,}"#, .unexpectedCharacter, at: 7),
        MalformedJSONCase("[1 2]", .unexpectedCharacter, at: 3),
        MalformedJSONCase(#"{"a" 1}"#, .unexpectedCharacter, at: 5),
        MalformedJSONCase(#"{a:1}"#, .unexpectedCharacter, at: 1),
        MalformedJSONCase("{'a':1}", .unexpectedCharacter, at: 1),
        MalformedJSONCase(#"{"a":1]"#, .unexpectedCharacter, at: 6),
        MalformedJSONCase("]", .unexpectedCharacter, at: 0),
        MalformedJSONCase("\u{FEFF}{}", .unexpectedCharacter, at: 0),
        MalformedJSONCase("NaN", .invalidLiteral, at: 0),
        MalformedJSONCase("Infinity", .invalidLiteral, at: 0),
        MalformedJSONCase("-Infinity", .invalidNumber, at: 1),
        MalformedJSONCase("nul", .invalidLiteral, at: 0),
        MalformedJSONCase("True", .invalidLiteral, at: 0),
        MalformedJSONCase("[nulL]", .invalidLiteral, at: 1),
        MalformedJSONCase("01", .invalidNumber, at: 0),
        MalformedJSONCase("-01", .invalidNumber, at: 0),
        MalformedJSONCase("1.", .invalidNumber, at: 2),
        MalformedJSONCase(".5", .unexpectedCharacter, at: 0),
        MalformedJSONCase("+1", .unexpectedCharacter, at: 0),
        MalformedJSONCase("-", .invalidNumber, at: 1),
        MalformedJSONCase("1e", .invalidNumber, at: 2),
        MalformedJSONCase("1e+", .invalidNumber, at: 3),
        MalformedJSONCase("0x10", .trailingData, at: 1),
        MalformedJSONCase("1 2", .trailingData, at: 2),
        MalformedJSONCase("{} x", .trailingData, at: 3),
        MalformedJSONCase("truex", .trailingData, at: 4),
        MalformedJSONCase(#""\x""#, .invalidEscape, at: 1),
        MalformedJSONCase(#""\u12G4""#, .invalidEscape),
        MalformedJSONCase(#""\ud83d""#, .unpairedSurrogate, at: 1),
        MalformedJSONCase(#""\ud83dx""#, .unpairedSurrogate, at: 1),
        MalformedJSONCase(#""\ud83d\u0041""#, .unpairedSurrogate, at: 1),
        MalformedJSONCase(#""\ude00""#, .unpairedSurrogate, at: 1),
        MalformedJSONCase("\"a\u{1}b\"", .controlCharacterInString, at: 2),
        MalformedJSONCase("\"a\nb\"", .controlCharacterInString, at: 2),
        MalformedJSONCase("\"\\n\tb\"", .controlCharacterInString, at: 3),
        MalformedJSONCase(bytes: [0x22, 0xFF, 0x22], .invalidUTF8, at: 1),
        MalformedJSONCase(bytes: [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8, at: 1),  // overlong '/'
        MalformedJSONCase(bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], .invalidUTF8, at: 2),  // overlong
        MalformedJSONCase(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, at: 2),  // encoded surrogate
        MalformedJSONCase(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8, at: 2),  // > U+10FFFF
        MalformedJSONCase(bytes: [0x22, 0xC3, 0x22], .invalidUTF8, at: 2),  // truncated
        MalformedJSONCase(bytes: [0x22, 0xE2, 0x82], .invalidUTF8, at: 1),  // truncated at end of input
        MalformedJSONCase(bytes: [0x22, 0x5C, 0x6E, 0x80, 0x22], .invalidUTF8, at: 3),  // after an escape
        MalformedJSONCase(bytes: [0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D], .invalidUTF8, at: 2),  // in a key
        MalformedJSONCase(bytes: [0xFF], .unexpectedCharacter, at: 0),
    ]

    @Test("refuses malformed documents with a code and byte offset", arguments: malformedCases)
    func refusesMalformedDocument(_ testCase: MalformedJSONCase) {
        let error = #expect(throws: JSONParseError.self) {
            try JSONParser.parse(testCase.bytes)
        }
        #expect(error?.code == testCase.code)
        if let byteOffset = testCase.byteOffset {
            #expect(error?.byteOffset == byteOffset)
        }
        #expect(error?.description.contains("at byte") == true)
    }

    @Test("throws instead of crashing on 10 000 nested brackets", arguments: ["[", "{\"a\":", "[{\"a\":"])
    func throwsOnDeepNesting(_ opener: String) {
        let document = String(repeating: opener, count: 10_000)
        let error = #expect(throws: JSONParseError.self) {
            try JSONParser.parse(Array(document.utf8))
        }
        #expect(error?.code == .tooDeep)
    }

    @Test("accepts exactly maxDepth levels and refuses one more", arguments: [1, 2, 64])
    func enforcesDepthLimit(_ maxDepth: Int) throws {
        let fits = String(repeating: "[", count: maxDepth) + String(repeating: "]", count: maxDepth)
        #expect(throws: Never.self) { try JSONParser.parse(Array(fits.utf8), maxDepth: maxDepth) }
        let tooDeep = "[" + fits + "]"
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(tooDeep.utf8), maxDepth: maxDepth) }
    }

    @Test(
        "parseNumber accepts exactly the JSON number grammar",
        arguments: [
            ("0", 0.0), ("-0.5", -0.5), ("1e3", 1000), ("12.50", 12.5), ("1", 1),
            ("", nil), (" 1", nil), ("1 ", nil), ("01", nil), ("1.", nil), ("abc", nil), ("NaN", nil), ("inf", nil),
            ("0x1A", nil), ("1_000", nil), ("1,5", nil), ("+1", nil),
        ] as [(String, Double?)]
    )
    func parseNumberFollowsGrammar(text: String, expected: Double?) {
        #expect(JSONParser.parseNumber(text) == expected)
    }

    @Test("rounds numbers exactly like the standard library, fast path or not")
    func roundsLikeStandardLibrary() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            var text = Bool.random(using: &generator) ? "-" : ""
            let integerDigits = Int.random(in: 1...20, using: &generator)
            text += String(Int.random(in: 1...9, using: &generator))
            for _ in 1..<integerDigits { text += String(Int.random(in: 0...9, using: &generator)) }
            if Bool.random(using: &generator) {
                text += "."
                for _ in 0..<Int.random(in: 1...20, using: &generator) {
                    text += String(Int.random(in: 0...9, using: &generator))
                }
            }
            if Bool.random(using: &generator) {
                text += "e" + String(Int.random(in: -340...320, using: &generator))
            }
            let expected = Double(text)
            let parsed = JSONParser.parseNumber(text)
            #expect(parsed == expected, "\(text)")
            if parsed != expected { return }
        }
    }

    @Test("keeps the last value of a duplicate key and reads members by subscript")
    func lastDuplicateKeyWins() throws {
        let value = try JSONParser.parse(Array(#"{"v":1,"x":{"v":true},"v":"three"}"#.utf8))
        #expect(value["v"] == .string("three"))
        #expect(value["x"]?["v"] == .bool(true))
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([])["v"] == nil)
    }

    @Test("parseObject(keeping:) agrees with parse on 20,000 mutations of an object: same members, same errors")
    func keepingAgreesWithParse() {
        // A duplicate key, an escaped key, nested members of the same name, and keys that Swift equates with
        // "K" (U+212A KELVIN SIGN, raw and escaped).
        let object = Array(
            (#"{"voltage":227.1,"v":[1,{"v":2}],"volt\u0061ge":"x","K":null,"\u212A":true,"seq":7,"#
                + "\"\u{212A}\":[],\"v\":-0.5e3, \"x\":{\"seq\":1}}").utf8)
        let keys: [StaticString] = ["voltage", "v", "K", "seq", "missing"]
        let interesting = Array(#"{}[]":,.-e0123456789\u"tfn "#.utf8) + [0x00, 0x80, 0xE2, 0x84, 0xAA, 0xFF]
        var generator = SplitMix64(seed: 2024)
        var outcomes = (members: 0, errors: 0, notObjects: 0)
        for round in 0..<20_000 {
            var payload = object
            for _ in 0..<(round == 0 ? 0 : Int.random(in: 1...3, using: &generator)) where !payload.isEmpty {
                let position = Int.random(in: 0..<payload.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: payload[position] = interesting.randomElement(using: &generator)!
                case 1: payload.remove(at: position)
                case 2: payload.insert(interesting.randomElement(using: &generator)!, at: position)
                default: payload.removeSubrange(position...)
                }
            }
            let expected: Result<[JSONValue?]?, JSONParseError>
            if payload.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) != UInt8(ascii: "{") {
                expected = .success(nil)  // not read past the whitespace
            } else {
                do {
                    guard case .object(let members) = try JSONParser.parse(payload) else {
                        Issue.record("an object parsed as something else")
                        return
                    }
                    expected = .success(keys.map { members[$0.description] })
                } catch {
                    expected = .failure(error)
                }
            }
            let actual = Result { () throws(JSONParseError) in try JSONParser.parseObject(payload, keeping: keys) }
            #expect(actual == expected, "\(String(decoding: payload, as: UTF8.self))")
            switch expected {
            case .success(nil): outcomes.notObjects += 1
            case .success: outcomes.members += 1
            case .failure: outcomes.errors += 1
            }
        }
        // The mutations reach every outcome.
        #expect(outcomes.members > 1_000 && outcomes.errors > 1_000 && outcomes.notObjects > 100)
    }

    @Test("parseObject(keeping:) keeps the last duplicate and matches keys as strings match")
    func keepingFollowsStringEquality() throws {
        let payload = Array(("{\"K\":1,\"\u{212A}\":2,\"n\":null,\"a\\u0062\":3}").utf8)
        let values = try JSONParser.parseObject(payload, keeping: ["K", "n", "ab", "none"])
        #expect(values == [.number(2), .null, .number(3), nil])
        #expect(try JSONParser.parseObject(Array(" [1]".utf8), keeping: ["K"]) == nil)
    }

    @Test(
        "numberValue reads numbers and, optionally, numeric strings",
        arguments: [
            (JSONValue.number(1.5), 1.5, 1.5), (.string("227.1"), 227.1, nil), (.string(" 42 "), 42, nil),
            (.string("abc"), nil, nil), (.string(""), nil, nil), (.bool(true), nil, nil), (.null, nil, nil),
            (.array([.number(1)]), nil, nil),
        ] as [(JSONValue, Double?, Double?)]
    )
    func numberValueReadsNumbers(value: JSONValue, lenient: Double?, strict: Double?) {
        #expect(value.numberValue() == lenient)
        #expect(value.numberValue(acceptingNumericString: false) == strict)
    }
}
