import Foundation
import Telemetry

/// Native telemetry payloads.
///
/// A payload is a JSON object such as `{"voltage": 227.1, "current": 0.412}`, or a JSON array of such objects
/// (readings buffered while the outlet was offline). Keys:
///
/// | key | meaning | rules |
/// |---|---|---|
/// | `voltage` | V | required, within ``ValidationLimits/voltageVolts`` |
/// | `current` | A | required, within ``ValidationLimits/currentAmperes`` |
/// | `power` | active power, W | optional (default voltage × current), within ``ValidationLimits/powerWatts`` |
/// | `pf` | power factor | optional, within ``ValidationLimits/powerFactor`` |
/// | `energy_wh` | cumulative energy, Wh | optional, ≥ 0 |
/// | `ts` | device time | optional; RFC 3339 string **with** offset, or epoch number (see below) |
/// | `seq` | sequence number | optional, integer ≥ 0 |
///
/// Unknown keys are ignored; `null` means "no value" (so a `null` voltage or current is a missing field). Numeric
/// fields also accept a string holding a JSON number (`"227.1"`, spaces around it allowed), as real firmwares send.
/// Every number must be finite and inside the limits. Inside an array each element is judged alone.
///
/// `ts` as a number is epoch **seconds** (fractions allowed) when below ``epochMillisecondsThreshold`` (1e11) and
/// epoch **milliseconds** at or above it: 1e11 s would be the year 5138, while 1e11 ms is 1973-03-03T09:46:40Z, so
/// every plausible clock reading falls on the right side. Negative numbers, strings that are not RFC 3339, strings
/// without a UTC offset (ambiguous device local time) and anything past 9999-12-31T23:59:59Z are `invalidTimestamp`.
/// A valid `ts` is used as ``Reading/measuredAt`` only inside the accepted window (see ``ValidationLimits``);
/// otherwise the receive time is stored and ``Reading/deviceTime`` keeps the device's claim.
extension NativeProtocol {
    /// Epoch numbers at or above this value are milliseconds, below it seconds (see the type documentation).
    public static let epochMillisecondsThreshold: Double = 1e11

    /// The latest device time accepted, 9999-12-31T23:59:59Z, in seconds since 1970.
    public static let latestTimestampSeconds: Double = 253_402_300_799

    /// Decodes and validates one telemetry payload. Never throws and never traps, whatever the bytes; the result
    /// always holds at least one reading or one rejection.
    ///
    /// - Parameters:
    ///   - payload: the raw MQTT payload.
    ///   - receivedAt: when the message arrived (stored rounded to whole microseconds).
    ///   - limits: the bounds to enforce.
    public static func decodeTelemetry(
        _ payload: [UInt8],
        receivedAt: Date,
        limits: ValidationLimits
    ) -> DecodedMessage {
        guard !payload.isEmpty else {
            return .rejected(.emptyPayload, "payload is empty")
        }
        guard payload.count <= limits.maxPayloadBytes else {
            return .rejected(
                .payloadTooLarge,
                "payload of \(payload.count) bytes exceeds the limit of \(limits.maxPayloadBytes) bytes"
            )
        }
        let context = DecodingContext(receivedAt: receivedAt, limits: limits)
        let root: JSONValue
        do throws(JSONParseError) {
            // The usual payload, one object: only its reading's members are kept.
            if let values = try JSONParser.parseObject(payload, keeping: ReadingMembers.keys) {
                return context.decodeElement(ReadingMembers(values), index: nil)
            }
            root = try JSONParser.parse(payload)
        } catch {
            if payload.allSatisfy(isJSONWhitespace) {
                return .rejected(.emptyPayload, "payload holds only whitespace")
            }
            return .rejected(.malformedJSON, error.description)
        }

        switch root {
        case .object(let members):
            return context.decodeElement(ReadingMembers(members), index: nil)
        case .array(let elements):
            guard !elements.isEmpty else {
                return .rejected(.wrongType, "empty array: expected at least one reading object")
            }
            guard elements.count <= limits.maxReadingsPerMessage else {
                return .rejected(
                    .tooManyReadings,
                    "\(elements.count) readings exceed the limit of \(limits.maxReadingsPerMessage) per message"
                )
            }
            var result = DecodedMessage()
            result.readings.reserveCapacity(elements.count)
            var times = Set<Date>()
            for (index, element) in elements.enumerated() {
                guard case .object(let members) = element else {
                    result.rejections.append(
                        Rejection(
                            reason: .wrongType,
                            detail: "array element is \(withArticle(element.typeName)), expected an object",
                            index: index
                        )
                    )
                    continue
                }
                let decoded = context.decodeElement(ReadingMembers(members), index: index, of: elements.count)
                for reading in decoded.readings {
                    // Two readings at one time are one row: the first in the array is kept.
                    if times.insert(reading.measuredAt).inserted {
                        result.readings.append(reading)
                    } else {
                        result.duplicates += 1
                    }
                }
                result.rejections += decoded.rejections
            }
            return result
        default:
            return .rejected(
                .wrongType,
                "top level is \(withArticle(root.typeName)), expected an object or an array of objects"
            )
        }
    }

