import Foundation
import Postgres

/// What an owner's outlet costs (migration 21): money as PostgreSQL's `numeric` text with six decimals, never a
/// floating-point value; rounded to the currency's minor unit only where it is shown.
public struct OwnedOutletCost: Sendable, Equatable {
    /// Cost over the period asked (nil: no price for any of its minutes).
    public var cost: String?
    /// ISO 4217 code of the outlet's tariff, nil without one.
    public var currency: String?
    /// From the start of this month (the outlet's time zone) to now.
    public var monthToDateCost: String?
    /// `monthToDateCost` carried to the whole month at the pace so far: × (seconds in the month / seconds elapsed).
    public var projectedMonthCost: String?
    /// The lowest power the outlet sustains: the 5th percentile of its hourly minimum over the last 7 days, W.
    public var standbyWatts: Double?
    /// That standby drawn for a month at the outlet's tariff (the last 30 days' prices).
    public var standbyMonthCost: String?
}

extension OwnerStore {
    /// The cost figures of `userID`'s outlet `code` over `[from, to)`, or nil when the outlet is not theirs.
    public func cost(userID: Int64, code: String, from: Date, to: Date) throws -> OwnedOutletCost? {
        let result = try connection.execute(
            """
            WITH outlet AS (
                SELECT d.id, d.code, outletd_outlet_zone(d.id) AS zone FROM devices d
                WHERE d.owner_id = $1 AND d.code = $2
            ), month AS (
                SELECT date_trunc('month', now(), outlet.zone) AS starts_at,
                       date_trunc('month', now(), outlet.zone) + interval '1 month' AS ends_at
                FROM outlet
            ), mtd AS (
                SELECT sum(c.cost) AS cost FROM month, outletd_outlet_cost($2, month.starts_at, now()) c
            )
            SELECT (SELECT round(sum(c.cost), 6)::text FROM outletd_outlet_cost($2, $3, $4) c),
                   (SELECT t.currency FROM outlet_tariffs o JOIN tariffs t ON t.id = o.tariff_id WHERE o.code = $2),
                   round(mtd.cost, 6)::text,
                   round(mtd.cost * extract(epoch FROM month.ends_at - month.starts_at)
                         / nullif(extract(epoch FROM now() - month.starts_at), 0), 6)::text,
                   s.standby_watts, round(s.month_cost, 6)::text
            FROM outlet CROSS JOIN month CROSS JOIN mtd
            LEFT JOIN outlet_standby s ON s.code = outlet.code
            """, [userID, code, from, to])
        guard result.rowCount == 1 else { return nil }
        return OwnedOutletCost(
            cost: result[0, 0], currency: result[0, 1], monthToDateCost: result[0, 2],
            projectedMonthCost: result[0, 3], standbyWatts: try result.double(row: 0, column: 4),
            standbyMonthCost: result[0, 5])
    }
}
