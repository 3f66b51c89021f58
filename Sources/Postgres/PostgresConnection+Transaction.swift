extension PostgresConnection {
    /// Runs `body` in a transaction: `BEGIN`, `body`, `COMMIT`. When `body` throws (any error type), the
    /// transaction is rolled back and the error rethrown unchanged.
    ///
    /// - Throws: ``PostgresError/Code/transactionRolledBack`` when `COMMIT` answered `ROLLBACK` because a statement
    ///   inside failed and `body` swallowed its error; ``PostgresError/Code/invalidArgument`` when a transaction is
    ///   already open on this connection (nesting would commit the outer one early); errors of `BEGIN` / `COMMIT`.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        let connection = try requireConnection(query: "BEGIN")
        guard LibPQ.isIdle(connection) else {
            throw PostgresError(
                code: .invalidArgument, message: "a transaction is already open on this connection", query: "BEGIN")
        }
        try execute("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            // The original error matters more than a failed ROLLBACK (which a broken connection implies anyway).
            _ = try? execute("ROLLBACK")
            throw error
        }
        let commit = try execute("COMMIT")
        guard commit.commandTag == "COMMIT" else {
            throw PostgresError(
                code: .transactionRolledBack,
                message: "the transaction was rolled back because a statement in it failed", query: "COMMIT")
        }
        return value
    }
}
