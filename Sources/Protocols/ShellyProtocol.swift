import Foundation
import Telemetry

/// Shelly Gen1 (Plug, Plug S): one plain value per topic under `<gen1 prefix>/<id>/` (see PROTOCOLS.md).
public enum ShellyGen1Protocol {
    /// What a Gen1 topic carries.
    public enum TopicKind: Sendable, Equatable {
        /// `relay/<n>`: `on` / `off` / `overpower`.
        case relayState(channel: Int)
        /// `relay/<n>/power`: W.
        case power(channel: Int)
        /// `relay/<n>/energy`: watt-minutes.
        case energy(channel: Int)
        /// `online`: `true` / `false`.
        case online
        /// `announce` (device-level or `shellies/announce`).
        case announce
    }

    /// Splits `<prefix>/<id>/<rest>`; `nil` for topics outletd does not read (including `relay/<n>/command`).
    public static func parseTopic(_ topic: String, prefix: String = "shellies") -> (id: String, kind: TopicKind)? {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2, levels[0] == prefix else { return nil }
        if levels.count == 2 && levels[1] == "announce" { return ("", .announce) }
        let id = String(levels[1])
        guard !id.isEmpty else { return nil }
        let rest = levels.dropFirst(2)
        switch rest.count {
        case 1 where rest.first == "online": return (id, .online)
        case 1 where rest.first == "announce": return (id, .announce)
        case 2 where rest.first == "relay":
            guard let channel = Int(rest.last ?? ""), channel >= 0 else { return nil }
            return (id, .relayState(channel: channel))
        case 3 where rest.first == "relay":
            guard let channel = Int(rest[rest.startIndex + 1]), channel >= 0 else { return nil }
            switch rest.last {
            case "power": return (id, .power(channel: channel))
            case "energy": return (id, .energy(channel: channel))
            default: return nil
            }
        default: return nil
        }
    }

    /// A plain number payload (`20.58`, padded allowed); `null`/empty is no value.
    public static func number(_ payload: [UInt8]) -> Result<Double?, Rejection> {
        let text = PayloadText.trimmed(payload)
        if text.isEmpty || text == "null" { return .success(nil) }
        guard let value = JSONParser.parseNumber(text), value.isFinite else {
            return .failure(Rejection(reason: .wrongType, detail: "\"\(text.prefix(40))\" is not a number"))
        }
        return .success(value)
    }

    /// The value of `relay/<n>/power`, W: a number; `null` or an empty payload is no power (`missing_field`).
    public static func power(_ payload: [UInt8]) -> Result<Double, Rejection> {
        switch number(payload) {
        case .failure(let rejection): .failure(rejection)
        case .success(nil): .failure(Rejection(reason: .missingField, detail: "power is null"))
        case .success(let watts?): .success(watts)
        }
    }

    /// A reading from a poll's `relay/<n>/power` (W) and `relay/<n>/energy` (watt-minutes ÷ 60 → Wh; see
    /// ``ShellyGen1Polls``). The Plug S has no voltage or current: power alone is stored.
    public static func reading(
        powerWatts: Double, energyWattMinutes: Double?, receivedAt: Date, limits: ValidationLimits
    ) -> DecodedMessage {
        ReadingBuilder.message(
            ReadingBuilder.build(
                powerWatts: powerWatts, voltageVolts: nil, currentAmperes: nil, powerFactor: nil,
                energyWattHours: energyWattMinutes.map { $0 / 60 }, deviceTime: nil, receivedAt: receivedAt,
                limits: limits))
    }

    /// ``reading(powerWatts:energyWattMinutes:receivedAt:limits:)`` from the power message's payload.
    public static func reading(
        powerPayload: [UInt8], energyWattMinutes: Double?, receivedAt: Date, limits: ValidationLimits
    ) -> DecodedMessage {
        switch power(powerPayload) {
        case .failure(let rejection): DecodedMessage(rejections: [rejection])
        case .success(let watts):
            reading(powerWatts: watts, energyWattMinutes: energyWattMinutes, receivedAt: receivedAt, limits: limits)
        }
    }

