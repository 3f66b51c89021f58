/// Numbers: the grammar of RFC 8259, section 6, and correct rounding (exact on the fast path, else the standard
/// library's `Double(_:)`).
extension JSONParser.Scanner {
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
