import Config
import Foundation
import Logging
import Postgres
import Runtime
import ServiceLifecycle
import Storage

/// The database at start, before anything is wired to it: reachable, its schema current, the rollups' settings
/// recorded, and what the start reads from it.
enum DatabaseStart {
    /// What the start reads from the database.
    struct Prepared: Sendable {
        /// The Tasmota FullTopics of registered outlets, subscribed to besides the configured ones.
        var registeredFullTopics: Set<String>
    }

    /// Connects (retrying while the database is down), applies or checks the migrations, records the rollups'
    /// settings (``RollupWarnings``) and reads what the start needs, all on one connection, so a connection lost
    /// at any step is retried as a whole. Returns nil when asked to stop before the database answered.
    static func prepare(_ configuration: OutletdConfiguration, logger: Logger) async throws -> Prepared? {
        var backoff = Backoff(initial: 0.5, maximum: configuration.database.reconnectDelayMaxSeconds)
        while true {
            do {
                return try await Blocking.run {
                    let connection = try PostgresConnection(
                        connectionString: configuration.database.url, applicationName: "outletd-migrate")
                    defer { connection.close() }
                    let migrator = Migrator()
                    if configuration.database.migrateOnStart {
                        try migrator.migrate(connection) { logger.info("\($0)") }
                    } else {
                        let pending = try migrator.pendingVersions(connection)
                        guard pending.isEmpty else {
                            throw IngestService.Failure(
                                description: "database schema is behind (pending migrations \(pending)); "
                                    + "run `outletd migrate` or set database.migrate_on_start")
                        }
                    }
                    try RollupWarnings.check(connection, configuration: configuration, logger: logger)
                    return Prepared(registeredFullTopics: try DeviceStore(connection: connection).tasmotaFullTopics())
                }
            } catch let error as PostgresError where error.isConnectionError {
                let delay = backoff.nextDelay()
                logger.warning(
                    "database unavailable at start; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                // SIGTERM or Ctrl-C while waiting: no error, nothing to stop yet.
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(Int(delay * 1_000))) }
                if Task.isCancelled || Task.isShuttingDownGracefully { return nil }
            }
        }
    }
}
