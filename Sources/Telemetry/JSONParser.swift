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

        // MARK: Strings

        /// A string as scanned: where its bytes are when it has no escape (valid UTF-8, nothing to resolve),
        /// else the resolved text.
        enum ScannedString {
            case raw(Range<Int>)
            case escaped(String)

            func string(in bytes: UnsafeBufferPointer<UInt8>) -> String {
                switch self {
                case .raw(let range): String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
                case .escaped(let text): text
                }
            }

            /// The index of the first of `keys` that the string equals as Swift compares strings (canonical
            /// equivalence: as a dictionary key would match); `bytes` is the scanned document. Two ASCII
            /// strings are equal exactly when their bytes are, so an ASCII string is compared with the
            /// ASCII keys as bytes, without making a `String`.
            func firstIndex(in keys: [StaticString], of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
                if case .raw(let range) = self {
                    let text = UnsafeBufferPointer(rebasing: bytes[range])
                    if text.allSatisfy({ $0 < 0x80 }) {
                        return keys.firstIndex { key in
                            key.isASCII
                                ? text.count == key.utf8CodeUnitCount && key.withUTF8Buffer { Self.equal(text, $0) }
                                : String(decoding: text, as: UTF8.self) == key.description
                        }
                    }
                }
                let text = string(in: bytes)
                return keys.firstIndex { text == $0.description }
            }

            /// Whether two buffers of the same length hold the same bytes (a plain loop: `elementsEqual`'s
            /// iterators took 2 % of outletd's CPU in a backlog drain, docs/PERFORMANCE.md).
            static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
                for index in a.indices where a[index] != b[index] { return false }
                return true
            }
        }

        mutating func parseString() throws(JSONParseError) -> String {
            try scanString().string(in: bytes)
        }

        /// Scans a string starting at its opening quote. Strings without escapes stay where they are, once
        /// validated; escapes switch to a scratch buffer.
        mutating func scanString() throws(JSONParseError) -> ScannedString {
            offset += 1  // opening quote
            let start = offset
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    offset += 1
                    return .raw(start..<(offset - 1))
                }
                if byte == UInt8(ascii: "\\") {
                    var scratch = Array(bytes[start..<offset])
                    return .escaped(try parseEscapedString(into: &scratch))
                }
                if byte < 0x20 {
                    throw error(.controlCharacterInString, "raw \(Self.describe(byte)) must be escaped")
                }
                if byte < 0x80 {
                    offset += 1
                } else {
                    offset += try validateUTF8Sequence()
                }
            }
            throw error(.unexpectedEndOfInput, "unterminated string starting at byte \(start - 1)")
        }

        private mutating func parseEscapedString(into scratch: inout [UInt8]) throws(JSONParseError) -> String {
            while offset < bytes.count {
                let byte = bytes[offset]
                switch byte {
                case UInt8(ascii: "\""):
                    offset += 1
                    return String(decoding: scratch, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    try appendEscape(to: &scratch)
                case 0..<0x20:
                    throw error(.controlCharacterInString, "raw \(Self.describe(byte)) must be escaped")
                case 0x20..<0x80:
                    scratch.append(byte)
                    offset += 1
                default:
                    let length = try validateUTF8Sequence()
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[offset..<offset + length]))
                    offset += length
                }
            }
            throw error(.unexpectedEndOfInput, "unterminated string")
        }

        private mutating func appendEscape(to scratch: inout [UInt8]) throws(JSONParseError) {
            let escapeStart = offset
            offset += 1  // backslash
            guard offset < bytes.count else {
                throw error(.unexpectedEndOfInput, "unterminated escape")
            }
            let letter = bytes[offset]
            offset += 1
            switch letter {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(letter)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(try readHex4())
                if (0xD800...0xDBFF).contains(scalar) {
                    guard bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"),
                        bytes[offset + 1] == UInt8(ascii: "u")
                    else {
                        throw error(
                            .unpairedSurrogate, "high surrogate without a following \\uDC00–\\uDFFF",
                            at: escapeStart)
                    }
                    offset += 2
                    let low = UInt32(try readHex4())
                    guard (0xDC00...0xDFFF).contains(low) else {
                        throw error(
                            .unpairedSurrogate, "high surrogate followed by a non-low surrogate",
                            at: escapeStart)
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error(.unpairedSurrogate, "low surrogate without a preceding high surrogate", at: escapeStart)
                }
                Self.appendUTF8(scalar, to: &scratch)
            default:
                throw error(.invalidEscape, "unknown escape \\\(Self.describe(letter))", at: escapeStart)
            }
        }

        /// Appends a Unicode scalar value (never a surrogate, at most U+10FFFF) as UTF-8.
        private static func appendUTF8(_ scalar: UInt32, to scratch: inout [UInt8]) {
            switch scalar {
            case 0..<0x80:
                scratch.append(UInt8(truncatingIfNeeded: scalar))
            case 0x80..<0x800:
                scratch.append(0xC0 | UInt8(truncatingIfNeeded: scalar >> 6))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
            case 0x800..<0x10000:
                scratch.append(0xE0 | UInt8(truncatingIfNeeded: scalar >> 12))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
            default:
                scratch.append(0xF0 | UInt8(truncatingIfNeeded: scalar >> 18))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 12) & 0x3F))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
                scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
            }
        }

        private mutating func readHex4() throws(JSONParseError) -> UInt16 {
            guard bytes.count - offset >= 4 else {
                offset = bytes.count
                throw error(.unexpectedEndOfInput, "\\u needs four hex digits")
            }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[offset]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error(.invalidEscape, "\\u needs four hex digits, found \(Self.describe(byte))")
                }
                value = value << 4 | UInt16(digit)
                offset += 1
            }
            return value
        }

        /// Validates the multi-byte UTF-8 sequence at `offset` (Unicode Table 3-7: no overlong forms, no
        /// surrogates, nothing above U+10FFFF) and returns its length. Does not move `offset`.
        private func validateUTF8Sequence() throws(JSONParseError) -> Int {
            let lead = bytes[offset]
            let length: Int
            var secondRange: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                secondRange = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                secondRange = 0x80...0x9F
            case 0xF0:
                length = 4
                secondRange = 0x90...0xBF
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                secondRange = 0x80...0x8F
            default: throw error(.invalidUTF8, "\(Self.describe(lead)) cannot start a UTF-8 sequence")
            }
            guard bytes.count - offset >= length else {
                throw error(.invalidUTF8, "truncated UTF-8 sequence")
            }
            guard secondRange.contains(bytes[offset + 1]) else {
                throw error(.invalidUTF8, "invalid UTF-8 continuation byte", at: offset + 1)
            }
            for index in 2..<length where !(0x80...0xBF).contains(bytes[offset + index]) {
                throw error(.invalidUTF8, "invalid UTF-8 continuation byte", at: offset + index)
            }
            return length
        }

        // MARK: Numbers

        /// Exact powers of ten representable as `Double` (10^0 … 10^22), for the fast path.
        private static let exactPowersOfTen: [Double] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
            1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ]
        /// 2^53: every integer up to it is exact in a `Double`.
        private static let maxExactMantissa: UInt64 = 1 << 53

        @inline(__always)
        private static func isDigit(_ byte: UInt8) -> Bool {
            byte &- UInt8(ascii: "0") < 10
        }

        /// Parses a number at `offset` following the JSON grammar `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
        ///
        /// When the significant digits fit in 2^53 and the decimal exponent is within ±22, the value is
        /// `mantissa × 10^e` or `mantissa ÷ 10^-e` with both operands exact, hence correctly rounded (Clinger's
        /// fast path), with no allocation. Otherwise the validated text goes through `Double(_:)`.
        mutating func parseNumber() throws(JSONParseError) -> Double {
            let start = offset
            var isNegative = false
            if offset < bytes.count && bytes[offset] == UInt8(ascii: "-") {
                isNegative = true
                offset += 1
            }
            guard offset < bytes.count, Self.isDigit(bytes[offset]) else {
                throw error(.invalidNumber, "expected a digit, found \(describeCurrentByte())")
            }
            var mantissa: UInt64 = 0
            var decimalExponent = 0
            var isExact = true

            if bytes[offset] == UInt8(ascii: "0") {
                offset += 1
                if offset < bytes.count && Self.isDigit(bytes[offset]) {
                    throw error(.invalidNumber, "leading zeros are not allowed", at: start)
                }
            } else {
                while offset < bytes.count && Self.isDigit(bytes[offset]) {
                    accumulate(
                        bytes[offset], into: &mantissa, exponent: &decimalExponent, isExact: &isExact,
                        isFraction: false)
                    offset += 1
                }
            }
            if offset < bytes.count && bytes[offset] == UInt8(ascii: ".") {
                offset += 1
                guard offset < bytes.count, Self.isDigit(bytes[offset]) else {
                    throw error(.invalidNumber, "expected a digit after '.', found \(describeCurrentByte())")
                }
                while offset < bytes.count && Self.isDigit(bytes[offset]) {
                    accumulate(
                        bytes[offset], into: &mantissa, exponent: &decimalExponent, isExact: &isExact,
                        isFraction: true)
                    offset += 1
                }
            }
            if offset < bytes.count && (bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E")) {
                offset += 1
                var exponentIsNegative = false
                if offset < bytes.count && (bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-")) {
                    exponentIsNegative = bytes[offset] == UInt8(ascii: "-")
                    offset += 1
                }
                guard offset < bytes.count, Self.isDigit(bytes[offset]) else {
                    throw error(.invalidNumber, "expected a digit in the exponent, found \(describeCurrentByte())")
                }
                var exponent = 0
                while offset < bytes.count && Self.isDigit(bytes[offset]) {
                    if exponent < 100_000 {
                        exponent = exponent * 10 + Int(bytes[offset] - UInt8(ascii: "0"))
                    } else {
                        isExact = false  // absurd exponent: let the standard library saturate it
                    }
                    offset += 1
                }
                decimalExponent += exponentIsNegative ? -exponent : exponent
            }

            if mantissa == 0 && isExact {
                return isNegative ? -0.0 : 0.0
            }
            if isExact && mantissa <= Self.maxExactMantissa && (-22...22).contains(decimalExponent) {
                let significand = Double(mantissa)
                let value =
                    decimalExponent >= 0
                    ? significand * Self.exactPowersOfTen[decimalExponent]
                    : significand / Self.exactPowersOfTen[-decimalExponent]
                return isNegative ? -value : value
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
            guard let value = Double(text) else {
                // Unreachable for grammar-checked text; keep a defined answer rather than trapping.
                throw error(.invalidNumber, "number cannot be represented", at: start)
            }
            return value
        }

        @inline(__always)
        private func accumulate(
            _ digitByte: UInt8,
            into mantissa: inout UInt64,
            exponent: inout Int,
            isExact: inout Bool,
            isFraction: Bool
        ) {
            let digit = UInt64(digitByte - UInt8(ascii: "0"))
            if mantissa < 100_000_000_000_000_000 {  // 10^17: room for one more digit in a UInt64
                mantissa = mantissa * 10 + digit
                if isFraction { exponent -= 1 }
            } else {
                if digit != 0 { isExact = false }
                if !isFraction { exponent += 1 }
            }
        }
    }
}
