import Foundation
import Telemetry

/// Tasmota's MQTT topics and payloads (see PROTOCOLS.md, "Tasmota").
///
/// Topics are `FullTopic + suffix`; the FullTopic is a per-device pattern of `%prefix%`, `%topic%` and literal
/// levels in any order (default `%prefix%/%topic%/`). Readings come from `SENSOR` and `STATUS8` (`StatusSNS`),
/// state from `RESULT`, `POWER<n>` and `STATE`, availability from `LWT`.
public enum TasmotaProtocol {
    /// The default FullTopic.
    public static let defaultFullTopic = "%prefix%/%topic%/"

    /// The three prefixes (`SetPrefix1..3`): command, status, telemetry.
    public struct Prefixes: Sendable, Equatable, Hashable {
        public var command: String
        public var status: String
        public var telemetry: String

        /// Creates prefixes; defaults `cmnd`, `stat`, `tele`.
        public init(command: String = "cmnd", status: String = "stat", telemetry: String = "tele") {
            self.command = command
            self.status = status
            self.telemetry = telemetry
        }
    }

    /// A topic split by a FullTopic pattern.
    public struct TopicMatch: Sendable, Equatable {
        /// The `%prefix%` level.
        public var prefix: String
        /// The `%topic%` level: the device's topic.
        public var deviceTopic: String
        /// Everything after the FullTopic (`SENSOR`, `POWER2`, `RESULT`…).
        public var suffix: String

        public init(prefix: String, deviceTopic: String, suffix: String) {
            self.prefix = prefix
            self.deviceTopic = deviceTopic
            self.suffix = suffix
        }
    }

    /// Splits `topic` by `fullTopic`; `nil` when it does not fit (literal levels differ, no suffix, wildcards).
    public static func match(_ topic: String, fullTopic: String) -> TopicMatch? {
        guard !topic.contains("+"), !topic.contains("#") else { return nil }
        let patternLevels = levels(fullTopic)
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard topicLevels.count == patternLevels.count + 1 else { return nil }
        var prefix: Substring?
        var deviceTopic: Substring?
        for (level, pattern) in zip(topicLevels, patternLevels) {
            switch pattern {
            case "%prefix%": prefix = level
            case "%topic%": deviceTopic = level
            default: guard level == pattern else { return nil }
            }
        }
        guard let prefix, let deviceTopic, !deviceTopic.isEmpty, let suffix = topicLevels.last, !suffix.isEmpty
        else { return nil }
        return TopicMatch(prefix: String(prefix), deviceTopic: String(deviceTopic), suffix: String(suffix))
    }

    /// The topic `fullTopic` with `%prefix%` and `%topic%` filled in, followed by `suffix` (`+` for a filter).
    public static func topic(fullTopic: String, prefix: String, deviceTopic: String, suffix: String) -> String {
        let filled = levels(fullTopic).map { level -> Substring in
            switch level {
            case "%prefix%": Substring(prefix)
            case "%topic%": Substring(deviceTopic)
            default: level
            }
        }
        return (filled + [Substring(suffix)]).joined(separator: "/")
    }

    /// Whether `fullTopic` holds both `%prefix%` and `%topic%` exactly once and no empty level.
    public static func isValidFullTopic(_ fullTopic: String) -> Bool {
        let parts = levels(fullTopic)
        return parts.filter { $0 == "%prefix%" }.count == 1 && parts.filter { $0 == "%topic%" }.count == 1
            && !parts.contains { $0.isEmpty || $0.contains("+") || $0.contains("#") }
    }

    /// The subscriptions outletd needs for devices using `fullTopic`.
    public static func subscriptions(fullTopic: String, prefixes: Prefixes) -> [String] {
        [
            topic(fullTopic: fullTopic, prefix: prefixes.telemetry, deviceTopic: "+", suffix: "SENSOR"),
            topic(fullTopic: fullTopic, prefix: prefixes.telemetry, deviceTopic: "+", suffix: "STATE"),
            topic(fullTopic: fullTopic, prefix: prefixes.telemetry, deviceTopic: "+", suffix: "LWT"),
            topic(fullTopic: fullTopic, prefix: prefixes.status, deviceTopic: "+", suffix: "+"),
        ]
    }

    private static func levels(_ fullTopic: String) -> [Substring] {
        var pattern = Substring(fullTopic)
        while pattern.hasSuffix("/") { pattern = pattern.dropLast() }
        return pattern.split(separator: "/", omittingEmptySubsequences: false)
    }

    // MARK: - Readings