    /// Encodes `reading` as a native JSON object, keys in the order
    /// `{"voltage":…,"current":…,"power":…,"pf":…,"energy_wh":…,"ts":…,"seq":…}`, omitting `nil` fields.
    ///
    /// `ts` is the epoch in whole milliseconds of ``Reading/deviceTime``, or of ``Reading/measuredAt`` when there is
    /// none. Decoding reads values below 1e11 as seconds, so a reading dated before 1973-03-03 does not survive a
    /// round trip. Numbers use the shortest text that reads back to the same `Double`; a non-finite value (which
    /// JSON cannot carry) is written as `null`.
    public static func encodeTelemetry(_ reading: Reading) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(128)
        output.append(UInt8(ascii: "{"))
        func append(_ key: StaticString, _ value: String) {
            if output.count > 1 {
                output.append(UInt8(ascii: ","))
            }
            output.append(UInt8(ascii: "\""))
            key.withUTF8Buffer { output.append(contentsOf: $0) }
            output.append(UInt8(ascii: "\""))
            output.append(UInt8(ascii: ":"))
            output.append(contentsOf: value.utf8)
        }
        func jsonNumber(_ value: Double) -> String {
            value.isFinite ? value.description : "null"
        }
        if let voltage = reading.voltageVolts { append("voltage", jsonNumber(voltage)) }
        if let current = reading.currentAmperes { append("current", jsonNumber(current)) }
        append("power", jsonNumber(reading.powerWatts))
        if let powerFactor = reading.powerFactor { append("pf", jsonNumber(powerFactor)) }
        if let energy = reading.energyWattHours { append("energy_wh", jsonNumber(energy)) }
        let milliseconds = ((reading.deviceTime ?? reading.measuredAt).timeIntervalSince1970 * 1_000).rounded()
        if milliseconds.isFinite && abs(milliseconds) < 9e18 {
            append("ts", String(Int64(milliseconds)))
        }
        if let sequence = reading.sequence { append("seq", String(sequence)) }
        output.append(UInt8(ascii: "}"))
        return output
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

// MARK: - Validation of one reading object

/// Why one reading object was refused; becomes a ``Rejection`` with the element's index.
private struct ReadingFailure: Error {
    var reason: RejectionReason
    var detail: String

    init(_ reason: RejectionReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
}

/// The members of a reading object that decoding reads.
private struct ReadingMembers {
    enum Key: Int, CaseIterable {
        case voltage, current, power, pf, energyWh, ts, seq

        /// The JSON key.
        var name: String { ReadingMembers.keys[rawValue].description }
    }

    /// The JSON keys, in the order of ``Key``.
    static let keys: [StaticString] = ["voltage", "current", "power", "pf", "energy_wh", "ts", "seq"]

    private let values: [JSONValue?]

    /// The values of ``keys``, in their order (``JSONParser/parseObject(_:keeping:maxDepth:)``).
    init(_ values: [JSONValue?]) {
        self.values = values
    }

    init(_ object: [String: JSONValue]) {
        values = Key.allCases.map { object[$0.name] }
    }

