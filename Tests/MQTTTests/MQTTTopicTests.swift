import MQTT
import Testing

@Suite("MQTTTopic")
struct MQTTTopicTests {
    @Test(arguments: [
        ("outlets/+/telemetry", "outlets/abc/telemetry", true),
        ("outlets/+/telemetry", "outlets/abc/state", false),
        ("outlets/+/telemetry", "outlets/a/b/telemetry", false),
        ("outlets/#", "outlets", true),
        ("outlets/#", "outlets/abc/set/result", true),
        ("outlets/abc", "outlets/abc", true),
        ("outlets/abc", "outlets/abcd", false),
        ("#", "anything/at/all", true),
        ("#", "$SYS/broker/uptime", false),
        ("+/status", "$SYS/status", false),
        ("$SYS/#", "$SYS/broker/uptime", true),
        ("+", "a", true),
        ("+", "a/b", false),
        ("a/+/+", "a/b/c", true),
        ("a/#/b", "a/x/b", false),
        ("a/b+", "a/b+", false),
    ])
    func matches(filter: String, topic: String, expected: Bool) {
        #expect(MQTTTopic.matches(filter: filter, topic: topic) == expected)
    }

    @Test func validatesFilters() {
        for valid in ["a", "a/b", "+", "#", "a/+/c", "a/#", "$SYS/#", "/", "a//b"] {
            #expect(MQTTTopic.isValidFilter(valid), "\(valid)")
        }
        for invalid in ["", "a/#/b", "a+", "a/b#", "#/a", "a\u{0}b"] {
            #expect(!MQTTTopic.isValidFilter(invalid), "\(invalid)")
        }
    }

    @Test func validatesTopics() {
        for valid in ["a", "a/b", "outlets/abc/telemetry", "/", "a b/ç"] {
            #expect(MQTTTopic.isValidTopic(valid), "\(valid)")
        }
        for invalid in ["", "a/+", "#", "a/#", "a\u{0}b"] {
            #expect(!MQTTTopic.isValidTopic(invalid), "\(invalid)")
        }
    }
}
