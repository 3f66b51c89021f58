import Config
import Foundation
import Logging
import Postgres
import Runtime

/// Partitions and retention (run by a ``DatabaseWorker``): at start and then every
/// `retention.maintenance_interval_seconds`, creates the daily partitions of `samples` ahead of time, drops
/// the raw partitions older than `retention.raw_days`, packs the index of each partition whose day has settled
/// and deletes rollups past their retention
/// (``RollupStore/maintain(_:now:)``). The writer also creates a missing partition on demand, so a late pass
/// never loses a reading.
public struct MaintenanceTask: DatabaseJob {
    public var name: String { "outletd-maintenance" }
    private let retention: OutletdConfiguration.RetentionSettings

    public init(retention: OutletdConfiguration.RetentionSettings) {
        self.retention = retention
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        while !context.stop.isSet {
            let outcome = try RollupStore(connection: connection).maintain(retention)
            Self.log(outcome, context.logger)
            context.stop.sleep(seconds: retention.maintenanceIntervalSeconds)
        }
    }

    private static func log(_ outcome: RollupStore.MaintenanceOutcome, _ logger: Logger) {
        let metadata: Logger.Metadata = [
            "partitions_created": "\(outcome.partitionsCreated)",
            "partitions_dropped": "\(outcome.partitionsDropped.joined(separator: ","))",
            "partitions_packed": "\(outcome.partitionsPacked.joined(separator: ","))",
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
