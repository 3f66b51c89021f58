/// An error of the `Postgres` module: what went wrong (``code``) and what the server or libpq said about it.
///
/// Modelled on postgres-nio's `PSQLError`: a struct with a nested ``Code``, carrying the server's message and
/// diagnostic fields, never a bare string. Parameter values are never stored (they may hold secrets); the SQL
/// text is (``query``).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure. Compare with the static members, e.g. `error.code == .queryFailed`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connectionFailed
            case connectionLost
            case queryFailed
            case copyFailed
            case unexpectedResult
            case invalidArgument
            case decodingFailed
            case transactionRolledBack
            case cancelFailed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// Opening the connection failed (server unreachable, authentication refused, bad connection string).
        public static let connectionFailed = Code(.connectionFailed)
        /// The connection is broken or closed; the caller should open a new one and retry.
        public static let connectionLost = Code(.connectionLost)
        /// The server rejected the statement; ``PostgresError/sqlState`` says why.
        public static let queryFailed = Code(.queryFailed)
        /// Sending COPY data to the server failed on the client side.
        public static let copyFailed = Code(.copyFailed)
        /// The server answered something this API does not expect here (e.g. a COPY statement given to `execute`).
        public static let unexpectedResult = Code(.unexpectedResult)
        /// An argument cannot be sent as given (NUL byte in a string, invalid channel name, too many parameters).
        public static let invalidArgument = Code(.invalidArgument)
        /// A value in a ``PostgresResult`` is not in the text form the typed accessor expects.
        public static let decodingFailed = Code(.decodingFailed)
        /// `COMMIT` answered `ROLLBACK`: an earlier statement of the transaction failed and its error was swallowed.
        public static let transactionRolledBack = Code(.transactionRolledBack)
        /// The cancel request could not be sent to the server.
        public static let cancelFailed = Code(.cancelFailed)

        /// The code's name, e.g. `queryFailed`.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// The primary message from the server or libpq, without trailing newlines.
    public var message: String
    /// The SQLSTATE of a server error (e.g. `"23505"` for a unique violation); `nil` for client-side failures.
    public var sqlState: String?
    /// The server's DETAIL line, if any.
    public var detail: String?
    /// The server's HINT line, if any.
    public var hint: String?
    /// The server's severity (`ERROR`, `FATAL`, `PANIC`), if the error came from the server.
    public var severity: String?
    /// The name of the violated constraint, for integrity-constraint errors.
    public var constraintName: String?
    /// The SQL text that failed. Never holds parameter values.
    public var query: String?

    /// Creates an error. Prefer the module's own errors; this exists for tests and wrappers.
    public init(
        code: Code, message: String, sqlState: String? = nil, detail: String? = nil, hint: String? = nil,
        severity: String? = nil, constraintName: String? = nil, query: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.severity = severity
        self.constraintName = constraintName
        self.query = query
    }

    /// SQLSTATEs outside class 08 that still mean "this connection is gone or the server is not available":
    /// admin shutdown, crash shutdown, cannot connect now, idle session timeout.
    private static let connectionSQLStates: Set<String> = ["57P01", "57P02", "57P03", "57P05", "25006"]

    /// `true` when the connection (not the data) is the problem, so the caller should reconnect and retry:
    /// connection failures and losses, server errors of SQLSTATE class 08 or 57P01/57P02/57P03/57P05, and 25006
    /// (a read-only server: a standby, or a primary that became one; with several hosts the reconnect finds the
    /// one that takes writes).
    public var isConnectionError: Bool {
        if code == .connectionFailed || code == .connectionLost {
            return true
        }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || Self.connectionSQLStates.contains(sqlState)
    }

    /// One line for logs: code, message, SQLSTATE, detail, hint and the start of the query. Holds no passwords
    /// and no parameter values.
    ///
    /// libpq's messages may span lines (a failed connection says why for each address it tried, then a tab-indented
    /// "Is the server running…?"): they are joined into one line, so a log line stays one line.
    public var description: String {
        var text = "PostgresError.\(code): \(Self.oneLine(message))"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let detail { text += " DETAIL: \(Self.oneLine(detail))" }
        if let hint { text += " HINT: \(Self.oneLine(hint))" }
        if let query {
            let limit = 300
            let shown = query.count > limit ? String(query.prefix(limit)) + "…" : query
            text += " QUERY: \(Self.oneLine(shown))"
        }
        return text
    }

    /// `message` with its lines trimmed and joined by "; " (empty lines dropped).
    public var oneLineMessage: String { Self.oneLine(message) }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { line in String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
