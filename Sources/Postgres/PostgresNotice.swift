import CLibPQ

/// A notice or warning the server sent on a connection (e.g. from `RAISE NOTICE`); see
/// ``PostgresConnection/noticeHandler``.
public struct PostgresNotice: Sendable, Equatable {
    /// `NOTICE`, `WARNING`, `INFO`, `LOG` or `DEBUG`.
    public var severity: String
    /// The primary message.
    public var message: String
    /// The SQLSTATE, e.g. `"01000"` for a warning.
    public var sqlState: String?

    /// Creates a notice.
    public init(severity: String, message: String, sqlState: String? = nil) {
        self.severity = severity
        self.message = message
        self.sqlState = sqlState
    }

    /// Copies the fields out of a libpq notice result (which libpq frees after the receiver returns).
    init(copying result: OpaquePointer) {
        func field(_ letter: Unicode.Scalar) -> String? {
            LibPQ.string(PQresultErrorField(result, Int32(UInt8(ascii: letter))))
        }
        self.init(
            severity: field("V") ?? field("S") ?? "NOTICE",
            message: field("M") ?? LibPQ.trimmed(LibPQ.string(PQresultErrorMessage(result)) ?? ""),
            sqlState: field("C"))
    }
}
