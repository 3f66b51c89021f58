/// The unique code printed on an outlet and used in its MQTT topics: `^[A-Za-z0-9_-]{1,64}$`.
///
/// Validation works on the UTF-8 bytes, so any non-ASCII character (even one that looks like a letter) is
/// rejected, as are MQTT separators and wildcards (`/`, `+`, `#`) and path tricks such as `..`.
public struct DeviceCode: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The longest accepted code, in bytes (equal to characters, since only ASCII is accepted).
    public static let maximumLength = 64

    /// The validated code, exactly as given (codes are case-sensitive).
    public let rawValue: String

    /// Validates `rawValue`; `nil` when it does not match `^[A-Za-z0-9_-]{1,64}$`.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Whether `text` matches `^[A-Za-z0-9_-]{1,64}$` (checked byte by byte, no regular expression).
    public static func isValid(_ text: some StringProtocol) -> Bool {
        var length = 0
        for byte in text.utf8 {
            length += 1
            guard length <= maximumLength, isAllowed(byte) else { return false }
        }
        return length > 0
    }

    /// The code itself, so it can be interpolated into topics and log lines.
    public var description: String { rawValue }

    /// Orders codes by their raw bytes (a stable, locale-independent order).
    public static func < (lhs: DeviceCode, rhs: DeviceCode) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    @inline(__always)
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
