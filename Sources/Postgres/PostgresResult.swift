import CLibPQ

/// The outcome of one statement: rows as PostgreSQL's text output, plus the command tag.
///
/// All values are copied out of libpq's `PGresult` when the result is made (and the `PGresult` is freed right
/// away), so this is a plain `Sendable` value, independent of the connection.
///
/// Cells are read by `[row, column]`; column indexes and row indexes start at 0. Like `Array`, an index out of
/// range (or an unknown column name) is a programmer error and traps; use ``columnIndex(named:)`` to check first.
/// The typed accessors in `PostgresResult+Decoding.swift` parse the text form.
public struct PostgresResult: Sendable {
    /// The number of rows returned (0 for commands without rows).
    public let rowCount: Int
    /// The number of columns returned.
    public let columnCount: Int
    /// The column names in order, as the server reports them (`?column?` for unnamed expressions).
    public let columnNames: [String]
    /// Rows affected by INSERT, UPDATE, DELETE, MERGE, SELECT, MOVE, FETCH, COPY (`PQcmdTuples`); `nil` for
    /// commands that report none (CREATE, BEGIN, …).
    public let affectedRows: Int?
    /// The command tag, e.g. `INSERT 0 1`, `UPDATE 3`, `CREATE TABLE` (`PQcmdStatus`).
    public let commandTag: String
    /// Cell texts, row by row; `nil` = SQL NULL.
    private let cells: [String?]

    /// Creates a result from values, for tests and fakes. Every row must have `columnNames.count` cells.
    public init(columnNames: [String], rows: [[String?]], commandTag: String = "SELECT", affectedRows: Int? = nil) {
        precondition(rows.allSatisfy { $0.count == columnNames.count }, "every row needs one cell per column")
        self.rowCount = rows.count
        self.columnCount = columnNames.count
        self.columnNames = columnNames
        self.cells = rows.flatMap { $0 }
        self.commandTag = commandTag
        self.affectedRows = affectedRows ?? rows.count
    }

    /// Copies everything out of a successful `PGresult`; the caller still owns (and clears) it.
    init(copying result: OpaquePointer) {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var names: [String] = []
        names.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            names.append(LibPQ.string(PQfname(result, Int32(column))) ?? "")
        }
        var cells: [String?] = []
        cells.reserveCapacity(rowCount * columnCount)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) != 0 {
                    cells.append(nil)
                } else if let value = PQgetvalue(result, row, column) {
                    let length = Int(PQgetlength(result, row, column))
                    let bytes = UnsafeRawBufferPointer(start: value, count: length)
                    cells.append(String(decoding: bytes, as: UTF8.self))
                } else {
                    cells.append(nil)
                }
            }
        }
        self.rowCount = rowCount
        self.columnCount = columnCount
        self.columnNames = names
        self.cells = cells
        self.commandTag = LibPQ.commandTag(result)
        self.affectedRows = LibPQ.affectedRows(result)
    }

    /// The index of the first column called `name`, or `nil`.
    public func columnIndex(named name: String) -> Int? {
        columnNames.firstIndex(of: name)
    }

    /// The text of a cell; `nil` for SQL NULL. Traps when `row` or `column` is out of range.
    public subscript(row: Int, column: Int) -> String? {
        precondition(row >= 0 && row < rowCount, "row \(row) out of range 0..<\(rowCount)")
        precondition(column >= 0 && column < columnCount, "column \(column) out of range 0..<\(columnCount)")
        return cells[row * columnCount + column]
    }

    /// The text of a cell in the first column called `column`; `nil` for SQL NULL. Traps when `row` is out of
    /// range or there is no such column.
    public subscript(row: Int, column: String) -> String? {
        guard let index = columnIndex(named: column) else {
            preconditionFailure("no column \"\(column)\" in \(columnNames)")
        }
        return self[row, index]
    }
}
