/// Why ``JSONParser`` refused a document, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// The document ended in the middle of a value (or was empty).
        case unexpectedEndOfInput = "unexpected end of input"
        /// A byte that cannot start or continue a value here.
        case unexpectedCharacter = "unexpected character"
        /// A bare word other than `true`, `false` or `null` (e.g. `NaN`, `Infinity`, `nul`).
        case invalidLiteral = "invalid literal"
        /// A number that breaks the JSON grammar (leading zero, `1.`, `.5`, `1e`, `+1`…).
        case invalidNumber = "invalid number"
        /// An unknown escape such as `\x`, or a malformed `\uXXXX`.
        case invalidEscape = "invalid escape"
        /// A `\uXXXX` surrogate without its partner.
        case unpairedSurrogate = "unpaired surrogate"
        /// A raw control character (below U+0020) inside a string.
        case controlCharacterInString = "control character in string"
        /// Bytes that are not valid UTF-8 inside a string (overlong forms, surrogates, truncated sequences…).
        case invalidUTF8 = "invalid UTF-8"
        /// Arrays and objects nested deeper than the parser's depth limit.
        case tooDeep = "nesting too deep"
        /// Something other than whitespace after the top-level value.
        case trailingData = "trailing data"
    }

    /// The kind of problem.
    public var code: Code
    /// The zero-based byte offset in the document where the problem was found.
    public var byteOffset: Int
    /// A short explanation, e.g. `expected ',' or '}' but found 'x'`.
    public var message: String

    /// Creates an error.
    public init(code: Code, byteOffset: Int, message: String) {
        self.code = code
        self.byteOffset = byteOffset
        self.message = message
    }

    /// `<code> at byte <offset>: <message>`, suitable for a rejection detail.
    public var description: String {
        "\(code.rawValue) at byte \(byteOffset): \(message)"
    }
}