    /// `relay/<n>`: `on`, `off`, or `overpower` (the relay switched itself off).
    public static func stateReport(_ payload: [UInt8]) -> Result<StateReport, Rejection> {
        switch PayloadText.trimmed(payload).lowercased() {
        case "on": .success(StateReport(state: .on))
        case "off", "overpower": .success(StateReport(state: .off))
        case let word: .failure(Rejection(reason: .invalidStateReport, detail: "\"\(word.prefix(40))\" is not on/off"))
        }
    }

    /// `online`: `true` / `false`.
    public static func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        switch PayloadText.trimmed(payload).lowercased() {
        case "true", "1", "online": .success(true)
        case "false", "0", "offline": .success(false)
        case let word: .failure(Rejection(reason: .invalidStateReport, detail: "\"\(word.prefix(40))\" not a bool"))
        }
    }

    /// `<prefix>/<id>/relay/<n>/command` with `on` / `off`.
    public static func commandMessage(prefix: String = "shellies", id: String, channel: Int, state: SwitchState) -> (
        topic: String, payload: [UInt8]
    ) {
        ("\(prefix)/\(id)/relay/\(channel)/command", Array(state.rawValue.utf8))
    }
}

/// Shelly Gen2/Gen3: `<prefix>/status/switch:<n>`, `<prefix>/events/rpc`, `<prefix>/online`, `<prefix>/rpc`.
public enum ShellyGen2Protocol {
    /// What a Gen2 topic carries.
    public enum TopicKind: Sendable, Equatable {
        /// `status/switch:<n>` or `status/pm1:<n>`: a full component status.
        case status(component: String)
        /// `events/rpc`: notifications (`NotifyStatus` deltas).
        case events
        /// `online`.
        case online
        /// `rpc` under outletd's own reply prefix: a reply.
        case rpc
    }

    /// Splits `<prefix>/<rest>`; the prefix may have several levels. `nil` for other topics.
    public static func parseTopic(_ topic: String) -> (prefix: String, kind: TopicKind)? {
        guard !topic.contains("+"), !topic.contains("#") else { return nil }
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2, levels.allSatisfy({ !$0.isEmpty }) else { return nil }
        func prefix(dropping count: Int) -> String { levels.dropLast(count).joined(separator: "/") }
        if levels.count >= 3, levels[levels.count - 2] == "status" {
            let component = String(levels[levels.count - 1])
            guard component.hasPrefix("switch:") || component.hasPrefix("pm1:") else { return nil }
            return (prefix(dropping: 2), .status(component: component))
        }
        if levels.count >= 3, levels[levels.count - 2] == "events", levels.last == "rpc" {
            return (prefix(dropping: 2), .events)
        }
        if levels.last == "online" { return (prefix(dropping: 1), .online) }
        if levels.last == "rpc" { return (prefix(dropping: 1), .rpc) }
        return nil
    }

    /// The component name of channel `channel`: `switch:<n>`, or `pm1:<n>` for meters without a switch.
    public static func components(channel: Int) -> [String] { ["switch:\(channel)", "pm1:\(channel)"] }

    /// The last known status of one component, in stored units; deltas are overlaid on it.
    public struct MeterStatus: Sendable, Equatable {
        /// `output`: the relay state (never inferred from power, rule 7).
        public var output: Bool?
        /// `apower`, W.
        public var powerWatts: Double?
        /// `voltage`, V.
        public var voltageVolts: Double?
        /// `current`, A.
        public var currentAmperes: Double?
        /// `pf`.
        public var powerFactor: Double?
        /// `aenergy.total`, Wh.
        public var energyWattHours: Double?

        /// An empty status.
        public init() {}

        /// This status with the fields present in `delta` replaced (`null` clears a field: no value).
        public func overlaid(with delta: [String: JSONValue]) -> MeterStatus {
            var next = self
            if let value = delta["output"] {
                if case .bool(let isOn) = value { next.output = isOn } else { next.output = nil }
            }
            if let value = delta["apower"] { next.powerWatts = PayloadText.number(value) }
            if let value = delta["voltage"] { next.voltageVolts = PayloadText.number(value) }
            if let value = delta["current"] { next.currentAmperes = PayloadText.number(value) }
            if let value = delta["pf"] { next.powerFactor = PayloadText.number(value) }
            if let value = delta["aenergy"] { next.energyWattHours = PayloadText.number(value["total"]) }
            return next
        }

