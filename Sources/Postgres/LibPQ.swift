import CLibPQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one place where libpq's return codes and result statuses become Swift values or ``PostgresError``s.
/// Nothing outside this file (and the connection's own C calls that immediately hand their result here) looks at
/// `PGRES_*`, `CONNECTION_*` or libpq's integer return codes.
enum LibPQ {
    /// Single-letter codes of `PQresultErrorField` (the `PG_DIAG_*` macros of `postgres_ext.h`).
    private enum DiagnosticField {
        static let severity = Int32(UInt8(ascii: "V"))  // non-localised severity
        static let localizedSeverity = Int32(UInt8(ascii: "S"))
        static let sqlState = Int32(UInt8(ascii: "C"))
        static let primaryMessage = Int32(UInt8(ascii: "M"))
        static let detail = Int32(UInt8(ascii: "D"))
        static let hint = Int32(UInt8(ascii: "H"))
        static let constraintName = Int32(UInt8(ascii: "n"))
    }

    /// What a finished `PGresult` means to the caller.
    enum Outcome {
        /// `PGRES_COMMAND_OK`, `PGRES_TUPLES_OK` or `PGRES_EMPTY_QUERY`.
        case success
        /// The server is waiting for COPY data (`PGRES_COPY_IN`).
        case copyIn
        /// The server is sending COPY data (`PGRES_COPY_OUT` / `PGRES_COPY_BOTH`).
        case copyOut
        /// An error result.
        case failure
        /// A status this module never asks for (pipeline, single-row mode).
        case unexpected(String)
    }

