import Telemetry

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
        // Levels are compared as bytes: a combining mark after "/" must not glue two levels into one Character.
        // Every message is routed through here (twice: in the MQTT callback and in the writer), so the
        // topic is scanned in place rather than split into arrays of levels.
        let normalizedPrefix = normalize(prefix)
        return withUTF8(Substring(topic)) { topicBytes in
            withUTF8(normalizedPrefix) { parseTopic(topicBytes, prefix: $0) }
        }
    }

    /// `body` over the UTF-8 of `text`: in place (native strings), else over a copy.
    private static func withUTF8<Result>(_ text: Substring, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    /// ``parseTopic(_:prefix:)`` over the topic's bytes and the normalized prefix's.
    private static func parseTopic(_ topic: UnsafeBufferPointer<UInt8>, prefix: UnsafeBufferPointer<UInt8>)
        -> TopicMatch?
    {
        let slash = UInt8(ascii: "/")
        guard !topic.contains(UInt8(ascii: "+")), !topic.contains(UInt8(ascii: "#")) else { return nil }
        // The prefix's levels, then one more "/": the same levels as the topic's first ones.
        var start = 0
        if !prefix.isEmpty {
            guard topic.count > prefix.count, topic[prefix.count] == slash,
                UnsafeBufferPointer(rebasing: topic[0..<prefix.count]).elementsEqual(prefix)
            else { return nil }
            start = prefix.count + 1
        }
        // Then exactly two levels: a non-empty code and the kind (no kind's name holds a "/").
        guard let separator = topic[start...].firstIndex(of: slash), separator > start,
            let kind = TopicKind(rawValue: String(decoding: topic[(separator + 1)...], as: UTF8.self))
        else { return nil }
        return TopicMatch(deviceCode: String(decoding: topic[start..<separator], as: UTF8.self), kind: kind)
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
