import Foundation

/// Builds the body of a `COPY … FROM STDIN` in PostgreSQL's text format: one line per row,
/// fields separated by tabs, `\N` for NULL, backslash escapes for `\`, tab, newline and
/// carriage return.
struct CopyTextEncoder {
    private(set) var bytes: [UInt8] = []
    private var fieldsInRow = 0

    init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separator() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    mutating func null() {
        separator()
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    mutating func int(_ value: some BinaryInteger) {
        separator()
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func int(_ value: (some BinaryInteger)?) {
        if let value { int(value) } else { null() }
    }

    /// A finite double with full precision (shortest round-trip form).
    mutating func double(_ value: Double) {
        separator()
        bytes.append(contentsOf: value.description.utf8)
    }

    mutating func double(_ value: Double?) {
        if let value { double(value) } else { null() }
    }

    mutating func text(_ value: String) {
        separator()
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0: bytes.append(contentsOf: "\u{2400}".utf8)  // PostgreSQL text cannot hold NUL
            default: bytes.append(byte)
            }
        }
    }

    mutating func text(_ value: String?) {
        if let value { text(value) } else { null() }
    }

    /// Microseconds since the Unix epoch (the staging tables' time columns).
    mutating func microseconds(_ date: Date) {
        int(Self.microseconds(date))
    }

    mutating func microseconds(_ date: Date?) {
        if let date { microseconds(date) } else { null() }
    }

    mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        fieldsInRow = 0
    }

    /// Microseconds since the Unix epoch, saturating (a device may claim any date).
    static func microseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard !value.isNaN else { return Int64.min }
        if value >= 9.2e18 { return Int64.max }
        if value <= -9.2e18 { return Int64.min }
        return Int64(value)
    }
}
