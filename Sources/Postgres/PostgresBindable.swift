import Foundation

/// A value that can be sent as a query parameter, in PostgreSQL's text input format.
///
/// The server parses ``postgresText`` as the parameter's type (inferred from the statement, or given with a cast
/// such as `$1::timestamptz`). Pass `nil` in the parameter array for SQL NULL.
public protocol PostgresBindable {
    /// The value in PostgreSQL's text input format, e.g. `42`, `t`, `2024-01-02 03:04:05.000006+00`, `\x0aff`.
    var postgresText: String { get }
}

extension String: PostgresBindable {
    /// The string itself (it must not contain NUL, which PostgreSQL text cannot hold).
    public var postgresText: String { self }
}

extension Substring: PostgresBindable {
    /// The substring's text.
    public var postgresText: String { String(self) }
}

extension Int: PostgresBindable {
    /// Decimal digits.
    public var postgresText: String { String(self) }
}

extension Int16: PostgresBindable {
    /// Decimal digits.
    public var postgresText: String { String(self) }
}

extension Int32: PostgresBindable {
    /// Decimal digits.
    public var postgresText: String { String(self) }
}

extension Int64: PostgresBindable {
    /// Decimal digits.
    public var postgresText: String { String(self) }
}

extension UInt32: PostgresBindable {
    /// Decimal digits (for `oid` and `bigint` columns).
    public var postgresText: String { String(self) }
}

extension Double: PostgresBindable {
    /// The shortest text that reads back as exactly this value (e.g. `0.1`, `1e-300`); `NaN`, `Infinity` and
    /// `-Infinity` for the non-finite values, which `double precision` (and `numeric` since PostgreSQL 14) accept.
    public var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Float: PostgresBindable {
    /// The shortest text that reads back as exactly this `real` value; `NaN`, `Infinity`, `-Infinity` when not
    /// finite. Bound to a `double precision` column it is the nearest double to that text (e.g. 0.1), not the
    /// widened binary value.
    public var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Bool: PostgresBindable {
    /// `t` or `f`.
    public var postgresText: String { self ? "t" : "f" }
}

extension Date: PostgresBindable {
    /// A `timestamptz` literal in UTC with microsecond precision, e.g. `2024-01-02 03:04:05.123456+00`;
    /// see ``PostgresTimestamp/text(for:)``.
    public var postgresText: String { PostgresTimestamp.text(for: self) }
}

extension UUID: PostgresBindable {
    /// The lowercase canonical form, e.g. `123e4567-e89b-12d3-a456-426614174000`.
    public var postgresText: String { uuidString.lowercased() }
}
