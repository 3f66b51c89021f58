import Postgres
import Testing

@Suite struct PostgresErrorTests {
    @Test(arguments: [
        ("08006", true), ("08001", true), ("57P01", true), ("57P02", true), ("57P03", true),
        ("23505", false), ("42601", false), ("57014", false), ("40001", false),
    ])
    func classifiesServerErrorsBySQLState(sqlState: String, isConnectionError: Bool) {
        let error = PostgresError(code: .queryFailed, message: "m", sqlState: sqlState)
        #expect(error.isConnectionError == isConnectionError)
    }

    @Test func connectionCodesAreConnectionErrors() {
        #expect(PostgresError(code: .connectionFailed, message: "m").isConnectionError)
        #expect(PostgresError(code: .connectionLost, message: "m").isConnectionError)
        #expect(!PostgresError(code: .invalidArgument, message: "m").isConnectionError)
    }

    @Test func descriptionNamesCodeStateAndQuery() {
        let error = PostgresError(
            code: .queryFailed, message: "duplicate key", sqlState: "23505", detail: "Key exists.",
            hint: "Use another.",
            query: "INSERT INTO t VALUES ($1)")
        #expect(
            error.description
                == "PostgresError.queryFailed: duplicate key (SQLSTATE 23505) DETAIL: Key exists. HINT: Use another. "
                + "QUERY: INSERT INTO t VALUES ($1)")
        #expect(PostgresError.Code.connectionLost.description == "connectionLost")
    }
}
