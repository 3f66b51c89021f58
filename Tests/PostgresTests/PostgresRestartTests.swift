import Postgres
import TestSupport
import Testing

/// Restarts PostgreSQL, so it uses a stack of its own: the shared one serves tests running in parallel.
@Suite struct PostgresRestartTests {
    @Test func restartBreaksConnectionsWithConnectionErrorsAndNewConnectionsWork() throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let url = try stack.createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        let listener = try PostgresConnection(connectionString: url)
        try listener.listen("anything")
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")

        try stack.restartPostgres(downFor: 0.5)

        let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(error?.isConnectionError == true, "\(String(describing: error))")
        #expect(!connection.isHealthy)
        // Once broken, it stays broken (no silent reconnect) and says so.
        let again = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(again?.code == .connectionLost)

        let waitError = #expect(throws: PostgresError.self) {
            _ = try listener.waitForNotifications(timeout: .seconds(5))
        }
        #expect(waitError?.isConnectionError == true, "\(String(describing: waitError))")

        let fresh = try PostgresConnection(connectionString: url)
        #expect(try fresh.execute("SELECT 2")[0, 0] == "2")
    }
}