    /// The member's value; nil when the object has no such key (a `null` is ``JSONValue/null``).
    subscript(_ key: Key) -> JSONValue? { values[key.rawValue] }
}

/// What every element of one message shares: the receive time, the limits and the two accepted clock windows.
private struct DecodingContext {
    let receivedAt: Date
    let limits: ValidationLimits
    /// Accepted device times for a single object, in seconds since 1970.
    let singleWindow: (lower: Double, upper: Double)
    /// Accepted device times for array elements (buffered readings may be old), in seconds since 1970.
    let arrayWindow: (lower: Double, upper: Double)

    init(receivedAt: Date, limits: ValidationLimits) {
        self.receivedAt = receivedAt.roundedToMicroseconds
        self.limits = limits
        let now = self.receivedAt.timeIntervalSince1970
        singleWindow = (now - limits.maxClockSkew, now + limits.maxClockSkew)
        arrayWindow = (now - max(limits.maxBackfill, limits.maxClockSkew), now + limits.maxClockSkew)
    }

    /// Decodes a single object (`index` nil) or element `index` of an array of `count` elements.
    func decodeElement(_ members: ReadingMembers, index: Int?, of count: Int = 1) -> DecodedMessage {
        do throws(ReadingFailure) {
            return DecodedMessage(readings: [try reading(from: members, index: index, of: count)])
        } catch {
            return DecodedMessage(rejections: [Rejection(reason: error.reason, detail: error.detail, index: index)])
        }
    }

    /// Checks fields in a fixed order (voltage, current, power, pf, energy_wh, seq, ts) and reports the first
    /// problem only, so one bad element yields exactly one rejection.
    private func reading(from members: ReadingMembers, index: Int?, of count: Int) throws(ReadingFailure) -> Reading {
        let voltage = try checked(
            required(members, .voltage), "voltage", unit: "V", within: limits.voltageVolts)
        let current = try checked(
            required(members, .current), "current", unit: "A", within: limits.currentAmperes)
        let power: Double
        if let givenPower = try optionalNumber(members, .power) {
            power = try checked(givenPower, "power", unit: "W", within: limits.powerWatts)
        } else {
            power = try checked(
                voltage * current, "computed power (voltage × current)", unit: "W",
                within: limits.powerWatts)
        }
        let powerFactor = try optionalNumber(members, .pf).map { (value) throws(ReadingFailure) in
            try checked(value, "pf", unit: "", within: limits.powerFactor)
        }
        let energy = try optionalNumber(members, .energyWh).map { (value) throws(ReadingFailure) in
            guard value.isFinite, value >= 0 else {
                throw ReadingFailure(.outOfRange, "energy_wh \(value) Wh must be finite and ≥ 0")
            }
            return value + 0.0
        }
        let sequence = try self.sequence(members)
        let deviceTime = try self.deviceTime(members)

        // Without a usable device time, element `index` of `count` is dated `count - 1 - index` µs before the
        // receive time: readings buffered in one message keep their order and never share a time.
        let earlierMicroseconds = count - 1 - (index ?? 0)
        var measuredAt =
            earlierMicroseconds == 0
            ? receivedAt : receivedAt.addingTimeInterval(-Double(earlierMicroseconds) / 1_000_000).roundedToMicroseconds
        if let deviceTime {
            let window = index != nil ? arrayWindow : singleWindow
            let seconds = deviceTime.timeIntervalSince1970
            if seconds >= window.lower && seconds <= window.upper {
                measuredAt = deviceTime
            }
        }
        return Reading(
            measuredAt: measuredAt,
            receivedAt: receivedAt,
            deviceTime: deviceTime,
            voltageVolts: voltage,
            currentAmperes: current,
            powerWatts: power,
            powerFactor: powerFactor,
            energyWattHours: energy,
            sequence: sequence
        )
    }

    /// A number, a numeric string, or `nil` for an absent or `null` key.
    private func optionalNumber(_ members: ReadingMembers, _ key: ReadingMembers.Key) throws(ReadingFailure) -> Double?
    {
        guard let value = members[key] else { return nil }
        switch value {
        case .null:
            return nil
        case .number(let number):
            return number
        case .string(let text):
            guard let number = value.numberValue(acceptingNumericString: true) else {
                throw ReadingFailure(.wrongType, "\(key.name) \(quoted(text)) is not a number")
            }
            return number
        default:
            throw ReadingFailure(.wrongType, "\(key.name) is \(withArticle(value.typeName)), expected a number")
        }
    }

