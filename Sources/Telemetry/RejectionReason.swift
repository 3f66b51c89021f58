/// Why a message, or one reading inside it, was not stored. The raw values are stable: they are stored in the
/// rejected-messages table and used as metric labels.
public enum RejectionReason: String, Sendable, CaseIterable, Codable {
    /// The topic does not follow the configured layout.
    case invalidTopic = "invalid_topic"
    /// The device code in the topic does not match `^[A-Za-z0-9_-]{1,64}$`.
    case invalidDeviceCode = "invalid_device_code"
    /// The code is valid but not registered (decided by the daemon's registry, never by a decoder).
    case unknownDevice = "unknown_device"
    /// The device is registered but disabled (decided by the daemon, never by a decoder).
    case disabledDevice = "disabled_device"
    /// The payload is bigger than ``ValidationLimits/maxPayloadBytes`` (checked before parsing).
    case payloadTooLarge = "payload_too_large"
    /// The payload is empty (or only JSON whitespace).
    case emptyPayload = "empty_payload"
    /// The payload is not valid JSON; the detail carries the parser's byte offset and message.
    case malformedJSON = "malformed_json"
    /// A value has the wrong JSON type: `"voltage": "abc"`, a top level that is not an object or array, an array
    /// element that is not an object, an empty array.
    case wrongType = "wrong_type"
    /// A required field (voltage or current) is absent or `null`.
    case missingField = "missing_field"
    /// A value is not finite or lies outside ``ValidationLimits``.
    case outOfRange = "out_of_range"
    /// `ts` is present but cannot be understood (not RFC 3339, no UTC offset, negative, beyond year 9999…).
    case invalidTimestamp = "invalid_timestamp"
    /// A JSON array holds more than ``ValidationLimits/maxReadingsPerMessage`` readings.
    case tooManyReadings = "too_many_readings"
    /// A switch request on `<prefix>/<code>/set` that is not `on`, `off`, `toggle` or a JSON object naming one.
    case invalidCommand = "invalid_command"
    /// A state or availability report that is not `on`/`off` (or JSON naming one) or `online`/`offline`.
    case invalidStateReport = "invalid_state_report"
}
