import Telemetry

/// Switching in the native protocol.
///
/// - `<prefix>/<code>/set` (operator): `on`, `off`, `toggle`, or `{"state":"on","request_id":"r1","requested_by":"ana"}`
///   (`state` may also be `true`/`false`).
/// - `<prefix>/<code>/command` (outletd, QoS 1): `{"command_id":42,"state":"on"}`.
/// - `<prefix>/<code>/state` (outlet, retained): `on` / `off`, or `{"state":"on","command_id":42}`.
/// - `<prefix>/<code>/availability` (outlet, last will, retained): `online` / `offline`.
/// - `<prefix>/<code>/set/result` (outletd): one JSON object per transition, see ``SwitchResult``.
///
/// Words are case-insensitive and surrounding whitespace is ignored.
extension NativeProtocol {
    /// Longest `request_id` / `requested_by` accepted, in characters.
    public static let maxRequestFieldLength = 128

    /// Parses an operator's request.
    public static func parseSetRequest(_ payload: [UInt8], maxPayloadBytes: Int = 4_096) -> Result<
        SwitchRequest, Rejection
    > {
        guard payload.count <= maxPayloadBytes else {
            return .failure(
                Rejection(reason: .payloadTooLarge, detail: "\(payload.count) bytes, at most \(maxPayloadBytes)"))
        }
        let word = plainWord(payload)
        guard !word.isEmpty else { return .failure(Rejection(reason: .emptyPayload, detail: "empty request")) }
        if word.first != "{" {
            guard let value = SwitchRequestValue(rawValue: word) else {
                return .failure(invalidCommand("\"\(word.prefix(40))\" is not on, off or toggle"))
            }
            return .success(SwitchRequest(value: value))
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(payload)
        } catch {
            return .failure(Rejection(reason: .malformedJSON, detail: "\(error)"))
        }
        guard case .object(let members) = document else {
            return .failure(Rejection(reason: .wrongType, detail: "a request must be a word or a JSON object"))
        }
        let value: SwitchRequestValue
        switch members["state"] {
        case .string(let text)?:
            guard let parsed = SwitchRequestValue(rawValue: text.lowercased()) else {
                return .failure(invalidCommand("state \"\(text.prefix(40))\" is not on, off or toggle"))
            }
            value = parsed
        case .bool(let isOn)?:
            value = isOn ? .on : .off
        case nil, .null?:
            return .failure(Rejection(reason: .missingField, detail: "state is missing"))
        case let other?:
            return .failure(invalidCommand("state must be a string or a boolean, not \(other.typeName)"))
        }
        var request = SwitchRequest(value: value)
        switch text(members["request_id"]) {
        case .invalid(let detail): return .failure(invalidCommand("request_id \(detail)"))
        case .valid(let requestID): request.requestID = requestID
        }
        switch text(members["requested_by"]) {
        case .invalid(let detail): return .failure(invalidCommand("requested_by \(detail)"))
        case .valid(let requestedBy): request.requestedBy = requestedBy
        }
        return .success(request)
    }