    private func required(_ members: ReadingMembers, _ key: ReadingMembers.Key) throws(ReadingFailure) -> Double {
        guard let number = try optionalNumber(members, key) else {
            throw ReadingFailure(.missingField, members[key] == nil ? "\(key.name) is missing" : "\(key.name) is null")
        }
        return number
    }

    /// `value` when finite and inside `range` (with -0 turned into 0), else an `outOfRange` failure.
    private func checked(
        _ value: Double,
        _ name: String,
        unit: String,
        within range: ClosedRange<Double>
    ) throws(ReadingFailure) -> Double {
        guard value.isFinite, range.contains(value) else {
            let unitSuffix = unit.isEmpty ? "" : " \(unit)"
            let bounds = "\(compact(range.lowerBound))–\(compact(range.upperBound))\(unitSuffix)"
            throw ReadingFailure(.outOfRange, "\(name) \(value)\(unitSuffix) outside \(bounds)")
        }
        return value + 0.0
    }

    private func sequence(_ members: ReadingMembers) throws(ReadingFailure) -> Int64? {
        guard let value = try optionalNumber(members, .seq) else { return nil }
        guard value.isFinite, value >= 0, value < 9_223_372_036_854_775_808.0 else {
            throw ReadingFailure(.outOfRange, "seq \(value) outside 0–\(Int64.max)")
        }
        guard value.rounded(.towardZero) == value else {
            throw ReadingFailure(.wrongType, "seq \(value) is not an integer")
        }
        return Int64(value)
    }

    private func deviceTime(_ members: ReadingMembers) throws(ReadingFailure) -> Date? {
        switch members[.ts] {
        case nil, .null?:
            return nil
        case .string(let text)?:
            guard let parsed = RFC3339.parse(text) else {
                throw ReadingFailure(.invalidTimestamp, "ts \(quoted(text)) is not an RFC 3339 date-time")
            }
            guard parsed.utcOffsetSeconds != nil else {
                throw ReadingFailure(
                    .invalidTimestamp,
                    "ts \(quoted(text)) has no UTC offset (device local time is ambiguous; add Z or ±hh:mm)"
                )
            }
            return parsed.date(assumingUTCOffsetSeconds: 0)
        case .number(let number)?:
            guard number.isFinite, number >= 0 else {
                throw ReadingFailure(.invalidTimestamp, "ts \(number) is not a non-negative epoch time")
            }
            let isMilliseconds = number >= NativeProtocol.epochMillisecondsThreshold
            let seconds = isMilliseconds ? number / 1_000 : number
            guard seconds <= NativeProtocol.latestTimestampSeconds else {
                throw ReadingFailure(.invalidTimestamp, "ts \(number) ms is after the year 9999")
            }
            let microseconds = isMilliseconds ? (number * 1_000).rounded() : (number * 1_000_000).rounded()
            return Date(microsecondsSince1970: Int64(microseconds))
        case let other?:
            throw ReadingFailure(
                .wrongType,
                "ts is \(withArticle(other.typeName)), expected an RFC 3339 string or an epoch number"
            )
        }
    }
}

// MARK: - Detail formatting

/// `500` for whole numbers, the shortest round-trip text otherwise (`0.5`, `1e+20`).
private func compact(_ value: Double) -> String {
    if value.isFinite && value.rounded(.towardZero) == value && abs(value) < 1e15 {
        return String(Int64(value))
    }
    return value.description
}

/// "a number", "an object", "an array".
private func withArticle(_ typeName: String) -> String {
    switch typeName.utf8.first {
    case UInt8(ascii: "a"), UInt8(ascii: "o"): "an \(typeName)"
    default: "a \(typeName)"
    }
}

/// The text in double quotes, at most 40 characters, with control characters escaped (details end up in logs and in
/// PostgreSQL `text`, which cannot hold NUL).
private func quoted(_ text: String) -> String {
    var result = "\""
    var count = 0
    for scalar in text.unicodeScalars {
        if count == 40 {
            result += "…"
            break
        }
        switch scalar.value {
        case 0..<0x20, 0x7F:
            result += "\\u{\(String(scalar.value, radix: 16))}"
        case UInt32(UInt8(ascii: "\"")):
            result += "\\\""
        default:
            result.unicodeScalars.append(scalar)
        }
        count += 1
    }
    return result + "\""
}
