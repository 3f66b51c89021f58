/// Text that people type into outletd (owners' names and descriptions of outlets, user names) and text it prints
/// back: what may be stored, and how it is made inert for a terminal.
///
/// Control characters (Unicode general category Cc: C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F) are never
/// stored from the app, except tab and newline where a field allows them (descriptions), and never printed raw:
/// a terminal takes ESC and CSI as commands, so a name could forge table rows or retitle the window.
/// Lengths are counted in Unicode scalars and in UTF-8 bytes, never in grapheme clusters: one letter followed by
/// a thousand combining marks is one "character" but a thousand and one scalars.
public enum OwnerText {
    /// What a field accepts.
    public struct Rule: Sendable, Equatable {
        /// At most this many Unicode scalars.
        public var maxScalars: Int
        /// At most this many bytes of UTF-8.
        public var maxBytes: Int
        /// Whether tab and newline are allowed (descriptions); every other control character is refused anyway.
        public var allowsTabAndNewline = false
        /// Whether empty (or blank) text is allowed.
        public var allowsEmpty = true

        public init(maxScalars: Int, maxBytes: Int, allowsTabAndNewline: Bool = false, allowsEmpty: Bool = true) {
            self.maxScalars = maxScalars
            self.maxBytes = maxBytes
            self.allowsTabAndNewline = allowsTabAndNewline
            self.allowsEmpty = allowsEmpty
        }
    }

    /// Why text was refused; ``description`` is the reason, to be prefixed with the field's name.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case controlCharacter(Unicode.Scalar)
        case tooManyScalars(limit: Int)
        case tooManyBytes(limit: Int)
        case empty

        public var description: String {
            switch self {
            case .controlCharacter(let scalar):
                "must not contain control characters (found \(OwnerText.escapedScalar(scalar)))"
            case .tooManyScalars(let limit): "at most \(limit) characters (Unicode scalars)"
            case .tooManyBytes(let limit): "at most \(limit) bytes of UTF-8"
            case .empty: "must not be empty"
            }
        }
    }

    /// Whether `scalar` is a control character (general category Cc).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The first problem of `text` under `rule`, or nil when it may be stored.
    public static func problem(_ text: String, _ rule: Rule) -> Problem? {
        if text.utf8.count > rule.maxBytes { return .tooManyBytes(limit: rule.maxBytes) }
        var scalars = 0
        var blank = true
        for scalar in text.unicodeScalars {
            scalars += 1
            if isControl(scalar) && !(rule.allowsTabAndNewline && (scalar == "\t" || scalar == "\n")) {
                return .controlCharacter(scalar)
            }
            if !scalar.properties.isWhitespace { blank = false }
        }
        if scalars > rule.maxScalars { return .tooManyScalars(limit: rule.maxScalars) }
        if !rule.allowsEmpty && blank { return .empty }
        return nil
    }

    /// `text` with every control character written out (`\t`, `\n`, `\r`, else `\x1b`-style), and a backslash
    /// before a backslash only where it could be read as such an escape; for terminals and text logs. Text
    /// without control characters comes back unchanged.
    public static func inert(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result.append(contentsOf: escapedScalar(scalar).unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// One control character as text: `\t`, `\n`, `\r`, else `\x` and two hex digits (`\x1b`, `\x9b`).
    static func escapedScalar(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\t": return "\\t"
        case "\n": return "\\n"
        case "\r": return "\\r"
        default:
            let hex = String(scalar.value, radix: 16)
            return "\\x" + (hex.count < 2 ? "0" + hex : hex)
        }
    }

    /// JSON text with every DEL and C1 character inside its strings escaped as `\u00XX` (JSON escapes C0 itself;
    /// DEL and C1 are legal raw in JSON, yet some terminals act on them). Structural JSON is ASCII, so these can only
    /// stand inside strings, and the result is the same JSON value.
    public static func inertJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
        var result = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                result.append(contentsOf: ("\\u00" + String(scalar.value, radix: 16)).unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
