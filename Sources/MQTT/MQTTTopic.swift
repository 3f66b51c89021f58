import CMosquitto

/// Topic filter matching and validation, as libmosquitto and the broker do it.
public enum MQTTTopic {
    /// Whether `topic` matches the subscription `filter` (`+` one level, `#` the rest, `$`-topics not
    /// matched by leading wildcards). False when either is invalid.
    public static func matches(filter: String, topic: String) -> Bool {
        var result = false
        let returnCode = mosquitto_topic_matches_sub(filter, topic, &result)
        return returnCode == MOSQ_ERR_SUCCESS.rawValue && result
    }

    /// Whether `filter` may be subscribed to: valid UTF-8, not empty, `+` and `#` only as whole levels and
    /// `#` only last.
    public static func isValidFilter(_ filter: String) -> Bool {
        !filter.isEmpty && mosquitto_sub_topic_check(filter) == MOSQ_ERR_SUCCESS.rawValue
            && isValidUTF8Topic(filter)
    }

    /// Whether `topic` may be published to: not empty and without wildcards.
    public static func isValidTopic(_ topic: String) -> Bool {
        !topic.isEmpty && mosquitto_pub_topic_check(topic) == MOSQ_ERR_SUCCESS.rawValue
            && isValidUTF8Topic(topic)
    }

    private static func isValidUTF8Topic(_ text: String) -> Bool {
        let length = text.utf8.count
        guard length <= 65_535 else { return false }
        return mosquitto_validate_utf8(text, Int32(length)) == MOSQ_ERR_SUCCESS.rawValue
    }
}
