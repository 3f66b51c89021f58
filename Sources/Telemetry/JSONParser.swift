/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// It never traps, whatever the input: nesting is bounded by `maxDepth` (so deep input cannot exhaust the stack),
/// strings are checked for valid UTF-8 and raw control characters, escapes (including `\uXXXX` surrogate pairs) are
/// resolved, and anything outside the grammar (leading zeros, `NaN`, `Infinity`, trailing commas, trailing data, a
/// byte-order mark) throws a ``JSONParseError`` with the byte offset. Numbers are correctly rounded: the common
/// case (up to 15–16 significant digits, small exponent) is computed exactly without allocating; the rest goes
/// through the standard library's `Double(_:)`.
public enum JSONParser {
    /// The default nesting limit: a document may hold arrays and objects nested this many levels deep.
    public static let defaultMaxDepth = 64

    /// Parses a complete JSON document.
    /// - Parameters:
    ///   - bytes: the document, UTF-8 encoded.
    ///   - maxDepth: how many arrays/objects may be nested; deeper input throws ``JSONParseError/Code/tooDeep``.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            try parse(buffer, maxDepth: maxDepth)
        }
    }

    /// Parses a complete JSON document held in a buffer the caller owns for the duration of the call.
    public static func parse(
        _ buffer: UnsafeBufferPointer<UInt8>,
        maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        var scanner = Scanner(bytes: buffer, maxDepth: maxDepth)
        scanner.skipWhitespace()
        let value = try scanner.parseValue(depth: 0)
        try scanner.expectEnd()
        return value
    }

    /// Parses a complete JSON document whose top level is an object, keeping only the members named in `keys`:
    /// element `i` of the result is the value of `keys[i]` (the last one when the key repeats, as in ``parse(_:maxDepth:)``),
    /// or nil when the object has no such member. Returns nil, having read only leading whitespace, when the top
    /// level is not an object. Everything else is checked as ``parse(_:maxDepth:)`` checks it: the same document
    /// throws the same error.
    ///
    /// For decoders that read a few known keys: the object becomes no dictionary, and the keys no strings.
    public static func parseObject(
        _ bytes: [UInt8], keeping keys: [StaticString], maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> [JSONValue?]? {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> [JSONValue?]? in
            var scanner = Scanner(bytes: buffer, maxDepth: maxDepth)
            scanner.skipWhitespace()
            guard scanner.offset < buffer.count, buffer[scanner.offset] == UInt8(ascii: "{") else { return nil }
            var values = [JSONValue?](repeating: nil, count: keys.count)
            try scanner.parseObject(depth: 1) { (key, scanner) throws(JSONParseError) in
                let value = try scanner.parseValue(depth: 1)
                if let index = key.firstIndex(in: keys, of: scanner.bytes) { values[index] = value }
            }
            try scanner.expectEnd()
            return values
        }
    }

    /// Parses `text` as exactly one JSON number (the whole text, no surrounding spaces), e.g. `"-12.5e3"`.
    /// Returns `nil` when the text is not in the JSON number grammar. Overflow gives ±infinity.
    public static func parseNumber(_ text: some StringProtocol) -> Double? {
        parseNumber(utf8: Substring(text).utf8)
    }

    static func parseNumber(utf8: Substring.UTF8View) -> Double? {
        if let result = utf8.withContiguousStorageIfAvailable({ parseWholeNumber($0) }) {
            return result
        }
        return Array(utf8).withUnsafeBufferPointer { parseWholeNumber($0) }
    }

    private static func parseWholeNumber(_ buffer: UnsafeBufferPointer<UInt8>) -> Double? {
        var scanner = Scanner(bytes: buffer, maxDepth: 0)
        guard let value = try? scanner.parseNumber(), scanner.offset == buffer.count else { return nil }
        return value
    }
}

extension JSONParser {
    /// The cursor over the document. Kept internal: callers only see ``JSONParser/parse(_:maxDepth:)``.
    struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var offset = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func error(_ code: JSONParseError.Code, _ message: String, at position: Int? = nil) -> JSONParseError {
            JSONParseError(code: code, byteOffset: position ?? offset, message: message)
        }

        func describeCurrentByte() -> String {
            guard offset < bytes.count else { return "end of input" }
            return Self.describe(bytes[offset])
        }

