/// Strings: scanned in place when they hold no escape, resolved into a scratch buffer when they do; UTF-8 is
/// validated and raw control characters refused (RFC 8259, section 7).
extension JSONParser.Scanner {
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
}
