import Postgres
import TestSupport

/// A fresh database of the shared test stack, one per test.
struct TestDatabase {
    let url: String
    let stack: TestStack

    init() throws {
        stack = try TestStack.shared()
        url = try stack.createDatabase()
    }

    /// The database name (the last path component of ``url``).
    var name: String {
        String(url.split(separator: "/").last ?? "")
    }

    func connect(applicationName: String? = nil) throws -> PostgresConnection {
        try PostgresConnection(connectionString: url, applicationName: applicationName)
    }
}
