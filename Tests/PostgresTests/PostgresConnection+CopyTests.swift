import Postgres
import Testing

@Suite struct PostgresConnectionCopyTests {
    struct SourceFailed: Error, Equatable {}

    @Test func copiesOneHundredThousandRowsInTextFormat() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE samples (id bigint, code text, watts double precision)")
        var data: [UInt8] = []
        data.reserveCapacity(3_000_000)
        for id in 0..<100_000 {
            data.append(contentsOf: "\(id)\tdev-\(id % 7)\t\(Double(id) / 4)\n".utf8)
        }
        #expect(data.count > PostgresConnectionCopyTests.chunkSize * 4)  // really sent in several chunks
        let rows = try connection.copyIn("COPY samples (id, code, watts) FROM STDIN", data: data)
        #expect(rows == 100_000)
        let check = try connection.execute("SELECT count(*), sum(id), max(watts), count(DISTINCT code) FROM samples")
        #expect(check[0, 0] == "100000")
        #expect(check[0, 1] == "4999950000")
        #expect(try check.double(row: 0, column: 2) == 99_999.0 / 4)
        #expect(check[0, 3] == "7")
    }

    static let chunkSize = 64 * 1024

    @Test func copiesCSVWithQuotesAndNulls() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int, note text)")
        let csv = "1,\"a, \"\"quoted\"\" note\"\n2,\n3,é🌍\n"
        let rows = try connection.copyIn("COPY t FROM STDIN (FORMAT csv)", data: Array(csv.utf8))
        #expect(rows == 3)
        let result = try connection.execute("SELECT note FROM t ORDER BY id")
        #expect(result[0, 0] == "a, \"quoted\" note")
        #expect(result[1, 0] == nil)
        #expect(result[2, 0] == "é🌍")
    }

    @Test func badRowFailsWith22P02AndConnectionStaysUsable() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int, watts double precision)")
        var data = Array("1\t1.5\n2\t2.5\n".utf8)
        data += Array("3\tnot-a-number\n4\t4.5\n".utf8)
        let error = #expect(throws: PostgresError.self) { try connection.copyIn("COPY t FROM STDIN", data: data) }
        #expect(error?.code == .queryFailed)
        #expect(error?.sqlState == "22P02")
        #expect(error?.message.contains("not-a-number") == true, "\(String(describing: error))")
        #expect(error?.isConnectionError == false)
        #expect(connection.isHealthy)
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "0")
        // The connection still copies and queries.
        #expect(try connection.copyIn("COPY t FROM STDIN", data: Array("5\t5.5\n".utf8)) == 1)
        #expect(try connection.execute("SELECT id FROM t")[0, 0] == "5")
    }

    @Test func missingTableFailsBeforeCopyStarts() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.copyIn("COPY missing FROM STDIN", data: Array("1\n".utf8))
        }
        #expect(error?.sqlState == "42P01")
        #expect(try connection.execute("SELECT 1")[0, 0] == "1")
    }

    @Test func nonCopyStatementIsUnexpectedResult() throws {
        let connection = try TestDatabase().connect()
        let error = #expect(throws: PostgresError.self) { try connection.copyIn("SELECT 1", data: []) }
        #expect(error?.code == .unexpectedResult)
        #expect(try connection.execute("SELECT 2")[0, 0] == "2")
    }

    @Test func emptyDataCopiesNothing() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        #expect(try connection.copyIn("COPY t FROM STDIN", data: []) == 0)
    }

    @Test func streamedChunksAreCopied() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        var next = 0
        let rows = try connection.copyIn("COPY t FROM STDIN") { () -> [UInt8]? in
            guard next < 10 else { return nil }
            defer { next += 1 }
            // Rows split across chunk boundaries on purpose.
            return Array("\(next * 2)\n\(next * 2 + 1)".utf8) + (next == 9 ? [0x0A] : [0x0A])
        }
        #expect(rows == 20)
        #expect(try connection.execute("SELECT sum(id) FROM t")[0, 0] == "190")
    }

    @Test func failingSourceAbortsCopyAndRethrowsItsError() throws {
        let connection = try TestDatabase().connect()
        try connection.execute("CREATE TABLE t (id int)")
        var calls = 0
        #expect(throws: SourceFailed()) {
            try connection.copyIn("COPY t FROM STDIN") { () -> [UInt8]? in
                calls += 1
                if calls == 3 { throw SourceFailed() }
                return Array("\(calls)\n".utf8)
            }
        }
        #expect(connection.isHealthy)
        #expect(try connection.execute("SELECT count(*) FROM t")[0, 0] == "0")
    }
}
