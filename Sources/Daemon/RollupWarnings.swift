import Config
import Foundation
import Logging
import Postgres
import WritePath

/// The rollups at start: records whether they are maintained and with which settings, and warns when the rollups
/// stored so far need `outletd rollup rebuild` (they are not maintained from now on, they miss samples stored
/// while they were not, or they were computed with other settings).
enum RollupWarnings {
    /// Records the configured rollup settings on `connection` and logs what they call for.
    static func check(_ connection: PostgresConnection, configuration: OutletdConfiguration, logger: Logger) throws {
        let settings = RollupStore.Settings(configuration)
        let rollups = RollupStore(connection: connection)
        if !configuration.rollups.maintain {
            try rollups.stopMaintaining()
            logger.warning(
                """
                rollups are not maintained (rollups.maintain: false): the rollup tables and the \
                dashboards' views miss the samples stored from now on, until `outletd rollup \
                rebuild` restates them
                """)
        } else if let since = try rollups.unmaintainedSince() {
            let text = ISO8601DateFormatter().string(from: since)
            logger.warning(
                """
                the rollups miss samples stored while they were not maintained (rollups.maintain: false): \
                run `outletd rollup rebuild --since \(text)` to restate them
                """,
                metadata: ["unmaintained_since": "\(text)"])
        }
        if let previous = try rollups.store(settings) {
            logger.warning(
                """
                rollup settings changed; rollups stored before were computed with the old ones: \
                run `outletd rollup rebuild --since …` to restate them
                """,
                metadata: [
                    "time_zone": "\(previous.timeZone) -> \(settings.timeZone)",
                    "max_gap_seconds": "\(previous.maxGapSeconds) -> \(settings.maxGapSeconds)",
                ])
        }
    }
}
