import Automations
import Foundation
import Hummingbird
import NIOCore
import Telemetry

/// A JSON value the API answers with (nulls kept, keys in the order given, numbers as finite decimals).
enum JSONOutput {
    case null
    case bool(Bool)
    case number(Double)
    /// A number as it was accepted, every digit kept: the shortest decimal that reads back as the same value (a
    /// rule's watts, which its text shows alike: ``AutomationRule/watts(_:)``).
    case exact(Double)
    case integer(Int64)
    /// An exact decimal as PostgreSQL's `numeric` prints it (`5.243100`): money, never through floating point.
    case decimal(String)
    case string(String)
    case array([JSONOutput])
    case object([(String, JSONOutput)])

    static func optional(_ value: Double?) -> JSONOutput { value.map { .number($0) } ?? .null }
    static func optional(_ value: String?) -> JSONOutput { value.map { .string($0) } ?? .null }
    static func optional(_ value: Bool?) -> JSONOutput { value.map { .bool($0) } ?? .null }
    static func optional(_ value: Date?) -> JSONOutput { value.map { .string(timestamp($0)) } ?? .null }
    static func money(_ value: String?) -> JSONOutput { value.map { .decimal($0) } ?? .null }

    /// RFC 3339 in UTC with milliseconds: `2026-11-25T08:10:00.250Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(utcMilliseconds)
    }

    /// Made once: making the style (and looking up its time zone) cost more than formatting with it.
    private static let utcMilliseconds = Date.ISO8601FormatStyle(
        includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC") ?? .gmt)

    var text: String {
        var buffer = ByteBuffer()
        write(to: &buffer)
        return String(buffer: buffer)
    }

    /// Appends the value's JSON to `buffer`: straight into the response's bytes, not through a string per member.
    func write(to buffer: inout ByteBuffer) {
        switch self {
        case .null: buffer.writeStaticString("null")
        case .bool(let value): buffer.writeStaticString(value ? "true" : "false")
        case .number(let value):
            // Three decimals are more than any meter resolves; an integral value prints without them.
            if value.isFinite { buffer.writeString(Self.decimal(value)) } else { buffer.writeStaticString("null") }
        case .exact(let value):
            if value.isFinite {
                buffer.writeString(AutomationRule.watts(value))
            } else {
                buffer.writeStaticString("null")
            }
        case .integer(let value): buffer.writeString(String(value))
        case .decimal(let value):
            if Self.isDecimal(value) { buffer.writeString(value) } else { buffer.writeStaticString("null") }
        case .string(let value): Self.writeString(value, to: &buffer)
        case .array(let values):
            buffer.writeInteger(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
                value.write(to: &buffer)
            }
            buffer.writeInteger(UInt8(ascii: "]"))
        case .object(let members):
            buffer.writeInteger(UInt8(ascii: "{"))
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
                Self.writeString(name, to: &buffer)
                buffer.writeInteger(UInt8(ascii: ":"))
                value.write(to: &buffer)
            }
            buffer.writeInteger(UInt8(ascii: "}"))
        }
    }

    /// A JSON string as ``jsonString(_:)`` writes it: text with nothing to escape (no quote, backslash, C0, DEL
    /// or C1 control: in UTF-8 C1 starts with 0xC2) is copied as it is.
    static func writeString(_ text: String, to buffer: inout ByteBuffer) {
        let plain = text.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x7F && $0 != 0xC2 }
        if plain {
            buffer.writeInteger(UInt8(ascii: "\""))
            buffer.writeString(text)
            buffer.writeInteger(UInt8(ascii: "\""))
        } else {
            buffer.writeString(jsonString(text))
        }
    }

    /// Whether `text` is a JSON number in plain decimal form (`-12.5`, `0.000000`).
    static func isDecimal(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }
    }

    private static func decimal(_ value: Double) -> String {
        let rounded = (value * 1_000).rounded() / 1_000
        if rounded == rounded.rounded() && abs(rounded) < 1e15 { return String(Int64(rounded)) }
        return String(rounded)
    }

    /// A response with this value as its body.
    func response(_ status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        write(to: &buffer)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: buffer))
    }
}