    /// Decodes `tele/<t>/SENSOR` or `stat/<t>/STATUS8` (`{"StatusSNS":{…}}`) for relay `channel` (1-based), one
    /// of `channelCount` relays of the device registered as outlets, the lowest of them `meterChannel`.
    ///
    /// `ENERGY` values that are arrays are indexed by channel; `Voltage` (shared) applies to every channel. When
    /// `Power` is an array (a meter per relay), other scalars are no one relay's value (a summed `Total`) and are
    /// ignored. When `Power` is a number on a device with several registered relays, the device has one meter:
    /// its reading belongs to the lowest registered relay (`meterChannel`) and is no reading of the others
    /// (``IgnoredKind/meterOfAnotherChannel``). A `SENSOR` without `ENERGY` (a device whose sensors are not a
    /// meter) is ``IgnoredKind/noMeter``.
    /// `Total` is kWh (stored as Wh). `Time` without a UTC offset is device local time: it is ignored and the
    /// receive time is stored (rule 6); with an offset or as an epoch number it is used when within the skew.
    public static func decodeSensor(
        _ payload: [UInt8], channel: Int = 1, channelCount: Int = 1, meterChannel: Int? = nil, receivedAt: Date,
        limits: ValidationLimits
    ) -> DecodedMessage {
        let root: [String: JSONValue]
        switch PayloadText.object(payload, limits: limits) {
        case .failure(let rejection): return DecodedMessage(rejections: [rejection])
        case .success(let members): root = members
        }
        var body = root
        if case .object(let wrapped)? = root["StatusSNS"] { body = wrapped }
        guard case .object(let energy)? = body["ENERGY"] else {
            return .ignored(.noMeter)
        }
        var perRelayMeters = false
        if case .array? = energy["Power"] { perRelayMeters = true }
        let oneMeterForSeveral = channelCount > 1 && !perRelayMeters
        if oneMeterForSeveral && channel != (meterChannel ?? 1) {
            return .ignored(.meterOfAnotherChannel)
        }
        func value(_ key: String, shared: Bool = false) -> Double? {
            switch energy[key] {
            case .array(let items)?:
                guard channel >= 1, channel <= items.count else { return nil }
                return PayloadText.number(items[channel - 1])
            case let scalar?:
                guard shared || channelCount <= 1 || oneMeterForSeveral else { return nil }
                return PayloadText.number(scalar)
            case nil:
                return nil
            }
        }
        var deviceTime: Date?
        switch body["Time"] {
        case .string(let text)?:
            deviceTime = RFC3339.parse(text)?.date
        case .number(let seconds)? where seconds.isFinite && seconds >= 0 && seconds < 253_402_300_799:
            deviceTime = Date(timeIntervalSince1970: seconds)
        default:
            deviceTime = nil
        }
        return ReadingBuilder.message(
            ReadingBuilder.build(
                powerWatts: value("Power"), voltageVolts: value("Voltage", shared: true),
                currentAmperes: value("Current"), powerFactor: value("Factor"),
                energyWattHours: value("Total").map { $0 * 1_000 }, deviceTime: deviceTime,
                receivedAt: receivedAt, limits: limits))
    }

    // MARK: - State and availability

    /// The configured words for on and off (`StateText`, discovery `state`); compared case-insensitively.
    public struct StateWords: Sendable, Equatable, Hashable {
        public var on: String
        public var off: String

        /// Creates words; defaults `ON` / `OFF`.
        public init(on: String = "ON", off: String = "OFF") {
            self.on = on
            self.off = off
        }
    }

    /// Reads relay `channel`'s state from a `RESULT`, `STATE` or `POWER<n>` message.
    ///
    /// - Parameter suffix: the topic's last level. A plain payload counts only on `POWER<n>` for this channel
    ///   (`POWER` = `POWER1`); JSON counts on any of them when it holds this channel's key (`POWER` or `POWER1`
    ///   for channel 1, `POWER<n>` otherwise).
    /// - Returns: `nil` when the message says nothing about this channel (another command's `RESULT`).
    public static func stateReport(
        _ payload: [UInt8], suffix: String, channel: Int, words: StateWords = StateWords()
    ) -> Result<StateReport, Rejection>? {
        let text = PayloadText.trimmed(payload)
        let keys = channel == 1 ? ["POWER", "POWER1"] : ["POWER\(channel)"]
        if text.hasPrefix("{") {
            guard case .object(let members)? = try? JSONParser.parse(payload) else {
                return .failure(Rejection(reason: .invalidStateReport, detail: "not a JSON object"))
            }
            guard let key = keys.first(where: { members[$0] != nil }) else { return nil }
            guard case .string(let word)? = members[key] else {
                return .failure(Rejection(reason: .invalidStateReport, detail: "\(key) is not a word"))
            }
            return state(word, words: words)
        }
        guard keys.contains(suffix.uppercased()) else { return nil }
        return state(text, words: words)
    }

    private static func state(_ word: String, words: StateWords) -> Result<StateReport, Rejection> {
        let lowered = word.lowercased()
        if lowered == words.on.lowercased() || lowered == "on" || lowered == "1" {
            return .success(StateReport(state: .on))
        }
        if lowered == words.off.lowercased() || lowered == "off" || lowered == "0" {
            return .success(StateReport(state: .off))
        }
        return .failure(Rejection(reason: .invalidStateReport, detail: "\"\(word.prefix(40))\" is not on or off"))
    }

    /// Reads `LWT`: `Online` / `Offline` (or the configured words), case-insensitive.
    public static func availability(
        _ payload: [UInt8], onlineWord: String = "Online", offlineWord: String = "Offline"
    ) -> Result<Bool, Rejection> {
        let word = PayloadText.trimmed(payload).lowercased()
        if word == onlineWord.lowercased() { return .success(true) }
        if word == offlineWord.lowercased() { return .success(false) }
        return .failure(Rejection(reason: .invalidStateReport, detail: "LWT \"\(word.prefix(40))\" is not a word"))
    }

    // MARK: - Commands

    /// `cmnd/<t>/POWER<n>` with `ON` / `OFF`.
    public static func commandMessage(
        fullTopic: String, prefixes: Prefixes, deviceTopic: String, channel: Int, state: SwitchState
    ) -> (topic: String, payload: [UInt8]) {
        (
            topic(fullTopic: fullTopic, prefix: prefixes.command, deviceTopic: deviceTopic, suffix: "POWER\(channel)"),
            Array((state == .on ? "ON" : "OFF").utf8)
        )
    }
}
