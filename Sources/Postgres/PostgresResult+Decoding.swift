import Foundation

/// Typed accessors that parse PostgreSQL's text output.
///
/// Each returns `nil` for SQL NULL and **throws** ``PostgresError/Code/decodingFailed`` when the text is not in the
/// expected form (so a NULL is never confused with garbage). Like the subscripts, out-of-range indexes and unknown
/// column names trap.
extension PostgresResult {
    /// An integer column (`smallint`, `integer`, `bigint`, `oid`).
    public func int64(row: Int, column: Int) throws(PostgresError) -> Int64? {
        try decode(row: row, column: column, as: "bigint") { Int64($0) }
    }

    /// An integer column (`smallint`, `integer`, `bigint`, `oid`).
    public func int64(row: Int, column: String) throws(PostgresError) -> Int64? {
        try int64(row: row, column: index(of: column))
    }

    /// An integer column as `Int`.
    public func int(row: Int, column: Int) throws(PostgresError) -> Int? {
        try decode(row: row, column: column, as: "integer") { Int($0) }
    }

    /// An integer column as `Int`.
    public func int(row: Int, column: String) throws(PostgresError) -> Int? {
        try int(row: row, column: index(of: column))
    }

    /// A `double precision`, `real` or `numeric` column; `NaN`, `Infinity` and `-Infinity` are understood.
    public func double(row: Int, column: Int) throws(PostgresError) -> Double? {
        try decode(row: row, column: column, as: "double precision") { text in
            switch text {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default: return Double(text)
            }
        }
    }

    /// A `double precision`, `real` or `numeric` column; `NaN`, `Infinity` and `-Infinity` are understood.
    public func double(row: Int, column: String) throws(PostgresError) -> Double? {
        try double(row: row, column: index(of: column))
    }

    /// A `boolean` column (`t` / `f`).
    public func bool(row: Int, column: Int) throws(PostgresError) -> Bool? {
        try decode(row: row, column: column, as: "boolean") { text in
            switch text {
            case "t", "true": return true
            case "f", "false": return false
            default: return nil
            }
        }
    }

    /// A `boolean` column (`t` / `f`).
    public func bool(row: Int, column: String) throws(PostgresError) -> Bool? {
        try bool(row: row, column: index(of: column))
    }

    /// A `timestamptz` column in `DateStyle` ISO, with any offset (`+00`, `+05:30`, `-03`) and up to six
    /// fractional digits; see ``PostgresTimestamp/date(from:)`` for the exact forms.
    public func date(row: Int, column: Int) throws(PostgresError) -> Date? {
        try decode(row: row, column: column, as: "timestamptz") { PostgresTimestamp.date(from: $0) }
    }

    /// A `timestamptz` column; see ``date(row:column:)-(Int,Int)``.
    public func date(row: Int, column: String) throws(PostgresError) -> Date? {
        try date(row: row, column: index(of: column))
    }

    /// A `bytea` column in the default hex output format (`\x0aff…`).
    public func bytes(row: Int, column: Int) throws(PostgresError) -> [UInt8]? {
        try decode(row: row, column: column, as: "bytea") { PostgresBytea.bytes(fromHex: $0) }
    }

    /// A `bytea` column in the default hex output format (`\x0aff…`).
    public func bytes(row: Int, column: String) throws(PostgresError) -> [UInt8]? {
        try bytes(row: row, column: index(of: column))
    }

    private func index(of column: String) -> Int {
        guard let index = columnIndex(named: column) else {
            preconditionFailure("no column \"\(column)\" in \(columnNames)")
        }
        return index
    }

    private func decode<Value>(
        row: Int, column: Int, as typeName: String, _ parse: (String) -> Value?
    ) throws(PostgresError) -> Value? {
        guard let text = self[row, column] else { return nil }
        guard let value = parse(text) else {
            let shown = text.count > 64 ? String(text.prefix(64)) + "…" : text
            throw PostgresError(
                code: .decodingFailed,
                message: "row \(row), column \(columnNames[column]): \"\(shown)\" is not a valid \(typeName)")
        }
        return value
    }
}
