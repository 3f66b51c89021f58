import Protocols
import Telemetry
import TestSupport
import Testing

struct TopicCase: Sendable, CustomTestStringConvertible {
    var topic: String
    var prefix: String
    var expected: NativeProtocol.TopicMatch?

    var testDescription: String { "\(topic) under \(prefix.isEmpty ? "<empty>" : prefix)" }

    init(_ topic: String, _ prefix: String, _ expected: (String, NativeProtocol.TopicKind)?) {
        self.topic = topic
        self.prefix = prefix
        self.expected = expected.map { NativeProtocol.TopicMatch(deviceCode: $0.0, kind: $0.1) }
    }
}

@Suite("NativeProtocol topics")
struct NativeTopicTests {
    static let cases: [TopicCase] = [
        // One-level prefix, every kind.
        TopicCase("outlets/ABC123/telemetry", "outlets", ("ABC123", .telemetry)),
        TopicCase("outlets/ABC123/state", "outlets", ("ABC123", .state)),
        TopicCase("outlets/ABC123/availability", "outlets", ("ABC123", .availability)),
        TopicCase("outlets/ABC123/set", "outlets", ("ABC123", .set)),
        TopicCase("outlets/ABC123/command", "outlets", ("ABC123", .command)),
        // Two-level prefix, and a trailing slash in the configured prefix.
        TopicCase("site1/outlets/x_1/telemetry", "site1/outlets", ("x_1", .telemetry)),
        TopicCase("site1/outlets/x_1/telemetry", "site1/outlets/", ("x_1", .telemetry)),
        TopicCase("x_1/state", "", ("x_1", .state)),
        // The code level is returned raw: validating it is DeviceCode's job.
        TopicCase("outlets/bad code!/telemetry", "outlets", ("bad code!", .telemetry)),
        TopicCase("outlets/..\u{301}/telemetry", "outlets", ("..\u{301}", .telemetry)),
        // Wrong prefix.
        TopicCase("outlet/ABC/telemetry", "outlets", nil),
        TopicCase("outletsX/ABC/telemetry", "outlets", nil),
        TopicCase("Outlets/ABC/telemetry", "outlets", nil),
        TopicCase("site2/outlets/ABC/telemetry", "site1/outlets", nil),
        TopicCase("outlets/ABC/telemetry", "site1/outlets", nil),
        TopicCase("/outlets/ABC/telemetry", "outlets", nil),
        TopicCase("tele/ABC/SENSOR", "outlets", nil),
        // Layout: extra or missing levels, empty code, unknown or differently cased kind.
        TopicCase("outlets/ABC/set/result", "outlets", nil),
        TopicCase("outlets/ABC/telemetry/", "outlets", nil),
        TopicCase("outlets/extra/ABC/telemetry", "outlets", nil),
        TopicCase("outlets/telemetry", "outlets", nil),
        TopicCase("outlets//telemetry", "outlets", nil),
        TopicCase("outlets", "outlets", nil),
        TopicCase("", "outlets", nil),
        TopicCase("outlets/ABC/power", "outlets", nil),
        TopicCase("outlets/ABC/Telemetry", "outlets", nil),
        TopicCase("outlets/ABC/telemetry\u{301}", "outlets", nil),
        TopicCase("site1/outlets/ABC/telemetry", "outlets", nil),
        // Wildcards never appear in a published topic.
        TopicCase("outlets/+/telemetry", "outlets", nil),
        TopicCase("outlets/#", "outlets", nil),
        TopicCase("outlets/A+B/telemetry", "outlets", nil),
        TopicCase("outlets/ABC/#", "outlets", nil),
        TopicCase("+/ABC/telemetry", "+", nil),
    ]

    @Test("parses <prefix>/<code>/<kind> and refuses everything else", arguments: cases)
    func parsesTopic(_ testCase: TopicCase) {
        #expect(NativeProtocol.parseTopic(testCase.topic, prefix: testCase.prefix) == testCase.expected)
    }

    @Test(
        "builds topics that parse back",
        arguments: ["outlets", "site1/outlets", "site1/outlets/", "a/b/c"],
        NativeProtocol.TopicKind.allCases
    )
    func buildsTopicsThatParseBack(prefix: String, kind: NativeProtocol.TopicKind) throws {
        let code = try #require(DeviceCode("Outlet-7_x"))
        let topic = NativeProtocol.topic(prefix: prefix, code: code, kind: kind)
        #expect(!topic.contains("//"))
        #expect(topic.hasSuffix("/Outlet-7_x/\(kind.rawValue)"))
        #expect(
            NativeProtocol.parseTopic(topic, prefix: prefix)
                == NativeProtocol.TopicMatch(deviceCode: "Outlet-7_x", kind: kind)
        )
    }

    /// Topics and prefixes built from levels that stress the scan: empty levels, wildcards, a kind,
    /// a level that begins another, a two-byte letter and a combining mark.
    @Test("agrees with splitting the topic into levels, on 20,000 random topics")
    func agreesWithSplitting() {
        let pieces = ["", "ou", "outlets", "site1", "telemetry", "set", "A", "é", "\u{301}", "+", "#", "x/y"]
        var generator = SplitMix64(seed: 77)
        func random(levels: ClosedRange<Int>) -> String {
            (0..<Int.random(in: levels, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }
                .joined(separator: "/")
        }
        for _ in 0..<20_000 {
            let prefix = random(levels: 0...3) + (Bool.random(using: &generator) ? "/" : "")
            let topic =
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: random(levels: 0...5)
                case 1: "\(prefix)/\(random(levels: 1...3))"
                default: "\(prefix)\(random(levels: 1...3))"  // the prefix glued to the next level
                }
            let expected = Self.splitting(topic, prefix: prefix)
            #expect(NativeProtocol.parseTopic(topic, prefix: prefix) == expected, "\(topic) under \(prefix)")
        }
    }

    /// The rule as first written: split both into levels, compare the prefix's, then code and kind.
    static func splitting(_ topic: String, prefix: String) -> NativeProtocol.TopicMatch? {
        let slash = UInt8(ascii: "/")
        guard !topic.utf8.contains(UInt8(ascii: "+")), !topic.utf8.contains(UInt8(ascii: "#")) else { return nil }
        let levels = topic.utf8.split(separator: slash, omittingEmptySubsequences: false)
        var normalizedPrefix = Substring(prefix)
        while normalizedPrefix.utf8.last == slash { normalizedPrefix = normalizedPrefix.dropLast() }
        let prefixLevels =
            normalizedPrefix.isEmpty
            ? [] : normalizedPrefix.utf8.split(separator: slash, omittingEmptySubsequences: false)
        guard levels.count == prefixLevels.count + 2 else { return nil }
        for (level, expected) in zip(levels, prefixLevels) where !level.elementsEqual(expected) { return nil }
        let codeLevel = levels[prefixLevels.count]
        let kindLevel = levels[prefixLevels.count + 1]
        guard !codeLevel.isEmpty,
            let kind = NativeProtocol.TopicKind(rawValue: String(decoding: kindLevel, as: UTF8.self))
        else { return nil }
        return NativeProtocol.TopicMatch(deviceCode: String(decoding: codeLevel, as: UTF8.self), kind: kind)
    }

    @Test("builds the documented topic")
    func buildsDocumentedTopic() throws {
        let code = try #require(DeviceCode("ABC123"))
        #expect(NativeProtocol.topic(prefix: "outlets", code: code, kind: .telemetry) == "outlets/ABC123/telemetry")
        #expect(NativeProtocol.topic(prefix: "", code: code, kind: .set) == "ABC123/set")
    }
}
