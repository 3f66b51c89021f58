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

/// The part of an outlet's cost figures that changes slowly, priced apart so that it can be kept (the app keeps
/// it up to an hour): what its month cost before today, and its standby. Pricing the days before today is most of
/// the detail's cost (6–8 ms of PostgreSQL late in a month, against 2–3 ms for today).
public struct OwnedOutletCostBase: Sendable, Equatable {
    /// The cost from the start of the month to the start of today (the outlet's time zone), unrounded `numeric`
    /// text; nil when nothing in it has a price.
    public var monthBeforeTodayCost: String?
    public var standbyWatts: Double?
    public var standbyMonthCost: String?
}

extension OwnerStore {
    /// `outlet`: `userID` ($1)'s outlet `code` ($2) and its time zone; `month`: the start and end of its month now.
    static let outletAndMonth = """
        WITH outlet AS (
            SELECT d.id, d.code, \(outletZone) AS zone FROM devices d
            WHERE d.owner_id = $1 AND d.code = $2
        ), month AS (
            SELECT date_trunc('month', now(), outlet.zone) AS starts_at,
                   date_trunc('month', now(), outlet.zone) + interval '1 month' AS ends_at
            FROM outlet
        )
        """

    /// $1 user id, $2 code, $3 today's start: ``costBase(userID:code:todayStart:)``.
    static let costBaseStatement = Statement(
        name: "owner_cost_base",
        sql: """
            \(outletAndMonth)
            SELECT (SELECT sum(c.cost)::text FROM outletd_outlet_cost($2, month.starts_at, $3) c),
                   s.standby_watts, round(s.month_cost, 6)::text
            FROM outlet CROSS JOIN month LEFT JOIN outlet_standby s ON s.code = outlet.code
            """)

    /// $1 user id, $2 code, $3 and $4 today's start and end, $5 the month before today's cost (text or NULL):
    /// ``cost(userID:code:todayStart:todayEnd:base:)``.
    static let costTodayStatement = Statement(
        name: "owner_cost_today",
        sql: """
            \(outletAndMonth), today AS (
                SELECT sum(c.cost) AS cost FROM outletd_outlet_cost($2, $3, $4) c
            ), mtd AS (
                SELECT CASE WHEN $5::numeric IS NULL AND today.cost IS NULL THEN NULL
                            ELSE coalesce($5::numeric, 0) + coalesce(today.cost, 0) END AS cost
                FROM today
            )
            SELECT round(today.cost, 6)::text,
                   (SELECT t.currency FROM outlet_tariffs o JOIN tariffs t ON t.id = o.tariff_id WHERE o.code = $2),
                   round(mtd.cost, 6)::text,
                   round(mtd.cost * extract(epoch FROM month.ends_at - month.starts_at)
                         / nullif(extract(epoch FROM now() - month.starts_at), 0), 6)::text
            FROM outlet CROSS JOIN month CROSS JOIN today CROSS JOIN mtd
            """)

    /// What `userID`'s outlet `code` cost this month before `todayStart` (its local midnight), and its standby;
    /// nil when the outlet is not theirs.
    public func costBase(userID: Int64, code: String, todayStart: Date) throws -> OwnedOutletCostBase? {
        let result = try run(Self.costBaseStatement, [userID, code, todayStart])
        guard result.rowCount == 1 else { return nil }
        return OwnedOutletCostBase(
            monthBeforeTodayCost: result[0, 0], standbyWatts: try result.double(row: 0, column: 1),
            standbyMonthCost: result[0, 2])
    }

    /// The cost figures of `userID`'s outlet `code` for today, `[todayStart, todayEnd)`, with `base` (priced by
    /// ``costBase(userID:code:todayStart:)`` for the same `todayStart`): the month to date is the month before
    /// today plus today, exactly what ``cost(userID:code:from:to:)`` gives, since the cost of hours is counted by
    /// the hour each starts in. Nil when the outlet is not theirs.
    public func cost(userID: Int64, code: String, todayStart: Date, todayEnd: Date, base: OwnedOutletCostBase)
        throws -> OwnedOutletCost?
    {
        let result = try run(
            Self.costTodayStatement, [userID, code, todayStart, todayEnd, base.monthBeforeTodayCost])
        guard result.rowCount == 1 else { return nil }
        return OwnedOutletCost(
            cost: result[0, 0], currency: result[0, 1], monthToDateCost: result[0, 2],
            projectedMonthCost: result[0, 3], standbyWatts: base.standbyWatts,
            standbyMonthCost: base.standbyMonthCost)
    }

    /// The cost figures of `userID`'s outlet `code` over `[from, to)`, or nil when the outlet is not theirs.
    public func cost(userID: Int64, code: String, from: Date, to: Date) throws -> OwnedOutletCost? {
        let result = try connection.execute(
            """
            \(Self.outletAndMonth), mtd AS (
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
