import Foundation
import Postgres

/// One row of the `device_power_summary` view: the original app's detail screen.
public struct PowerSummary: Sendable, Equatable {
    public var code: String
    public var name: String
    public var enabled: Bool
    public var sampleCount: Int64
    public var averagePowerWatts: Double?
    public var peakPowerWatts: Double?
    public var peakAt: Date?
    public var lastReadingAt: Date?
}

/// Reads `device_power_summary` and `rejection_counts` (never the raw samples).
public struct PowerSummaryQuery {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    private static let columns =
        "code, name, enabled, sample_count, average_power_watts, peak_power_watts, peak_at, last_reading_at"

    /// Every outlet, by code.
    public func all() throws -> [PowerSummary] {
        let result = try connection.execute("SELECT \(Self.columns) FROM device_power_summary ORDER BY code")
        return try (0..<result.rowCount).map { try Self.summary(result, row: $0) }
    }

    /// One outlet, or nil when it is not registered.
    public func summary(code: String) throws -> PowerSummary? {
        let result = try connection.execute(
            "SELECT \(Self.columns) FROM device_power_summary WHERE code = $1", [code])
        return result.rowCount == 0 ? nil : try Self.summary(result, row: 0)
    }

    /// Rejections counted since the database was created, by reason.
    public func rejectionCounts() throws -> [(reason: String, count: Int64)] {
        let result = try connection.execute("SELECT reason, count FROM rejection_counts ORDER BY count DESC, reason")
        return try (0..<result.rowCount).map { (result[$0, 0] ?? "", try result.int64(row: $0, column: 1) ?? 0) }
    }

    private static func summary(_ result: PostgresResult, row: Int) throws -> PowerSummary {
        PowerSummary(
            code: result[row, 0] ?? "", name: result[row, 1] ?? "",
            enabled: try result.bool(row: row, column: 2) ?? false,
            sampleCount: try result.int64(row: row, column: 3) ?? 0,
            averagePowerWatts: try result.double(row: row, column: 4),
            peakPowerWatts: try result.double(row: row, column: 5),
            peakAt: try result.date(row: row, column: 6), lastReadingAt: try result.date(row: row, column: 7))
    }
}