        /// Whether `delta` holds any meter field (a reading is due).
        public static func hasMeterFields(_ delta: [String: JSONValue]) -> Bool {
            ["apower", "voltage", "current", "aenergy", "pf"].contains { delta[$0] != nil }
        }
    }

    /// One update of a component: its fields and the device time (`params.ts` of a notification).
    public struct ComponentUpdate: Sendable, Equatable {
        public var component: String
        public var fields: [String: JSONValue]
        public var deviceTime: Date?
    }

    /// The component updates of a `status/<component>` message (one) or of an `events/rpc` `NotifyStatus` (or
    /// `NotifyFullStatus`) frame (one per `switch:`/`pm1:` member); other notifications yield none.
    public static func updates(
        _ payload: [UInt8], kind: TopicKind, limits: ValidationLimits
    ) -> Result<[ComponentUpdate], Rejection> {
        let members: [String: JSONValue]
        switch PayloadText.object(payload, limits: limits) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let object): members = object
        }
        switch kind {
        case .status(let component):
            return .success([ComponentUpdate(component: component, fields: members, deviceTime: nil)])
        case .events:
            guard case .string(let method)? = members["method"],
                method == "NotifyStatus" || method == "NotifyFullStatus",
                case .object(let params)? = members["params"]
            else { return .success([]) }
            var deviceTime: Date?
            if let seconds = PayloadText.number(params["ts"]), seconds.isFinite, seconds >= 0,
                seconds < 253_402_300_799
            {
                deviceTime = Date(timeIntervalSince1970: seconds)
            }
            var result: [ComponentUpdate] = []
            for (name, value) in params where name.hasPrefix("switch:") || name.hasPrefix("pm1:") {
                guard case .object(let fields) = value else { continue }
                result.append(ComponentUpdate(component: name, fields: fields, deviceTime: deviceTime))
            }
            return .success(result.sorted { $0.component < $1.component })
        case .online, .rpc:
            return .success([])
        }
    }

    /// A reading from an overlaid status.
    public static func reading(
        _ status: MeterStatus, deviceTime: Date?, receivedAt: Date, limits: ValidationLimits
    ) -> DecodedMessage {
        ReadingBuilder.message(
            ReadingBuilder.build(
                powerWatts: status.powerWatts, voltageVolts: status.voltageVolts,
                currentAmperes: status.currentAmperes, powerFactor: status.powerFactor,
                energyWattHours: status.energyWattHours, deviceTime: deviceTime, receivedAt: receivedAt,
                limits: limits))
    }

    /// `online`: `true` / `false`.
    public static func availability(_ payload: [UInt8]) -> Result<Bool, Rejection> {
        ShellyGen1Protocol.availability(payload)
    }

    /// The `Switch.Set` request on `<prefix>/rpc`; the reply comes on `<replyPrefix>/rpc` with the same `id`.
    public static func commandMessage(
        prefix: String, replyPrefix: String, channel: Int, commandID: Int64, state: SwitchState
    ) -> (topic: String, payload: [UInt8]) {
        let payload =
            #"{"id":\#(commandID),"src":\#(jsonString(replyPrefix)),"method":"Switch.Set","params":{"id":\#(channel),"on":\#(state.isOn)}}"#
        return ("\(prefix)/rpc", Array(payload.utf8))
    }

    /// A JSON-RPC reply: its id, and `was_on` (the state before the call) or the error.
    public enum Reply: Sendable, Equatable {
        case success(id: Int64, wasOn: Bool?)
        case failure(id: Int64, reason: String)
    }

    /// Reads a reply; `nil` when it is not one (no numeric or numeric-string `id`).
    public static func reply(_ payload: [UInt8]) -> Reply? {
        guard case .object(let members)? = try? JSONParser.parse(payload),
            let number = PayloadText.number(members["id"]), number.rounded() == number, abs(number) < 9e15
        else { return nil }
        let id = Int64(number)
        if case .object(let error)? = members["error"] {
            let code = PayloadText.number(error["code"]).map { String(Int64($0)) } ?? "?"
            var message = ""
            if case .string(let text)? = error["message"] { message = text }
            return .failure(id: id, reason: CommandReason(.deviceError, "device error \(code): \(message)").description)
        }
        var wasOn: Bool?
        if case .bool(let value)? = members["result"]?["was_on"] { wasOn = value }
        return .success(id: id, wasOn: wasOn)
    }
}
