import Foundation
import Logging
import Postgres

/// Partitions and retention, on a thread of its own with its own connection: at start and then
/// every `retention.maintenance_interval_seconds`, creates the daily partitions of `samples` ahead
/// of time, drops the raw partitions older than `retention.raw_days` and deletes rollups past
/// their retention (``RollupStore/maintain(_:now:)``). The writer also creates a missing partition
/// on demand, so a late pass never loses a reading.
public final class MaintenanceTask: Sendable {
    private let connectionString: String
    private let retention: OutletdConfiguration.RetentionSettings
    private let reconnectDelayMax: Double
    private let logger: Logger
    private let worker = WorkerThread(name: "outletd-maintenance")
    private var stopFlag: StopFlag { worker.stopFlag }

    public init(
        connectionString: String, retention: OutletdConfiguration.RetentionSettings, reconnectDelayMax: Double,
        logger: Logger
    ) {
        self.connectionString = connectionString
        self.retention = retention
        self.reconnectDelayMax = reconnectDelayMax
        self.logger = logger
    }

    /// Starts the thread.
    public func start() {
        worker.start { [self] in self.loop() }
    }

    /// Asks the thread to stop and waits for it (a pass under way finishes first).
    public func stop() async {
        await worker.stop()
    }

    private func loop() {
        var backoff = Backoff(initial: 1, maximum: max(1, reconnectDelayMax))
        while !stopFlag.isSet {
            do {
                let connection = try PostgresConnection(
                    connectionString: connectionString, applicationName: "outletd-maintenance")
                defer { connection.close() }
                while !stopFlag.isSet {
                    let outcome = try RollupStore(connection: connection).maintain(retention)
                    backoff.reset()
                    log(outcome)
                    stopFlag.sleep(seconds: retention.maintenanceIntervalSeconds)
                }
            } catch {
                let delay = backoff.nextDelay()
                logger.warning(
                    "maintenance failed; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                stopFlag.sleep(seconds: delay)
            }
        }
    }

    private func log(_ outcome: RollupStore.MaintenanceOutcome) {
        let metadata: Logger.Metadata = [
            "partitions_created": "\(outcome.partitionsCreated)",
            "partitions_dropped": "\(outcome.partitionsDropped.joined(separator: ","))",
            "minute_rollups_deleted": "\(outcome.minuteRowsDeleted)",
            "hourly_rollups_deleted": "\(outcome.hourlyRowsDeleted)",
            "daily_rollups_deleted": "\(outcome.dailyRowsDeleted)",
        ]
        if outcome == RollupStore.MaintenanceOutcome() {
            logger.debug("maintenance: nothing to do")
        } else {
            logger.info("maintenance", metadata: metadata)
        }
    }
}
