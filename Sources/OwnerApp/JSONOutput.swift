import Foundation
import Hummingbird
import Telemetry

/// A JSON value the API answers with (nulls kept, keys in the order given, numbers as finite decimals).
enum JSONOutput {
    case null
    case bool(Bool)
    case number(Double)
    case integer(Int64)
    case string(String)
    case array([JSONOutput])
    case object([(String, JSONOutput)])

    static func optional(_ value: Double?) -> JSONOutput { value.map { .number($0) } ?? .null }
    static func optional(_ value: String?) -> JSONOutput { value.map { .string($0) } ?? .null }
    static func optional(_ value: Bool?) -> JSONOutput { value.map { .bool($0) } ?? .null }
    static func optional(_ value: Date?) -> JSONOutput { value.map { .string(timestamp($0)) } ?? .null }

    /// RFC 3339 in UTC with milliseconds: `2026-11-25T08:10:00.250Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC") ?? .gmt))
    }

    var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let value):
            // Three decimals are more than any meter resolves; an integral value prints without them.
            value.isFinite ? Self.decimal(value) : "null"
        case .integer(let value): String(value)
        case .string(let value): jsonString(value)
        case .array(let values): "[" + values.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { jsonString($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }

    private static func decimal(_ value: Double) -> String {
        let rounded = (value * 1_000).rounded() / 1_000
        if rounded == rounded.rounded() && abs(rounded) < 1e15 { return String(Int64(rounded)) }
        return String(rounded)
    }

    /// A response with this value as its body.
    func response(_ status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
