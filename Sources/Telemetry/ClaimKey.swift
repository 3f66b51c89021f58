/// The claim key printed on an outlet's label beside its code (`K7QF-3MZP-X2CD`): twelve symbols of Crockford's
/// base 32, 60 random bits, made by PostgreSQL when the outlet is registered (`outletd_new_claim_key()`, from
/// `gen_random_uuid()`'s strong random bits). Claiming an outlet in the owners' app takes the code and this key, so
/// knowing or guessing a code is not enough.
///
/// Typing is forgiving, as Crockford's alphabet means it to be: case does not matter, dashes and spaces are
/// ignored, `O` reads as `0` and `I`, `L` as `1`.
public enum ClaimKey {
    /// The symbols, in value order: digits and upper-case letters without I, L, O and U.
    public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".unicodeScalars)
    /// Symbols in a key.
    public static let length = 12

    /// The stored form of a typed key (twelve symbols, upper case, no dashes), or nil when it cannot be one.
    public static func normalized(_ text: String) -> String? {
        guard text.utf8.count <= 64 else { return nil }
        var symbols = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-", " ": continue
            case "o", "O": symbols.append("0")
            case "i", "I", "l", "L": symbols.append("1")
            default:
                let isLower = (0x61...0x7A).contains(scalar.value)
                guard let upper = isLower ? Unicode.Scalar(scalar.value - 0x20) : scalar, alphabet.contains(upper)
                else { return nil }
                symbols.append(upper)
            }
        }
        return symbols.count == length ? String(symbols) : nil
    }

    /// A stored key as printed on the label: groups of four joined by dashes (`K7QF-3MZP-X2CD`).
    public static func display(_ key: String) -> String {
        var groups: [Substring] = []
        var rest = key[...]
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: "-")
    }

    /// `CODE:KEY` (the form a QR code on the label carries) as code and key; nil when `text` has no colon.
    public static func splitCombined(_ text: String) -> (code: String, key: String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}