    static func outcome(of result: OpaquePointer) -> Outcome {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .success
        case PGRES_COPY_IN:
            return .copyIn
        case PGRES_COPY_OUT, PGRES_COPY_BOTH:
            return .copyOut
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
            return .failure
        default:
            return .unexpected(string(PQresStatus(status)) ?? "status \(status.rawValue)")
        }
    }

    /// `true` while the connection is usable.
    static func isConnected(_ connection: OpaquePointer) -> Bool {
        PQstatus(connection) == CONNECTION_OK
    }

    /// `true` when the connection is idle outside a transaction block.
    static func isIdle(_ connection: OpaquePointer) -> Bool {
        PQtransactionStatus(connection) == PQTRANS_IDLE
    }

    /// libpq's last message on this connection, trimmed.
    static func connectionMessage(_ connection: OpaquePointer) -> String {
        trimmed(string(PQerrorMessage(connection)) ?? "")
    }

    /// The error for a failed call that produced no result (or a failed `PQputCopyData` and friends): the
    /// connection is lost when libpq says so, else `fallbackCode`.
    static func connectionError(
        _ connection: OpaquePointer, fallbackCode: PostgresError.Code, query: String?
    ) -> PostgresError {
        let message = connectionMessage(connection)
        let code: PostgresError.Code = isConnected(connection) ? fallbackCode : .connectionLost
        return PostgresError(
            code: code, message: message.isEmpty ? "no result from libpq" : message, query: query)
    }

    /// The error described by an error result. When the connection has gone bad meanwhile, the code is
    /// ``PostgresError/Code/connectionLost`` (keeping the server's SQLSTATE, e.g. `57P01`, if it sent one).
    static func resultError(_ result: OpaquePointer, connection: OpaquePointer, query: String?) -> PostgresError {
        func field(_ name: Int32) -> String? {
            string(PQresultErrorField(result, name))
        }
        let message =
            field(DiagnosticField.primaryMessage)
            ?? nonEmpty(trimmed(string(PQresultErrorMessage(result)) ?? ""))
            ?? nonEmpty(connectionMessage(connection))
            ?? "unknown error"
        let code: PostgresError.Code = isConnected(connection) ? .queryFailed : .connectionLost
        return PostgresError(
            code: code, message: trimmed(message), sqlState: field(DiagnosticField.sqlState),
            detail: field(DiagnosticField.detail), hint: field(DiagnosticField.hint),
            severity: field(DiagnosticField.severity) ?? field(DiagnosticField.localizedSeverity),
            constraintName: field(DiagnosticField.constraintName), query: query)
    }

    /// Reads and discards every pending result, finishing any COPY the server started, so the connection is
    /// ready for the next command. Returns the first error result's error, if any.
    @discardableResult
    static func drainResults(_ connection: OpaquePointer, query: String?) -> PostgresError? {
        var firstError: PostgresError?
        while let result = PQgetResult(connection) {
            switch outcome(of: result) {
            case .copyIn:
                try? putCopyEnd(connection, errorMessage: "COPY FROM STDIN is only supported by copyIn", query: "")
            case .copyOut:
                discardCopyOutData(connection)
            case .failure:
                if firstError == nil {
                    firstError = resultError(result, connection: connection, query: query)
                }
            case .success, .unexpected:
                break
            }
            PQclear(result)
        }
        return firstError
    }

    /// Reads COPY TO STDOUT data until the server ends it.
    static func discardCopyOutData(_ connection: OpaquePointer) {
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(connection, &buffer, 0)
            if let buffer {
                PQfreemem(buffer)
            }
            if length < 0 {
                return
            }
        }
    }

    /// Turns a result of `PQexec`, `PQexecParams`, `PQprepare` or `PQexecPrepared` into a ``PostgresResult``
    /// or throws, clearing it either way. A COPY the statement started is ended so the connection stays usable.
    static func consume(
        _ result: OpaquePointer?, connection: OpaquePointer, query: String
    ) throws(PostgresError) -> PostgresResult {
        guard let result else {
            throw connectionError(connection, fallbackCode: .unexpectedResult, query: query)
        }
        let outcome = outcome(of: result)
        switch outcome {
        case .success:
            defer { PQclear(result) }
            return PostgresResult(copying: result)
        case .failure:
            let error = resultError(result, connection: connection, query: query)
            PQclear(result)
            drainResults(connection, query: query)
            throw error
        case .copyIn, .copyOut:
            if case .copyIn = outcome {
                try? putCopyEnd(connection, errorMessage: "COPY FROM STDIN is only supported by copyIn", query: query)
            } else {
                discardCopyOutData(connection)
            }
            PQclear(result)
            drainResults(connection, query: query)
            throw PostgresError(
                code: isConnected(connection) ? .unexpectedResult : .connectionLost,
                message: "COPY statements are not supported here; use copyIn(_:data:)", query: query)
        case .unexpected(let status):
            PQclear(result)
            drainResults(connection, query: query)
            throw PostgresError(code: .unexpectedResult, message: "unexpected result status \(status)", query: query)
        }
    }

    /// Sends one piece of COPY data (`PQputCopyData`, blocking mode).
    static func putCopyData(
        _ connection: OpaquePointer, _ bytes: UnsafeRawBufferPointer, query: String
    ) throws(PostgresError) {
        let sent = PQputCopyData(
            connection, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(clamping: bytes.count))
        guard sent == 1 else {
            throw connectionError(connection, fallbackCode: .copyFailed, query: query)
        }
    }

    /// Ends COPY data (`PQputCopyEnd`); with an `errorMessage` the server aborts the COPY with that message.
    static func putCopyEnd(_ connection: OpaquePointer, errorMessage: String?, query: String) throws(PostgresError) {
        guard PQputCopyEnd(connection, errorMessage) == 1 else {
            throw connectionError(connection, fallbackCode: .copyFailed, query: query)
        }
    }

    /// Waits until the connection's socket is readable or `milliseconds` have passed (`poll`). Returns whether it
    /// is readable; a signal interrupting the wait counts as "not yet".
    static func waitUntilReadable(_ connection: OpaquePointer, milliseconds: Int32) throws(PostgresError) -> Bool {
        let socket = PQsocket(connection)
        guard socket >= 0 else {
            throw connectionError(connection, fallbackCode: .connectionLost, query: nil)
        }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 {
            let number = errno
            if number == EINTR { return false }
            let reason = String(cString: strerror(number))
            throw PostgresError(code: .connectionLost, message: "poll on the connection failed: \(reason)")
        }
        return ready > 0
    }

    /// Reads what the server sent (`PQconsumeInput`); throws ``PostgresError/Code/connectionLost`` when the
    /// connection broke.
    static func consumeInput(_ connection: OpaquePointer) throws(PostgresError) {
        guard PQconsumeInput(connection) == 1, isConnected(connection) else {
            throw connectionError(connection, fallbackCode: .connectionLost, query: nil)
        }
    }

    /// Sends a cancel request (`PQcancel`); throws ``PostgresError/Code/cancelFailed`` with libpq's message.
    static func cancel(_ cancelObject: OpaquePointer) throws(PostgresError) {
        let bufferSize = 256
        var buffer = [CChar](repeating: 0, count: bufferSize)
        guard PQcancel(cancelObject, &buffer, Int32(bufferSize)) == 1 else {
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            throw PostgresError(code: .cancelFailed, message: trimmed(String(decoding: bytes, as: UTF8.self)))
        }
    }

    /// The text of a result's command tag (`PQcmdStatus`).
    static func commandTag(_ result: OpaquePointer) -> String {
        string(PQcmdStatus(result)) ?? ""
    }

    /// The row count of `PQcmdTuples`, `nil` when the command reports none.
    static func affectedRows(_ result: OpaquePointer) -> Int? {
        string(PQcmdTuples(result)).flatMap { Int($0) }
    }

    /// Calls `body` with NUL-terminated copies of `strings` (`nil` stays a null pointer), all alive for the call.
    /// Throws ``PostgresError/Code/invalidArgument`` when a string contains a NUL byte, which C cannot carry.
    static func withCStrings<Result>(
        _ strings: [String?], describe: (Int) -> String, body: ([UnsafePointer<CChar>?]) -> Result
    ) throws(PostgresError) -> Result {
        var byteCount = 0
        for string in strings {
            if let string {
                byteCount += string.utf8.count + 1
            }
        }
        let storage = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(byteCount, 1))
        defer { storage.deallocate() }
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(strings.count)
        var offset = 0
        for (index, string) in strings.enumerated() {
            guard let string, let base = storage.baseAddress else {
                pointers.append(nil)
                continue
            }
            let start = offset
            for byte in string.utf8 {
                guard byte != 0 else {
                    throw PostgresError(
                        code: .invalidArgument, message: "\(describe(index)) contains a NUL byte")
                }
                storage[offset] = CChar(bitPattern: byte)
                offset += 1
            }
            storage[offset] = 0
            offset += 1
            pointers.append(UnsafePointer(base + start))
        }
        return body(pointers)
    }

    /// Throws ``PostgresError/Code/invalidArgument`` when `text` contains a NUL byte.
    static func rejectNUL(_ text: String, what: String) throws(PostgresError) {
        if text.utf8.contains(0) {
            throw PostgresError(code: .invalidArgument, message: "\(what) contains a NUL byte")
        }
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    static func string(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    static func trimmed(_ text: String) -> String {
        var scalars = Substring(text)
        while let last = scalars.last, last.isWhitespace {
            scalars.removeLast()
        }
        while let first = scalars.first, first.isWhitespace {
            scalars.removeFirst()
        }
        return String(scalars)
    }

    private static func nonEmpty(_ text: String) -> String? {
        text.isEmpty ? nil : text
    }
}
