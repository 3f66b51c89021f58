import Postgres
import Testing

@Suite struct PostgresConnectionTransactionTests {
    struct Abort: Error, Equatable {}

    @Test func commitsWhenBodySucceeds() throws {
        let database = try TestDatabase()
        let connection = try database.connect()
        try connection.execute("CREATE TABLE t (id int)")
        let value = try connection.transaction {
            try connection.execute("INSERT INTO t VALUES (1), (2)")
            return 42
        }
        #expect(value == 42)
        // Visible from another session, so it was really committed.
        let other = try database.connect()
        #expect(try other.execute("SELECT count(*) FROM t")[0, 0] == "2")
    }

    @Test func rollsBackAndRethrowsWhenBodyThrows() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        #expect(throws: Abort()) {
            try connection.transaction {
                try connection.execute("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "0")
        // Idle again: a new transaction works.
        try connection.transaction { try connection.execute("INSERT INTO t VALUES (3)") }
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "1")
    }

    @Test func rollsBackWhenAStatementFails() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int UNIQUE)")
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction {
                try connection.execute("INSERT INTO t VALUES (1)")
                try connection.execute("INSERT INTO t VALUES (1)")
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "0")
    }

    @Test func swallowedFailureMakesCommitReportRollback() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction {
                try connection.execute("INSERT INTO t VALUES (1)")
                _ = try? connection.execute("SELECT 1/0")
            }
        }
        #expect(error?.code == .transactionRolledBack)
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "0")
    }

    @Test func nestedTransactionIsRejected() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction {
                try connection.transaction {}
            }
        }
        #expect(error?.code == .invalidArgument)
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")
    }
}