        static func describe(_ byte: UInt8) -> String {
            if byte >= 0x21 && byte < 0x7F {
                return "'\(Character(Unicode.Scalar(byte)))'"
            }
            let hex = String(byte, radix: 16, uppercase: true)
            return "byte 0x\(hex.count < 2 ? "0" + hex : hex)"
        }

        /// After the top-level value: only whitespace may follow.
        mutating func expectEnd() throws(JSONParseError) {
            skipWhitespace()
            if offset < bytes.count {
                throw error(.trailingData, "\(describeCurrentByte()) after the top-level value")
            }
        }

        @inline(__always)
        mutating func skipWhitespace() {
            while offset < bytes.count {
                switch bytes[offset] {
                case 0x20, 0x09, 0x0A, 0x0D: offset += 1
                default: return
                }
            }
        }

        mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
            guard offset < bytes.count else {
                throw error(.unexpectedEndOfInput, "expected a value")
            }
            switch bytes[offset] {
            case UInt8(ascii: "{"):
                return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["):
                return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""):
                return .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return .number(try parseNumber())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                return .null
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                throw error(.invalidLiteral, "unknown literal starting with \(describeCurrentByte())")
            default:
                throw error(.unexpectedCharacter, "expected a value but found \(describeCurrentByte())")
            }
        }

        private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
            let start = offset
            let length = literal.utf8CodeUnitCount
            let matches = literal.withUTF8Buffer { expected in
                guard bytes.count - offset >= length else { return false }
                for index in 0..<length where bytes[offset + index] != expected[index] {
                    return false
                }
                return true
            }
            guard matches else {
                throw error(.invalidLiteral, "expected '\(literal)'", at: start)
            }
            offset += length
        }

        private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
            var members: [String: JSONValue] = [:]
            try parseObject(depth: depth) { (key, scanner) throws(JSONParseError) in
                members[key.string(in: scanner.bytes)] = try scanner.parseValue(depth: depth)
            }
            return .object(members)
        }

        /// Parses an object starting at its `{`, handing each key to `member`, which must parse the value that
        /// follows the key's colon (with `depth` as its depth).
        mutating func parseObject(
            depth: Int, member: (ScannedString, inout Scanner) throws(JSONParseError) -> Void
        ) throws(JSONParseError) {
            guard depth <= maxDepth else {
                throw error(.tooDeep, "more than \(maxDepth) nested arrays/objects")
            }
            offset += 1  // '{'
            skipWhitespace()
            if offset < bytes.count && bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return
            }
            while true {
                skipWhitespace()
                guard offset < bytes.count else {
                    throw error(.unexpectedEndOfInput, "expected a string key")
                }
                guard bytes[offset] == UInt8(ascii: "\"") else {
                    throw error(.unexpectedCharacter, "expected a string key but found \(describeCurrentByte())")
                }
                let key = try scanString()
                skipWhitespace()
                guard offset < bytes.count else {
                    throw error(.unexpectedEndOfInput, "expected ':'")
                }
                guard bytes[offset] == UInt8(ascii: ":") else {
                    throw error(.unexpectedCharacter, "expected ':' but found \(describeCurrentByte())")
                }
                offset += 1
                skipWhitespace()
                try member(key, &self)
                skipWhitespace()
                guard offset < bytes.count else {
                    throw error(.unexpectedEndOfInput, "expected ',' or '}'")
                }
                switch bytes[offset] {
                case UInt8(ascii: ","):
                    offset += 1
                case UInt8(ascii: "}"):
                    offset += 1
                    return
                default:
                    throw error(.unexpectedCharacter, "expected ',' or '}' but found \(describeCurrentByte())")
                }
            }
        }

        private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
            guard depth <= maxDepth else {
                throw error(.tooDeep, "more than \(maxDepth) nested arrays/objects")
            }
            offset += 1  // '['
            var elements: [JSONValue] = []
            skipWhitespace()
            if offset < bytes.count && bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth))
                skipWhitespace()
                guard offset < bytes.count else {
                    throw error(.unexpectedEndOfInput, "expected ',' or ']'")
                }
                switch bytes[offset] {
                case UInt8(ascii: ","):
                    offset += 1
                case UInt8(ascii: "]"):
                    offset += 1
                    return .array(elements)
                default:
                    throw error(.unexpectedCharacter, "expected ',' or ']' but found \(describeCurrentByte())")
                }
            }
        }

    }
}
