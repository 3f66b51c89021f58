import Foundation

/// Builds PostgreSQL array literals such as `{"a","b\"c",NULL}`.
///
/// Arrays of ``PostgresArrayElement`` values (and of optionals of them, where `nil` becomes `NULL`) are
/// ``PostgresBindable`` through this helper, so `[String]`, `[Int64]`, `[Double]`, `[Int32]`, `[String?]`, … can be
/// passed directly, e.g. to `WHERE code = ANY($1::text[])`. `[UInt8]` is the exception: it is `bytea`.
public enum PostgresArray {
    /// A one-dimensional array literal. Every non-NULL element is double-quoted with `"` and `\` escaped by a
    /// backslash, so commas, braces, spaces, quotes and the word `NULL` inside elements survive; `nil` is `NULL`.
    public static func literal<Elements: Sequence>(_ elements: Elements) -> String where Elements.Element == String? {
        var text: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for element in elements {
            if !first {
                text.append(UInt8(ascii: ","))
            }
            first = false
            guard let element else {
                text.append(contentsOf: "NULL".utf8)
                continue
            }
            text.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    text.append(UInt8(ascii: "\\"))
                }
                text.append(byte)
            }
            text.append(UInt8(ascii: "\""))
        }
        text.append(UInt8(ascii: "}"))
        return String(decoding: text, as: UTF8.self)
    }
}

/// A value that can be an element of an array parameter (see ``PostgresArray``).
public protocol PostgresArrayElement {
    /// The element's text before array quoting; `nil` for NULL.
    var postgresArrayElementText: String? { get }

    /// The parameter text of a whole Swift array of this element type. The default is an array literal;
    /// `UInt8` overrides it so that `[UInt8]` is `bytea`.
    static func postgresText(forArray elements: [Self]) -> String
}

extension PostgresArrayElement {
    /// An array literal of the elements; see ``PostgresArray/literal(_:)``.
    public static func postgresText(forArray elements: [Self]) -> String {
        PostgresArray.literal(elements.lazy.map { $0.postgresArrayElementText })
    }
}

extension PostgresArrayElement where Self: PostgresBindable {
    /// The element's ``PostgresBindable/postgresText``.
    public var postgresArrayElementText: String? { postgresText }
}

extension Array: PostgresBindable where Element: PostgresArrayElement {
    /// An array literal such as `{"a","b\"c",NULL}`, or for `[UInt8]` the `bytea` hex form `\x0aff`.
    public var postgresText: String { Element.postgresText(forArray: self) }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    /// `nil` (NULL) or the wrapped element's text.
    public var postgresArrayElementText: String? { self.flatMap { $0.postgresArrayElementText } }
}

extension String: PostgresArrayElement {}
extension Substring: PostgresArrayElement {}
extension Int: PostgresArrayElement {}
extension Int16: PostgresArrayElement {}
extension Int32: PostgresArrayElement {}
extension Int64: PostgresArrayElement {}
extension UInt32: PostgresArrayElement {}
extension Double: PostgresArrayElement {}
extension Float: PostgresArrayElement {}
extension Bool: PostgresArrayElement {}
extension Date: PostgresArrayElement {}
extension UUID: PostgresArrayElement {}

extension UInt8: PostgresArrayElement {
    /// Decimal digits (only used inside arrays of optionals, `[UInt8?]`, which become `smallint[]` literals).
    public var postgresArrayElementText: String? { String(self) }

    /// `[UInt8]` is binary data: the `bytea` hex form `\x0aff`, not an array literal.
    public static func postgresText(forArray elements: [UInt8]) -> String {
        PostgresBytea.hexText(for: elements)
    }
}
