import CLibPQ

/// A synchronous libpq connection to PostgreSQL.
///
/// **Threading.** Not thread-safe and deliberately not `Sendable`: one thread uses it at a time. Every call
/// blocks until the server answers, so it must never run on Swift's cooperative thread pool; the daemon gives each
/// connection a dedicated thread. The only thing another thread may do is cancel the running statement, through
/// the `Sendable` ``PostgresCancelHandle`` from ``makeCancelHandle()``.
///
/// **Errors.** Every failure is a ``PostgresError``. When ``PostgresError/isConnectionError`` is `true` the
/// connection is gone: close it, open a new one and retry; otherwise the statement or its data was rejected and
/// the connection is still usable.
///
/// **Notices.** Once connected, server notices and warnings never reach standard error: they go to
/// ``noticeHandler`` when one is set and are discarded otherwise. (A warning sent during the startup handshake
/// itself, before `init` returns, still goes to libpq's default processor.)
public final class PostgresConnection {
    /// The libpq connection; `nil` once closed.
    private var handle: OpaquePointer?

    /// Called with every notice or warning the server sends on this connection (e.g. `RAISE NOTICE`), on the
    /// thread that is calling into the connection at that moment. `nil` (the default) discards them.
    public var noticeHandler: ((PostgresNotice) -> Void)?

