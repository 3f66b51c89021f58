import Testing

@testable import Postgres

@Suite struct PostgresErrorOneLineTests {
    @Test func multiLineLibpqMessagesBecomeOneLine() {
        let error = PostgresError(
            code: .connectionFailed,
            message: """
                connection to server at "127.0.0.1", port 1 failed: Connection refused
                \tIs the server running on that host and accepting TCP/IP connections?
                connection to server at "::1", port 1 failed: Connection refused

                """,
            hint: "first\nsecond")
        #expect(!error.description.contains("\n"))
        #expect(
            error.oneLineMessage
                == "connection to server at \"127.0.0.1\", port 1 failed: Connection refused; Is the server running on "
                + "that host and accepting TCP/IP connections?; connection to server at \"::1\", port 1 failed: "
                + "Connection refused")
        #expect(error.description.hasSuffix("HINT: first; second"))
    }
}
