import Foundation
import Telemetry

/// The protocols outletd speaks, by the value of `devices.protocol` (see PROTOCOLS.md).
public enum OutletProtocol: String, Sendable, CaseIterable, Codable {
    /// outletd's own `<prefix>/<code>/<kind>` protocol.
    case native
    /// Tasmota: `tele/<t>/SENSOR`, `stat/<t>/RESULT`, `cmnd/<t>/POWER<n>`… under a configurable FullTopic.
    case tasmota
    /// Shelly Gen1: one plain value per topic under `shellies/<id>/`.
    case shellyGen1 = "shelly-gen1"
    /// Shelly Gen2/Gen3: JSON status and JSON-RPC under `<prefix>/`.
    case shellyGen2 = "shelly-gen2"
    /// Zigbee plugs behind Zigbee2MQTT: a JSON state per device under `<base topic>/<friendly name>`.
    case zigbee2mqtt
    /// ESPHome's MQTT: one plain value per sensor under `<topic prefix>/sensor/<object id>/state`.
    case esphome

    /// Whether the firmware announces its outlets to Home Assistant itself (Zigbee2MQTT's and ESPHome's own
    /// discovery): outletd then announces nothing for them, so Home Assistant has no duplicate entities.
    public var announcesItself: Bool { self == .zigbee2mqtt || self == .esphome }
}

/// Where a registered outlet lives in its protocol's topic space.
public struct ProtocolAddress: Sendable, Equatable, Hashable {
    /// The protocol.
    public var outletProtocol: OutletProtocol
    /// Tasmota `%topic%`, Shelly Gen1 id, or Shelly Gen2 prefix (may have several levels); empty for native.
    public var deviceTopic: String
    /// Relay number: Tasmota 1-based (`POWER1`), Shelly 0-based (`relay/0`, `switch:0`).
    public var channel: Int
    /// A named endpoint: the Zigbee2MQTT endpoint of a multi-socket device (`l2`), the ESPHome switch's object id;
    /// empty for a device's only outlet.
    public var endpoint: String

    /// Creates an address.
    public init(outletProtocol: OutletProtocol, deviceTopic: String, channel: Int, endpoint: String = "") {
        self.outletProtocol = outletProtocol
        self.deviceTopic = deviceTopic
        self.channel = channel
        self.endpoint = endpoint
    }
}

/// Builds a ``Reading`` from values already converted to W, V, A and Wh, enforcing ``ValidationLimits``.
///
/// Shared by the Tasmota and Shelly decoders. `null` and absent values arrive here as `nil` (rule 2); power is
/// required, or computed as voltage × current when both are known.
enum ReadingBuilder {
    static func build(
        powerWatts: Double?, voltageVolts: Double?, currentAmperes: Double?, powerFactor: Double?,
        energyWattHours: Double?, deviceTime: Date?, receivedAt: Date, limits: ValidationLimits
    ) -> Result<Reading, Rejection> {
        func check(_ value: Double?, _ name: String, _ range: ClosedRange<Double>) -> Rejection? {
            guard let value else { return nil }
            guard value.isFinite, range.contains(value) else {
                return Rejection(reason: .outOfRange, detail: "\(name) \(value) outside \(range)")
            }
            return nil
        }
        let power: Double
        if let powerWatts {
            power = powerWatts
        } else if let voltageVolts, let currentAmperes {
            power = voltageVolts * currentAmperes
        } else {
            return .failure(Rejection(reason: .missingField, detail: "no power (nor voltage and current)"))
        }
        let problems = [
            check(power, "power W", limits.powerWatts), check(voltageVolts, "voltage V", limits.voltageVolts),
            check(currentAmperes, "current A", limits.currentAmperes),
            check(powerFactor, "power factor", limits.powerFactor),
            check(energyWattHours, "energy Wh", 0...Double.greatestFiniteMagnitude),
        ]
        if let problem = problems.compactMap({ $0 }).first { return .failure(problem) }
        let received = receivedAt.roundedToMicroseconds
        var measuredAt = received
        if let deviceTime, abs(deviceTime.timeIntervalSince(received)) <= limits.maxClockSkew {
            measuredAt = deviceTime.roundedToMicroseconds
        }
        return .success(
            Reading(
                measuredAt: measuredAt, receivedAt: received, deviceTime: deviceTime?.roundedToMicroseconds,
                voltageVolts: voltageVolts.map { $0 + 0.0 }, currentAmperes: currentAmperes.map { $0 + 0.0 },
                powerWatts: power + 0.0, powerFactor: powerFactor.map { $0 + 0.0 },
                energyWattHours: energyWattHours.map { $0 + 0.0 }))
    }

    /// A decoded message from one build result.
    static func message(_ result: Result<Reading, Rejection>) -> DecodedMessage {
        switch result {
        case .success(let reading): DecodedMessage(readings: [reading])
        case .failure(let rejection): DecodedMessage(rejections: [rejection])
        }
    }
}

/// Common payload helpers of the foreign protocols.
enum PayloadText {
    /// The payload without surrounding whitespace.
    static func trimmed(_ payload: [UInt8]) -> String {
        let isWhitespace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = payload.firstIndex(where: { !isWhitespace($0) }),
            let last = payload.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(decoding: payload[first...last], as: UTF8.self)
    }

    /// A JSON object, or a rejection saying why not (size checked first).
    static func object(_ payload: [UInt8], limits: ValidationLimits) -> Result<[String: JSONValue], Rejection> {
        guard !payload.isEmpty else { return .failure(Rejection(reason: .emptyPayload, detail: "payload is empty")) }
        guard payload.count <= limits.maxPayloadBytes else {
            return .failure(Rejection(reason: .payloadTooLarge, detail: "payload of \(payload.count) bytes"))
        }
        do throws(JSONParseError) {
            guard case .object(let members) = try JSONParser.parse(payload) else {
                return .failure(Rejection(reason: .wrongType, detail: "top level is not an object"))
            }
            return .success(members)
        } catch {
            return .failure(Rejection(reason: .malformedJSON, detail: error.description))
        }
    }

    /// A number, a numeric string (padded allowed), `nil` for absent or `null`.
    static func number(_ value: JSONValue?) -> Double? {
        value?.numberValue(acceptingNumericString: true)
    }
}