    /// Opens a connection and waits until it is ready.
    ///
    /// - Parameters:
    ///   - connectionString: a libpq connection string, either `host=… port=… dbname=… user=…` or a
    ///     `postgresql://user@host:port/db?…` URI. Without a `connect_timeout` in it, 10 seconds apply.
    ///   - applicationName: shown in `pg_stat_activity`; overrides one in the connection string.
    /// - Throws: ``PostgresError/Code/connectionFailed`` with libpq's message (which never holds the password).
    ///
    /// `client_encoding` is always UTF8, whatever the connection string says, because results are decoded as UTF-8.
    public init(connectionString: String, applicationName: String? = nil) throws(PostgresError) {
        // Entries before `dbname` are defaults the expanded connection string may override; entries after it win.
        var keywords: [String?] = ["connect_timeout", "dbname", "client_encoding"]
        var values: [String?] = ["10", connectionString, "UTF8"]
        if let applicationName {
            keywords.append("application_name")
            values.append(applicationName)
        }
        keywords.append(nil)
        values.append(nil)
        let valueOffset = keywords.count
        let describe = { (index: Int) in index == valueOffset + 1 ? "connection string" : "application name" }
        let connection = try LibPQ.withCStrings(
            keywords + values, describe: describe,
            body: { pointers in
                PQconnectdbParams(Array(pointers[..<valueOffset]), Array(pointers[valueOffset...]), 1)
            })
        guard let connection else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard LibPQ.isConnected(connection) else {
            let message = LibPQ.connectionMessage(connection)
            PQfinish(connection)
            throw PostgresError(code: .connectionFailed, message: message)
        }
        self.handle = connection
        PQsetNoticeReceiver(connection, postgresNoticeReceiver, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        close()
    }

    /// Closes the connection. Safe to call more than once; later calls on the connection throw
    /// ``PostgresError/Code/connectionLost``.
    public func close() {
        guard let connection = handle else { return }
        handle = nil
        PQsetNoticeReceiver(connection, postgresDiscardingNoticeReceiver, nil)
        PQfinish(connection)
    }

    /// `true` while the connection is open and libpq considers it good (`CONNECTION_OK`). Turns `false` only after
    /// a call has noticed the loss; it does not probe the server.
    public var isHealthy: Bool {
        guard let handle else { return false }
        return LibPQ.isConnected(handle)
    }

    /// The server's version as an integer, e.g. `150018` for 15.18; 0 when closed.
    public var serverVersion: Int {
        guard let handle else { return 0 }
        return Int(PQserverVersion(handle))
    }

    /// The process ID of the server backend serving this connection; 0 when closed.
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// Runs SQL and returns its result.
    ///
    /// Without parameters the text goes through the simple query protocol (`PQexec`), so it may hold several
    /// statements separated by semicolons (a whole migration file); they run in one implicit transaction unless
    /// the script has its own `BEGIN`/`COMMIT`, the result is the last statement's, and the first failing statement
    /// stops the script. With parameters (`$1`, `$2`, … in text format, `nil` = SQL NULL) it must be one statement
    /// (`PQexecParams`).
    ///
    /// - Throws: ``PostgresError/Code/queryFailed`` with the SQLSTATE for server errors,
    ///   ``PostgresError/Code/connectionLost`` when the connection broke, ``PostgresError/Code/unexpectedResult``
    ///   for a `COPY` statement (use ``copyIn(_:data:)``), ``PostgresError/Code/invalidArgument`` for NUL bytes or
    ///   more than 65535 parameters.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) throws(PostgresError)
        -> PostgresResult
    {
        let connection = try requireConnection(query: sql)
        try LibPQ.rejectNUL(sql, what: "SQL")
        guard !parameters.isEmpty else {
            return try LibPQ.consume(PQexec(connection, sql), connection: connection, query: sql)
        }
        let texts = try Self.parameterTexts(parameters, query: sql)
        let result = try LibPQ.withCStrings(texts, describe: Self.parameterName) { pointers in
            PQexecParams(connection, sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
        }
        return try LibPQ.consume(result, connection: connection, query: sql)
    }

    /// Prepares a named statement on this connection (`PQprepare`), with parameter types inferred by the server.
    /// The name lives as long as the connection; preparing the same name twice fails with SQLSTATE `42P05`.
    public func prepare(name: String, sql: String) throws(PostgresError) {
        let connection = try requireConnection(query: sql)
        try LibPQ.rejectNUL(sql, what: "SQL")
        try LibPQ.rejectNUL(name, what: "statement name")
        _ = try LibPQ.consume(PQprepare(connection, name, sql, 0, nil), connection: connection, query: sql)
    }

    /// Runs a statement made by ``prepare(name:sql:)`` with text-format parameters (`nil` = SQL NULL).
    /// The error's ``PostgresError/query`` is the statement name, as the SQL is not known here.
    @discardableResult
    public func executePrepared(name: String, _ parameters: [(any PostgresBindable)?] = []) throws(PostgresError)
        -> PostgresResult
    {
        let (connection, description, result) = try callPrepared(name: name, parameters) { connection, pointers in
            PQexecPrepared(connection, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        return try LibPQ.consume(result, connection: connection, query: description)
    }

    /// ``executePrepared(name:_:)`` that runs `work` on the calling thread while the server executes the
    /// statement, then waits for the result: the client's own work for what comes next overlaps the server's.
    /// `work` must not use this connection (a statement is in flight); what it computes it keeps itself.
    /// Should the statement fail, the error is thrown once `work` has returned.
    @discardableResult
    public func executePrepared(
        name: String, _ parameters: [(any PostgresBindable)?] = [], whileRunning work: () -> Void
    ) throws(PostgresError) -> PostgresResult {
        let (connection, description, sent) = try callPrepared(name: name, parameters) { connection, pointers in
            PQsendQueryPrepared(connection, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        guard sent == 1 else {
            throw LibPQ.connectionError(connection, fallbackCode: .connectionLost, query: description)
        }
        work()
        // One statement: its result, then none (`PQgetResult` blocks until the server has answered).
        let result = try LibPQ.consume(PQgetResult(connection), connection: connection, query: description)
        if let error = LibPQ.drainResults(connection, query: description) {
            throw error
        }
        return result
    }

    /// A handle another thread can use to cancel the statement running on this connection. Make it while the
    /// connection is idle (on the connection's thread), then hand it over; it stays valid after the connection
    /// closes (cancelling then does nothing useful).
    public func makeCancelHandle() throws(PostgresError) -> PostgresCancelHandle {
        let connection = try requireConnection(query: nil)
        guard let cancel = PQgetCancel(connection) else {
            throw LibPQ.connectionError(connection, fallbackCode: .connectionLost, query: nil)
        }
        return PostgresCancelHandle(taking: cancel)
    }

    // MARK: - Internal

    /// What both `executePrepared` functions do first: checks the connection and the name, and
    /// calls `call` (the libpq function) with the parameters as C strings. Returns the connection
    /// and the statement's description for errors with `call`'s result.
    private func callPrepared<Result>(
        name: String, _ parameters: [(any PostgresBindable)?],
        _ call: (OpaquePointer, [UnsafePointer<CChar>?]) -> Result
    ) throws(PostgresError) -> (OpaquePointer, String, Result) {
        let description = "EXECUTE \(name)"
        let connection = try requireConnection(query: description)
        try LibPQ.rejectNUL(name, what: "statement name")
        let texts = try Self.parameterTexts(parameters, query: description)
        let result = try LibPQ.withCStrings(texts, describe: Self.parameterName) { pointers in
            call(connection, pointers)
        }
        return (connection, description, result)
    }

    /// The open libpq connection, or ``PostgresError/Code/connectionLost`` when closed or known to be broken.
    func requireConnection(query: String?) throws(PostgresError) -> OpaquePointer {
        guard let handle else {
            throw PostgresError(code: .connectionLost, message: "the connection is closed", query: query)
        }
        guard LibPQ.isConnected(handle) else {
            let message = LibPQ.connectionMessage(handle)
            throw PostgresError(
                code: .connectionLost, message: message.isEmpty ? "the connection is broken" : message, query: query)
        }
        return handle
    }

    /// Delivers a notice to ``noticeHandler``; called by libpq's notice receiver.
    fileprivate func deliver(_ notice: PostgresNotice) {
        noticeHandler?(notice)
    }

    private static func parameterName(index: Int) -> String {
        "parameter $\(index + 1)"
    }

    private static func parameterTexts(
        _ parameters: [(any PostgresBindable)?], query: String
    ) throws(PostgresError) -> [String?] {
        guard parameters.count <= Int(UInt16.max) else {
            throw PostgresError(
                code: .invalidArgument, message: "\(parameters.count) parameters; PostgreSQL accepts at most 65535",
                query: query)
        }
        return parameters.map { $0?.postgresText }
    }
}

/// `PostgresConnection` is used by one thread at a time; see its documentation.
@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// libpq notice receiver: forwards the notice to the connection passed as `argument`.
private func postgresNoticeReceiver(argument: UnsafeMutableRawPointer?, result: OpaquePointer?) {
    guard let argument, let result else { return }
    let connection = Unmanaged<PostgresConnection>.fromOpaque(argument).takeUnretainedValue()
    connection.deliver(PostgresNotice(copying: result))
}

/// libpq notice receiver that drops everything; installed while closing.
private func postgresDiscardingNoticeReceiver(argument: UnsafeMutableRawPointer?, result: OpaquePointer?) {}
