import CLibPQ

extension PostgresConnection {
    /// The size of the pieces `copyIn` hands to `PQputCopyData`.
    static let copyChunkSize = 64 * 1024

    /// Runs `COPY … FROM STDIN` and sends `data`, which must already be in the format the statement names
    /// (text, CSV or binary), in pieces of 64 KiB. Returns the number of rows copied (from the command tag).
    ///
    /// - Throws: ``PostgresError/Code/queryFailed`` with the server's message and SQLSTATE when a row is rejected
    ///   (e.g. `22P02` for a malformed number); nothing is copied then and the connection stays usable.
    ///   ``PostgresError/Code/unexpectedResult`` when `sql` is not a `COPY … FROM STDIN`.
    ///   ``PostgresError/Code/connectionLost`` when the connection broke.
    @discardableResult
    public func copyIn(_ sql: String, data: [UInt8]) throws(PostgresError) -> Int {
        var sent = false
        var producerError: (any Error)?
        return try copyIn(sql, producerError: &producerError) {
            defer { sent = true }
            return sent ? nil : data[...]
        }
    }

    /// Runs `COPY … FROM STDIN` and streams the chunks `nextChunk` returns (already in the statement's format)
    /// until it returns `nil` (each in pieces of at most 64 KiB). Returns the number of rows copied.
    ///
    /// When `nextChunk` throws, the COPY is aborted (`PQputCopyEnd` with an error message, so the server rolls the
    /// statement back), the connection is left usable, and `nextChunk`'s error is rethrown. Otherwise errors are
    /// ``PostgresError``s as for ``copyIn(_:data:)``.
    @discardableResult
    public func copyIn(_ sql: String, chunks nextChunk: () throws -> [UInt8]?) throws -> Int {
        var producerError: (any Error)?
        let rows: Int
        do {
            rows = try copyIn(sql, producerError: &producerError) { try nextChunk().map { $0[...] } }
        } catch {
            throw producerError ?? error
        }
        if let producerError {
            throw producerError
        }
        return rows
    }

    /// The COPY protocol. An error thrown by `nextChunk` aborts the COPY and lands in `producerError`.
    private func copyIn(
        _ sql: String, producerError: inout (any Error)?,
        nextChunk: () throws -> ArraySlice<UInt8>?
    ) throws(PostgresError) -> Int {
        let connection = try requireConnection(query: sql)
        try LibPQ.rejectNUL(sql, what: "SQL")
        guard let start = PQexec(connection, sql) else {
            throw LibPQ.connectionError(connection, fallbackCode: .copyFailed, query: sql)
        }
        guard case .copyIn = LibPQ.outcome(of: start) else {
            // Not in COPY IN state: report the error, or that the statement was not a COPY FROM STDIN.
            let rejected: PostgresError
            if case .failure = LibPQ.outcome(of: start) {
                rejected = LibPQ.resultError(start, connection: connection, query: sql)
            } else {
                rejected = PostgresError(
                    code: .unexpectedResult, message: "copyIn needs a COPY … FROM STDIN statement", query: sql)
            }
            PQclear(start)
            LibPQ.drainResults(connection, query: sql)
            throw rejected
        }
        PQclear(start)

        var sendError: PostgresError?
        while sendError == nil {
            let chunk: ArraySlice<UInt8>?
            do {
                chunk = try nextChunk()
            } catch {
                producerError = error
                break
            }
            guard let chunk else { break }
            var pieceStart = chunk.startIndex
            while pieceStart < chunk.endIndex, sendError == nil {
                let pieceEnd = min(pieceStart + Self.copyChunkSize, chunk.endIndex)
                let outcome = chunk[pieceStart..<pieceEnd].withUnsafeBytes { bytes in
                    Result { () throws(PostgresError) in try LibPQ.putCopyData(connection, bytes, query: sql) }
                }
                if case .failure(let error) = outcome {
                    sendError = error
                }
                pieceStart = pieceEnd
            }
        }

        let abortMessage: String? =
            if producerError != nil { "aborted by the client: the data source failed" } else if sendError != nil {
                "aborted by the client: sending data failed"
            } else { nil }
        do {
            try LibPQ.putCopyEnd(connection, errorMessage: abortMessage, query: sql)
        } catch {
            sendError = sendError ?? error
        }

        var rows = 0
        var serverError: PostgresError?
        while let result = PQgetResult(connection) {
            switch LibPQ.outcome(of: result) {
            case .success:
                rows = LibPQ.affectedRows(result) ?? 0
            case .failure:
                if serverError == nil {
                    serverError = LibPQ.resultError(result, connection: connection, query: sql)
                }
            case .copyIn:
                try? LibPQ.putCopyEnd(connection, errorMessage: "aborted by the client", query: sql)
            case .copyOut:
                LibPQ.discardCopyOutData(connection)
            case .unexpected(let status):
                if serverError == nil {
                    serverError = PostgresError(
                        code: .unexpectedResult, message: "unexpected result status \(status)", query: sql)
                }
            }
            PQclear(result)
        }
        if producerError != nil {
            // The server's "COPY from stdin failed" (57014) is only the echo of our abort.
            return 0
        }
        if let error = serverError ?? sendError {
            throw error
        }
        guard LibPQ.isConnected(connection) else {
            throw LibPQ.connectionError(connection, fallbackCode: .connectionLost, query: sql)
        }
        return rows
    }
}
