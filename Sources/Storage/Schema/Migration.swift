import Postgres
import Runtime

/// One numbered schema change from `sql/NNNN_name.sql`, embedded in the binary at build time by
/// Plugins/EmbedSQLPlugin (``embedded``).
public struct Migration: Sendable, Equatable {
    /// The number in the file name; migrations apply in ascending order.
    public let version: Int
    /// The rest of the file name, e.g. `core`.
    public let name: String
    /// The whole file, run as one script inside one transaction.
    public let sql: String

    /// Every migration this build of outletd knows.
    public static var all: [Migration] { embedded }

    /// A short, stable fingerprint of `sql` (FNV-1a 64), recorded when applied so that an edited,
    /// already applied migration is noticed.
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Applies pending migrations exactly once, recorded in `outletd_schema_migrations`.
///
/// Several outletd processes may start at once: a session advisory lock serialises them, and
/// each migration runs in its own transaction together with its record, so a failed migration
/// leaves nothing behind and is retried by the next `migrate`.
public struct Migrator {
    /// What a run did.
    public struct Outcome: Sendable, Equatable {
        /// Versions applied by this run, in order.
        public var applied: [Int]
        /// The schema version after the run.
        public var currentVersion: Int
    }

    /// A migration already recorded whose text differs from the one in this build.
    public struct ChecksumMismatch: Error, CustomStringConvertible {
        public let version: Int
        public let name: String
        public var description: String {
            "migration \(version) (\(name)) was changed after it was applied; add a new migration instead"
        }
    }

    /// Key of the advisory lock taken while migrating.
    static let advisoryLockKey = AdvisoryLock.Single.migration.rawValue

    let migrations: [Migration]

    public init(migrations: [Migration] = Migration.all) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Applies every migration not yet recorded. `log` hears one line per applied migration.
    @discardableResult
    public func migrate(_ connection: PostgresConnection, log: (String) -> Void = { _ in }) throws -> Outcome {
        try connection.execute("SELECT pg_advisory_lock($1)", [Self.advisoryLockKey])
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey]) }
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS outletd_schema_migrations (
                version     integer PRIMARY KEY,
                name        text NOT NULL,
                checksum    text NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            )
            """)
        let recorded = try appliedChecksums(connection)
        var applied: [Int] = []
        for migration in migrations {
            if let checksum = recorded[migration.version] {
                guard checksum == migration.checksum else {
                    throw ChecksumMismatch(version: migration.version, name: migration.name)
                }
                continue
            }
            try connection.transaction {
                try connection.execute(migration.sql)
                try connection.execute(
                    "INSERT INTO outletd_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    [migration.version, migration.name, migration.checksum])
            }
            log("applied migration \(migration.version) \(migration.name)")
            applied.append(migration.version)
        }
        let current = max(recorded.keys.max() ?? 0, applied.max() ?? 0)
        return Outcome(applied: applied, currentVersion: current)
    }

    /// The versions this database has recorded, or nothing when it was never migrated.
    public func pendingVersions(_ connection: PostgresConnection) throws -> [Int] {
        let exists = try connection.execute("SELECT to_regclass('outletd_schema_migrations') IS NOT NULL")
        guard exists[0, 0] == "t" else { return migrations.map(\.version) }
        let recorded = try appliedChecksums(connection)
        return migrations.map(\.version).filter { recorded[$0] == nil }
    }

    private func appliedChecksums(_ connection: PostgresConnection) throws -> [Int: String] {
        let rows = try connection.execute("SELECT version, checksum FROM outletd_schema_migrations")
        var result: [Int: String] = [:]
        for row in 0..<rows.rowCount {
            if let version = rows[row, 0].flatMap({ Int($0) }), let checksum = rows[row, 1] {
                result[version] = checksum
            }
        }
        return result
    }
}
