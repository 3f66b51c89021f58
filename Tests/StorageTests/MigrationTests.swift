import Foundation
import Postgres
import TestSupport
import Testing

@testable import Config
@testable import Runtime
@testable import Storage
@testable import WritePath

@Suite struct MigrationTests {
    @Test func embeddedMigrationsMatchTheSQLFolder() throws {
        let folder = "\(TestStack.packageRoot)/sql"
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == Migration.all.count, "the build embeds sql/ (Plugins/EmbedSQLPlugin): rebuild")
        for (file, migration) in zip(files, Migration.all) {
            let text = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
            #expect(file.hasPrefix(String(format: "%04d_", migration.version)))
            #expect(
                text.trimmingCharacters(in: .whitespacesAndNewlines)
                    == migration.sql.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(file) differs from the embedded copy: rebuild")
        }
    }

    /// The write path's SQL lives in sql/write/ as text; the binary carries the same text.
    @Test func embeddedWriteStatementsMatchTheFolder() throws {
        let folder = "\(TestStack.packageRoot)/sql/write"
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sql") }
        #expect(Set(files.map { String($0.dropLast(4)) }) == Set(WriteSQL.all.keys), "rebuild")
        for file in files {
            let text = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
            #expect(
                text.trimmingCharacters(in: .whitespacesAndNewlines)
                    == WriteSQL.all[String(file.dropLast(4))]?.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(file) differs from the embedded copy: rebuild")
        }
    }

    /// Every write statement against the real schema: the session script runs, each other statement is
    /// prepared (its tables, columns, types and functions exist) and each COPY is accepted and ended.
    @Test(arguments: WriteSQL.all.keys.sorted())
    func writeStatementFitsTheSchema(name: String) throws {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let sql = try #require(WriteSQL.all[name])
        try connection.execute(WriteSQL.session)
        if name == "session" { return }
        if name.hasPrefix("copy_") {
            // A binary COPY of no rows: the header and the trailer only.
            var sent = false
            let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8)
            let rows = try connection.copyIn(sql) {
                defer { sent = true }
                return sent ? nil : header + [0xFF, 0xFF]
            }
            #expect(rows == 0)
        } else {
            try connection.prepare(name: "golden_\(name)", sql: sql)
        }
    }

    @Test func appliesEachMigrationExactlyOnce() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let migrator = Migrator()
        #expect(try migrator.pendingVersions(connection) == Migration.all.map(\.version))
        let first = try migrator.migrate(connection)
        #expect(first.applied == Migration.all.map(\.version))
        let second = try migrator.migrate(connection)
        #expect(second.applied.isEmpty)
        #expect(second.currentVersion == Migration.all.last?.version)
        #expect(try migrator.pendingVersions(connection).isEmpty)
        let recorded = try connection.execute("SELECT count(*) FROM outletd_schema_migrations")
        #expect(recorded[0, 0] == String(Migration.all.count))
    }

    @Test func concurrentMigratorsApplyOnce() async throws {
        let url = try TestStack.shared().createDatabase()
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await Blocking.run {
                        let connection = try PostgresConnection(connectionString: url)
                        defer { connection.close() }
                        return try Migrator().migrate(connection).applied
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(applied.sorted() == Migration.all.map(\.version))
    }

    @Test func failedMigrationLeavesNothingBehind() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let broken = Migrator(migrations: [
            Migration(version: 1, name: "ok", sql: "CREATE TABLE a (x int);"),
            Migration(version: 2, name: "broken", sql: "CREATE TABLE b (x int); SELECT no_such_function();"),
        ])
        #expect(throws: PostgresError.self) { try broken.migrate(connection) }
        let tables = try connection.execute("SELECT to_regclass('a') IS NOT NULL, to_regclass('b') IS NOT NULL")
        #expect(tables[0, 0] == "t")
        #expect(tables[0, 1] == "f")
        #expect(try broken.pendingVersions(connection) == [2])
    }

    /// Every batch rewrites the totals row of each outlet it carries: those rewrites must find
    /// room on their page (HOT), also for rows written before migration 11 packed their pages full.
    @Test func totalsRowsAreRewrittenOnTheirPage() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator(migrations: Migration.all.filter { $0.version <= 10 }).migrate(connection)
        let rows = 2_000
        try connection.execute(
            """
            INSERT INTO device_power_totals
            SELECT i, 1, 100, 100, now(), now(), now() FROM generate_series(1, $1::integer) i
            """, [rows])
        try Migrator().migrate(connection)
        let options = try connection.execute(
            "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'device_power_totals'")
        #expect(options[0, 0] == "fillfactor=50")
        #expect(try connection.execute("SELECT count(*) FROM device_power_totals")[0, 0] == String(rows))
        // Counters of the current transaction: every row rewritten once, as a batch does.
        let hot = try connection.transaction {
            try connection.execute("UPDATE device_power_totals SET sample_count = sample_count + 1")
            return try connection.execute(
                """
                SELECT pg_stat_get_xact_tuples_updated('device_power_totals'::regclass),
                       pg_stat_get_xact_tuples_hot_updated('device_power_totals'::regclass)
                """)
        }
        #expect(hot[0, 0] == String(rows))
        #expect(hot[0, 1] == String(rows), "\(hot[0, 1] ?? "?") of \(rows) updates were HOT")
    }

    @Test func editedAppliedMigrationIsRefused() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator(migrations: [Migration(version: 1, name: "a", sql: "CREATE TABLE a (x int);")]).migrate(connection)
        let edited = Migrator(migrations: [Migration(version: 1, name: "a", sql: "CREATE TABLE a (y int);")])
        #expect(throws: Migrator.ChecksumMismatch.self) { try edited.migrate(connection) }
    }
}

@Suite struct OverviewTests {
    @Test func overviewShowsAvailabilityAndReportedState() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["plug-1", "plug-2"], databaseURL: url)
        try TestStack.shared().psql(
            url, "UPDATE devices SET online = true, reported_state = 'on' WHERE code = 'plug-1'")
        #expect(
            try Harness.scalar(url, "SELECT online, state FROM outlet_overview WHERE code = 'plug-1'") == "t|on")
        #expect(try Harness.scalar(url, "SELECT online, state FROM outlet_overview WHERE code = 'plug-2'") == "|")
    }
}
