import Foundation
import Postgres

/// One outlet's power over a period, from the hourly rollups (never the raw samples).
public struct PowerStats: Sendable, Equatable {
    /// One hour bucket of the period.
    public struct Hour: Sendable, Equatable {
        public var startsAt: Date
        public var averagePowerWatts: Double
        public var peakPowerWatts: Double
        public var energyWattHours: Double
    }

    public var code: String
    public var name: String
    public var sampleCount: Int64
    /// Time-weighted average power over the covered time, W (docs/ROLLUPS.md).
    public var averagePowerWatts: Double?
    public var peakPowerWatts: Double?
    public var peakAt: Date?
    public var energyWattHours: Double
    public var lastReadingAt: Date?
    /// The hour buckets with samples, oldest first.
    public var hours: [Hour]
}

/// Reads ``PowerStats`` from `power_rollups_hourly`.
public struct PowerStatsQuery {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// The average and peak of one outlet over the hour buckets that end after `since`: the query
    /// the dashboards' "last 24 hours" tile runs (Benchmarks/ measures it). Its plan reads only
    /// `devices` and `power_rollups_hourly`.
    public static let averageAndPeakSQL = """
        SELECT coalesce(sum(h.power_integral_watt_seconds) / nullif(sum(h.covered_seconds), 0),
                        sum(h.power_sum_watts) / nullif(sum(h.sample_count), 0)) AS average_power_watts,
               max(h.peak_power_watts) AS peak_power_watts,
               (array_agg(h.peak_at ORDER BY h.peak_power_watts DESC, h.peak_at))[1] AS peak_at,
               coalesce(sum(h.energy_wh), 0) AS energy_wh,
               coalesce(sum(h.sample_count), 0) AS sample_count,
               max(h.last_at) AS last_reading_at
        FROM devices d
        JOIN power_rollups_hourly h ON h.device_id = d.id AND h.bucket_start > $2::timestamptz - interval '1 hour'
        WHERE d.code = $1
        """

    /// Stats of `code` since `since`, or nil when no such outlet is registered.
    public func stats(code: String, since: Date) throws -> PowerStats? {
        let device = try connection.execute("SELECT name FROM devices WHERE code = $1", [code])
        guard device.rowCount == 1 else { return nil }
        let totals = try connection.execute(Self.averageAndPeakSQL, [code, since])
        let hours = try connection.execute(
            """
            SELECT h.bucket_start, h.average_power_watts, h.peak_power_watts, h.energy_wh
            FROM devices d
            JOIN power_rollups_hourly h ON h.device_id = d.id AND h.bucket_start > $2::timestamptz - interval '1 hour'
            WHERE d.code = $1
            ORDER BY h.bucket_start
            """, [code, since])
        return PowerStats(
            code: code, name: device[0, 0] ?? "",
            sampleCount: try totals.int64(row: 0, column: 4) ?? 0,
            averagePowerWatts: try totals.double(row: 0, column: 0),
            peakPowerWatts: try totals.double(row: 0, column: 1),
            peakAt: try totals.date(row: 0, column: 2),
            energyWattHours: try totals.double(row: 0, column: 3) ?? 0,
            lastReadingAt: try totals.date(row: 0, column: 5),
            hours: try (0..<hours.rowCount).compactMap { row in
                guard let start = try hours.date(row: row, column: 0) else { return nil }
                return PowerStats.Hour(
                    startsAt: start, averagePowerWatts: try hours.double(row: row, column: 1) ?? 0,
                    peakPowerWatts: try hours.double(row: row, column: 2) ?? 0,
                    energyWattHours: try hours.double(row: row, column: 3) ?? 0)
            })
    }
}

/// A terminal bar chart of average power by hour: one line per hour, `█` scaled to the largest.
public enum PowerBarChart {
    /// Renders `hours`; `label` formats an hour's start (e.g. local `HH:mm`), `width` is the
    /// longest bar in characters.
    public static func render(_ hours: [PowerStats.Hour], width: Int = 40, label: (Date) -> String) -> String {
        guard !hours.isEmpty else { return "(no readings in this period)" }
        let largest = hours.map(\.averagePowerWatts).max() ?? 0
        return hours.map { hour in
            let fraction = largest > 0 ? max(0, hour.averagePowerWatts) / largest : 0
            let eighths = Int((fraction * Double(width) * 8).rounded())
            let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8]
            let bar = String(repeating: "█", count: eighths / 8) + partial
            return "\(label(hour.startsAt))  \(bar) \(String(format: "%.1f W", hour.averagePowerWatts))"
        }.joined(separator: "\n")
    }
}

/// What an outlet's energy cost over a period, from `outletd_outlet_cost` (migration 21): money as `numeric`
/// text with six decimals.
public struct PeriodCost: Sendable, Equatable {
    /// One band's share (`band` nil outside every band).
    public struct Band: Sendable, Equatable {
        public var band: String?
        public var energyWattHours: Double
        public var cost: String?
    }

    /// Nil when no minute of the period has a price.
    public var cost: String?
    /// The outlet's tariff's currency, nil without a tariff.
    public var currency: String?
    public var bands: [Band]
}

extension PowerStatsQuery {
    /// The cost of outlet `code` from `since` to now, by band.
    public func cost(code: String, since: Date) throws -> PeriodCost {
        let result = try connection.execute(
            """
            SELECT band, sum(energy_wh), round(sum(cost), 6)::text, max(currency)
            FROM outletd_outlet_cost($1, $2, now()) GROUP BY band ORDER BY band NULLS LAST
            """, [code, since])
        var bands: [PeriodCost.Band] = []
        var currency: String?
        for row in 0..<result.rowCount {
            bands.append(
                .init(
                    band: result[row, 0], energyWattHours: try result.double(row: row, column: 1) ?? 0,
                    cost: result[row, 2]))
            currency = currency ?? result[row, 3]
        }
        let costs = bands.compactMap { $0.cost.flatMap { Decimal(string: $0) } }
        let total = costs.isEmpty ? nil : costs.reduce(Decimal(0), +)
        return PeriodCost(cost: total.map { "\($0)" }, currency: currency, bands: bands)
    }
}
