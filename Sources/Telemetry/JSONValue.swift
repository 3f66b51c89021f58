/// A parsed JSON document, as produced by ``JSONParser``.
///
/// Numbers are `Double` (integers are exact up to 2^53); a number too large for `Double` is kept as ±infinity so the
/// validator can reject the one field rather than the whole message. In objects the last duplicate key wins.
public enum JSONValue: Sendable, Equatable {
    /// `null`: "no value" (never zero).
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, correctly rounded to the nearest `Double`.
    case number(Double)
    /// A string with every escape resolved.
    case string(String)
    /// An array, in document order.
    case array([JSONValue])
    /// An object; when a key repeats, the last value wins.
    case object([String: JSONValue])
}

extension JSONValue {
    /// The member `key` of an object; `nil` when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The JSON type name, for messages: `null`, `boolean`, `number`, `string`, `array` or `object`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The numeric value of a number or, when `acceptingNumericString` is true, of a string that holds a JSON
    /// number (surrounding spaces allowed, e.g. `" 227.1"`; firmwares send those). `nil` for anything else.
    public func numberValue(acceptingNumericString: Bool = true) -> Double? {
        switch self {
        case .number(let value):
            return value
        case .string(let text) where acceptingNumericString:
            return JSONParser.parseNumber(utf8: text.trimmingASCIISpaces())
        default:
            return nil
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing ASCII spaces and tabs.
    func trimmingASCIISpaces() -> Substring.UTF8View {
        let utf8 = Substring(self).utf8
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }),
            let last = utf8.lastIndex(where: { !isSpace($0) })
        else { return utf8[utf8.endIndex...] }
        return utf8[first...last]
    }
}