    /// Parses an outlet's state report.
    public static func parseStateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        let word = plainWord(payload)
        if word.first != "{" {
            guard let state = SwitchState(rawValue: word) else {
                return .failure(invalidReport("state \"\(word.prefix(40))\" is not on or off"))
            }
            return .success(StateReport(state: state))
        }
        guard case .object(let members)? = try? JSONParser.parse(payload) else {
            return .failure(invalidReport("not a JSON object"))
        }
        let state: SwitchState
        switch members["state"] {
        case .string(let text)?:
            guard let parsed = SwitchState(rawValue: text.lowercased()) else {
                return .failure(invalidReport("state \"\(text.prefix(40))\" is not on or off"))
            }
            state = parsed
        case .bool(let isOn)?:
            state = SwitchState(isOn: isOn)
        default:
            return .failure(invalidReport("state is missing or not on/off"))
        }
        var commandID: Int64?
        if let number = members["command_id"]?.numberValue(), number.rounded() == number, abs(number) < 9e15 {
            commandID = Int64(number)
        }
        return .success(StateReport(state: state, commandID: commandID))
    }

    /// Parses an availability report: `true` for `online`, `false` for `offline`.
    public static func parseAvailability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        switch plainWord(payload) {
        case "online": .success(true)
        case "offline": .success(false)
        case let word: .failure(invalidReport("availability \"\(word.prefix(40))\" is not online or offline"))
        }
    }

    /// The payload of `<prefix>/<code>/command`: `{"command_id":42,"state":"on"}`.
    public static func encodeCommand(id: Int64, state: SwitchState) -> [UInt8] {
        Array(#"{"command_id":\#(id),"state":"\#(state.rawValue)"}"#.utf8)
    }

    /// The payload of `<prefix>/<code>/command` as an outlet reads it back (the simulated outlet of the tests).
    public static func decodeCommand(_ payload: [UInt8]) -> (id: Int64, state: SwitchState)? {
        guard case .object(let members)? = try? JSONParser.parse(payload),
            let id = members["command_id"]?.numberValue(acceptingNumericString: false),
            case .string(let text)? = members["state"], let state = SwitchState(rawValue: text)
        else { return nil }
        return (Int64(id), state)
    }

    /// The payload without surrounding whitespace, lower-cased when it is a plain word (not JSON).
    private static func plainWord(_ payload: [UInt8]) -> String {
        let isWhitespace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = payload.firstIndex(where: { !isWhitespace($0) }),
            let last = payload.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        let word = String(decoding: payload[first...last], as: UTF8.self)
        return word.first == "{" ? word : word.lowercased()
    }

    private enum TextField {
        case valid(String?)
        case invalid(String)
    }

    private static func text(_ value: JSONValue?) -> TextField {
        switch value {
        case nil, .null?:
            return .valid(nil)
        case .string(let text)?:
            guard text.count <= maxRequestFieldLength else {
                return .invalid("longer than \(maxRequestFieldLength) characters")
            }
            return .valid(text.isEmpty ? nil : text)
        case .number(let number)?:
            return .valid(number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : "\(number)")
        case let other?:
            return .invalid("must be a string, not \(other.typeName)")
        }
    }

    private static func invalidCommand(_ detail: String) -> Rejection {
        Rejection(reason: .invalidCommand, detail: detail)
    }

    private static func invalidReport(_ detail: String) -> Rejection {
        Rejection(reason: .invalidStateReport, detail: detail)
    }
}

/// One message on `<prefix>/<code>/set/result`: what became of a request.
///
/// `{"result":"confirmed","command_id":42,"state":"on","request_id":"r1","source":"mqtt","requested_by":"ana",
/// "reason":null,"at":"2026-11-21T15:04:05.250Z"}`; `result` is `accepted`, `sent`, `confirmed`, `timed_out`,
/// `rejected`, `expired` or `superseded`. A request refused before a command existed has no `command_id`.
public struct SwitchResult: Sendable, Equatable {
    public var result: String
    public var commandID: Int64?
    public var state: SwitchState?
    public var requestID: String?
    public var source: String?
    public var requestedBy: String?
    public var reason: String?
    /// RFC 3339 time of the transition.
    public var at: String?

    public init(
        result: String, commandID: Int64? = nil, state: SwitchState? = nil, requestID: String? = nil,
        source: String? = nil, requestedBy: String? = nil, reason: String? = nil, at: String? = nil
    ) {
        self.result = result
        self.commandID = commandID
        self.state = state
        self.requestID = requestID
        self.source = source
        self.requestedBy = requestedBy
        self.reason = reason
        self.at = at
    }

    /// The JSON payload, keys in a fixed order, absent values omitted.
    public var payload: [UInt8] {
        var fields: [String] = [#""result":\#(jsonString(result))"#]
        if let commandID { fields.append(#""command_id":\#(commandID)"#) }
        if let state { fields.append(#""state":"\#(state.rawValue)""#) }
        if let requestID { fields.append(#""request_id":\#(jsonString(requestID))"#) }
        if let source { fields.append(#""source":\#(jsonString(source))"#) }
        if let requestedBy { fields.append(#""requested_by":\#(jsonString(requestedBy))"#) }
        if let reason { fields.append(#""reason":\#(jsonString(reason))"#) }
        if let at { fields.append(#""at":\#(jsonString(at))"#) }
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }
}
