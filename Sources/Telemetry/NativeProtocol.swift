/// outletd's own MQTT protocol: topics `<prefix>/<code>/<kind>` and JSON telemetry payloads.
///
/// The prefix is configuration (default `outlets`) and may have several levels (`site1/outlets`). See
/// `NativeProtocol+Telemetry.swift` for the payload rules.
public enum NativeProtocol {
    /// The last topic level: what the message is about.
    public enum TopicKind: String, Sendable, CaseIterable {
        /// Readings published by the outlet (a JSON object or an array of buffered ones).
        case telemetry
        /// The outlet's reported on/off state (retained).
        case state
        /// The outlet's `online` / `offline` (last will, retained).
        case availability
        /// An operator's `on` / `off` / `toggle` request.
        case set
        /// What outletd asks the outlet to do.
        case command
    }

    /// A topic recognised as `<prefix>/<code>/<kind>`.
    public struct TopicMatch: Sendable, Equatable {
        /// The device-code level exactly as it appeared; validate it with ``DeviceCode`` separately (an invalid
        /// code is a different rejection from an unknown topic).
        public var deviceCode: String
        /// The last topic level.
        public var kind: TopicKind

        /// Creates a match.
        public init(deviceCode: String, kind: TopicKind) {
            self.deviceCode = deviceCode
            self.kind = kind
        }
    }

    /// Splits `topic` into device code and kind.
    ///
    /// - Parameter prefix: one or more levels (`outlets`, `site1/outlets`); trailing `/` are ignored and an empty
    ///   prefix means topics `<code>/<kind>`.
    /// - Returns: `nil` when the topic is not under `prefix`, does not have exactly one level between the prefix and
    ///   the kind, has an empty code level, names an unknown kind (kinds are case-sensitive), or contains an MQTT
    ///   wildcard (`+`, `#`), which never appears in a published topic name.
    public static func parseTopic(_ topic: String, prefix: String) -> TopicMatch? {
        let slash = UInt8(ascii: "/")
        let topicBytes = topic.utf8
        guard !topicBytes.contains(UInt8(ascii: "+")), !topicBytes.contains(UInt8(ascii: "#")) else { return nil }
        // Levels are compared as bytes: a combining mark after "/" must not glue two levels into one Character.
        let levels = topicBytes.split(separator: slash, omittingEmptySubsequences: false)
        let normalizedPrefix = normalize(prefix)
        let prefixLevels =
            normalizedPrefix.isEmpty
            ? [] : normalizedPrefix.utf8.split(separator: slash, omittingEmptySubsequences: false)
        guard levels.count == prefixLevels.count + 2 else { return nil }
        for (level, expected) in zip(levels, prefixLevels) where !level.elementsEqual(expected) {
            return nil
        }
        let codeLevel = levels[prefixLevels.count]
        let kindLevel = levels[prefixLevels.count + 1]
        guard !codeLevel.isEmpty, let kind = TopicKind(rawValue: String(decoding: kindLevel, as: UTF8.self)) else {
            return nil
        }
        return TopicMatch(deviceCode: String(decoding: codeLevel, as: UTF8.self), kind: kind)
    }

    /// The topic `<prefix>/<code>/<kind>` (trailing `/` of the prefix ignored; an empty prefix gives `<code>/<kind>`).
    public static func topic(prefix: String, code: DeviceCode, kind: TopicKind) -> String {
        let normalizedPrefix = normalize(prefix)
        if normalizedPrefix.isEmpty {
            return "\(code.rawValue)/\(kind.rawValue)"
        }
        return "\(normalizedPrefix)/\(code.rawValue)/\(kind.rawValue)"
    }

    private static func normalize(_ prefix: String) -> Substring {
        var normalized = Substring(prefix)
        while normalized.utf8.last == UInt8(ascii: "/") {
            normalized = normalized.dropLast()
        }
        return normalized
    }
}
