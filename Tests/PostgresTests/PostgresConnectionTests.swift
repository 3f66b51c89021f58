import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct PostgresConnectionTests {
    @Test func connectsWithURIAndReportsServerInfo() throws {
        let database = try TestDatabase()
        let connection = try database.connect(applicationName: "outletd-test")
        #expect(connection.isHealthy)
        #expect(connection.serverVersion >= 130_000)
        #expect(connection.backendPID > 0)
        let result = try connection.execute(
            "SELECT current_setting('application_name'), current_setting('client_encoding'), pg_backend_pid()")
        #expect(result[0, 0] == "outletd-test")
        #expect(result[0, 1] == "UTF8")
        #expect(try result.int64(row: 0, column: 2) == Int64(connection.backendPID))
    }

    @Test func connectsWithKeywordValueString() throws {
        let database = try TestDatabase()
        let connection = try PostgresConnection(
            connectionString:
                "host=127.0.0.1 port=\(database.stack.postgresPort) dbname=\(database.name) user=postgres "
                + "client_encoding=LATIN1")
        #expect(try connection.execute("SELECT current_database()")[0, 0] == database.name)
        // UTF8 wins over the connection string's encoding.
        #expect(try connection.execute("SHOW client_encoding")[0, 0] == "UTF8")
    }

    @Test func connectionToClosedPortFailsWithLibpqMessage() throws {
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(connectionString: "postgresql://postgres@127.0.0.1:1/postgres")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.isConnectionError == true)
        #expect(error?.message.contains("Connection refused") == true, "\(String(describing: error))")
    }

    @Test func connectionToMissingDatabaseFails() throws {
        let stack = try TestStack.shared()
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(
                connectionString: "postgresql://postgres@127.0.0.1:\(stack.postgresPort)/no_such_database")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("does not exist") == true, "\(String(describing: error))")
    }

    @Test func closeIsIdempotentAndLaterCallsThrowConnectionLost() throws {
        let connection = try TestDatabase().connect()
        connection.close()
        connection.close()
        #expect(!connection.isHealthy)
        #expect(connection.backendPID == 0)
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(error?.code == .connectionLost)
        #expect(error?.isConnectionError == true)
    }

    @Test func syntaxErrorIsQueryFailedWith42601AndConnectionStaysUsable() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELEC 1") }
        #expect(error?.code == .queryFailed)
        #expect(error?.sqlState == "42601")
        #expect(error?.severity == "ERROR")
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.query == "SELEC 1")
        #expect(error?.isConnectionError == false)
        #expect(connection.isHealthy)
        #expect(try connection.execute("SELECT 1 + 1")[0, 0] == "2")
    }

    @Test func parameterisedErrorKeepsSQLButNotParameterValues() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("SELECT $1::int, $2::text", ["not a number", "super-secret-token"])
        }
        #expect(error?.sqlState == "22P02")
        #expect(error?.query == "SELECT $1::int, $2::text")
        #expect(error?.description.contains("super-secret-token") == false)
        #expect(try connection.execute("SELECT $1::int", [7])[0, 0] == "7")
    }

    @Test func uniqueViolationIs23505WithDetailAndConstraint() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE devices (code text CONSTRAINT devices_code_key UNIQUE)")
        try connection.execute("INSERT INTO devices VALUES ($1)", ["A1"])
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("INSERT INTO devices VALUES ($1)", ["A1"])
        }
        #expect(error?.code == .queryFailed)
        #expect(error?.sqlState == "23505")
        #expect(error?.constraintName == "devices_code_key")
        #expect(error?.detail?.contains("already exists") == true)
        #expect(error?.description.contains("SQLSTATE 23505") == true)
        #expect(try connection.execute("SELECT count(*) FROM devices")[0, 0] == "1")
    }

    @Test func serverHintIsReported() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'boom' USING HINT = 'try again', ERRCODE = 'P0001'; END $$")
        }
        #expect(error?.message == "boom")
        #expect(error?.hint == "try again")
        #expect(error?.sqlState == "P0001")
    }

    @Test func resultReportsColumnsTagsAndAffectedRows() throws {
        let connection = try TestDatabase().connect()
        let created = try connection.execute("CREATE TABLE t (id int, name text)")
        #expect(created.commandTag == "CREATE TABLE")
        #expect(created.affectedRows == nil)
        let inserted = try connection.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, 'c')")
        #expect(inserted.commandTag == "INSERT 0 3")
        #expect(inserted.affectedRows == 3)
        let updated = try connection.execute("UPDATE t SET name = $1 WHERE id >= $2", ["z", 2])
        #expect(updated.affectedRows == 2)
        #expect(updated.commandTag == "UPDATE 2")
        let selected = try connection.execute("SELECT id, name FROM t ORDER BY id")
        #expect(selected.rowCount == 3)
        #expect(selected.columnCount == 2)
        #expect(selected.columnNames == ["id", "name"])
        #expect(selected.commandTag == "SELECT 3")
        #expect(selected[0, "name"] == "a")
        #expect(selected[2, 1] == "z")
        #expect(selected.columnIndex(named: "missing") == nil)
        let empty = try connection.execute("SELECT id FROM t WHERE false")
        #expect(empty.rowCount == 0)
        #expect(empty.columnNames == ["id"])
    }

    @Test func typedAccessorsParseTextAndReturnNilForNull() throws {
        let connection = try TestDatabase().connect()
        let result = try connection.execute(
            """
            SELECT 9223372036854775807::bigint AS big, NULL::bigint AS nothing, 2.5::float8 AS ratio,
                   'NaN'::float8 AS nan, '-Infinity'::float8 AS minus, true AS yes, false AS no,
                   '\\x00ff'::bytea AS blob, 'abc' AS word, 42 AS small
            """)
        #expect(try result.int64(row: 0, column: "big") == Int64.max)
        #expect(try result.int64(row: 0, column: "nothing") == nil)
        #expect(try result.int(row: 0, column: "small") == 42)
        #expect(try result.double(row: 0, column: "ratio") == 2.5)
        #expect(try result.double(row: 0, column: "nan")?.isNaN == true)
        #expect(try result.double(row: 0, column: "minus") == -.infinity)
        #expect(try result.bool(row: 0, column: "yes") == true)
        #expect(try result.bool(row: 0, column: "no") == false)
        #expect(try result.bytes(row: 0, column: "blob") == [0x00, 0xFF])
        let error = #expect(throws: PostgresError.self) { try result.int64(row: 0, column: "word") }
        #expect(error?.code == .decodingFailed)
        #expect(throws: PostgresError.self) { try result.date(row: 0, column: "word") }
    }

    @Test func multiStatementScriptRunsAndReturnsLastResult() throws {
        let connection = try TestDatabase().connect()
        let result = try connection.execute(
            """
            CREATE TABLE readings (id serial PRIMARY KEY, watts double precision);
            INSERT INTO readings (watts) VALUES (1.5), (2.5);
            -- a comment; with a semicolon
            INSERT INTO readings (watts) VALUES (3);
            SELECT count(*), sum(watts) FROM readings;
            """)
        #expect(result[0, 0] == "3")
        #expect(result[0, 1] == "7")
    }

    @Test func failingMultiStatementScriptStopsAndRollsBackAsOneTransaction() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.execute(
                """
                CREATE TABLE first (id int);
                INSERT INTO first VALUES ('x');
                CREATE TABLE second (id int);
                """)
        }
        #expect(error?.sqlState == "22P02")
        let tables = try connection.execute(
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('first', 'second')")
        #expect(tables[0, 0] == "0")
    }

    @Test func emptyStatementSucceeds() throws {
        let connection = try TestDatabase().connect()
        let result = try connection.execute("")
        #expect(result.rowCount == 0)
    }

    @Test func copyStatementThroughExecuteIsRejectedAndConnectionStaysUsable() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        let error = #expect(throws: PostgresError.self) { try connection.execute("COPY t FROM STDIN") }
        #expect(error?.code == .unexpectedResult)
        let outError = #expect(throws: PostgresError.self) {
            try connection.execute("COPY (SELECT generate_series(1, 1000)) TO STDOUT")
        }
        #expect(outError?.code == .unexpectedResult)
        #expect(try connection.execute("SELECT 5")[0, 0] == "5")
    }

    @Test func nulByteInParameterIsInvalidArgument() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("SELECT $1::text, $2::text", ["ok", "a\u{0}b"])
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("$2") == true)
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")
    }

    @Test func preparedStatementsRunWithParameters() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (code text, watts float8)")
        try connection.prepare(name: "insert_reading", sql: "INSERT INTO t VALUES ($1, $2)")
        try connection.executePrepared(name: "insert_reading", ["a", 1.5])
        let second = try connection.executePrepared(name: "insert_reading", ["b", nil])
        #expect(second.affectedRows == 1)
        let rows = try connection.execute("SELECT code, watts FROM t ORDER BY code")
        #expect(rows[0, 1] == "1.5")
        #expect(rows[1, 1] == nil)
        let duplicate = #expect(throws: PostgresError.self) {
            try connection.prepare(name: "insert_reading", sql: "SELECT 1")
        }
        #expect(duplicate?.sqlState == "42P05")
        let missing = #expect(throws: PostgresError.self) { try connection.executePrepared(name: "nope") }
        #expect(missing?.sqlState == "26000")
    }

    @Test func workRunsWhileThePreparedStatementExecutes() throws {
        let database = try TestDatabase()
        let connection = try database.connect()
        let observer = try database.connect()
        try connection.prepare(name: "slow", sql: "SELECT pg_sleep(0.5), $1::integer * 2")
        var seenRunning = false
        let result = try connection.executePrepared(name: "slow", [21]) {
            // The statement is on the server while this runs: another session sees it active.
            for _ in 0..<200 where !seenRunning {
                let state = try? observer.execute(
                    "SELECT state FROM pg_stat_activity WHERE pid = $1", [Int(connection.backendPID)])
                seenRunning = state?[0, 0] == "active"
                if !seenRunning { Thread.sleep(forTimeInterval: 0.01) }
            }
        }
        #expect(seenRunning)
        #expect(result[0, 1] == "42")
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")

        try connection.prepare(name: "failing", sql: "SELECT 1 / $1::integer")
        var workRan = false
        let error = #expect(throws: PostgresError.self) {
            try connection.executePrepared(name: "failing", [0]) { workRan = true }
        }
        #expect(workRan)
        #expect(error?.sqlState == "22012")
        #expect(try connection.executePrepared(name: "failing", [1]) {}[0, 0] == "1")
    }

    @Test func noticesGoToTheHandler() throws {
        let connection = try TestDatabase().connect()
        var notices: [PostgresNotice] = []
        connection.noticeHandler = { notices.append($0) }
        try connection.execute("DO $$ BEGIN RAISE NOTICE 'hello %', 42; RAISE WARNING 'careful'; END $$")
        #expect(notices.map(\.message) == ["hello 42", "careful"])
        #expect(notices.map(\.severity) == ["NOTICE", "WARNING"])
        #expect(notices.first?.sqlState == "00000")
        connection.noticeHandler = nil
        try connection.execute("DO $$ BEGIN RAISE NOTICE 'dropped'; END $$")
        #expect(notices.count == 2)
    }

    @Test func cancelFromAnotherThreadStopsRunningStatement() throws {
        let connection = try TestDatabase().connect()
        let handle = try connection.makeCancelHandle()
        let canceller = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            try? handle.cancel()
        }
        canceller.start()
        let started = ContinuousClock.now
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT pg_sleep(20)") }
        #expect(error?.sqlState == "57014")
        #expect(error?.isConnectionError == false)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")
    }
}
