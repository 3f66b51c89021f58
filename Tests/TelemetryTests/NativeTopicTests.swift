import Telemetry
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

    @Test("builds the documented topic")
    func buildsDocumentedTopic() throws {
        let code = try #require(DeviceCode("ABC123"))
        #expect(NativeProtocol.topic(prefix: "outlets", code: code, kind: .telemetry) == "outlets/ABC123/telemetry")
        #expect(NativeProtocol.topic(prefix: "", code: code, kind: .set) == "ABC123/set")
    }
}
