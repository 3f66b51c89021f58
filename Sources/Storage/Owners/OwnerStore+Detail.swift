import Automations
import Foundation
import Postgres

/// An owner's outlet as its detail shows it: the outlet, the period read (its local today unless asked), its
/// figures over that period and what its automations do next and did last.
public struct OwnedOutletDetail: Sendable, Equatable {
    public var outlet: OwnedOutlet
    /// The period the figures are of: `[from, to)`.
    public var from: Date
    public var to: Date
    public var figures: OwnedOutletFigures
    public var automations: OutletAutomationGlance
}

/// The outlet detail's and the chart's reads, each one statement with the session the token stands for: one round trip
/// to PostgreSQL per request (the detail's cost aside, which the app keeps a while:
/// ``cost(userID:code:todayStart:todayEnd:base:)``). Under load every round trip is two more threads to wake on a busy
/// machine, and the tail of the requests' latency grew with their number (docs/OWNER-APP-LOAD.md). The session's
/// conditions are ``session(token:)``'s and the outlet is keyed by the user id it found, as in
/// ``sessionAndOutlets(token:)``.
extension OwnerStore {
    /// $1 token, $2 code, $3 and $4 the period (NULL and NULL: the outlet's local today): the session's four
    /// columns; the outlet (8); the period's start and end; average, peak and energy over its hour buckets (each
    /// counted whole by the hour it starts in); the automations' glance (20). NULLs
    /// from the fifth column on when the outlet is not the user's; no row without an active session.
    static let detailStatement = Statement(
        name: "owner_detail",
        sql: """
            WITH who AS (\(activeSession))
            SELECT who.id, who.name, who.expires_at, who.session_id, o.code, o.name, o.description, o.online,
                   o.reported_state, o.power_watts, o.updated_at, o.time_zone, p.starts_at, p.ends_at, f.average,
                   f.peak, f.energy,
                   \(AutomationStore.glanceColumns(zone: "o.time_zone"))
            FROM who LEFT JOIN LATERAL (
                SELECT x.*, (now() AT TIME ZONE x.time_zone)::date AS today
                FROM (
                    SELECT \(outletColumns), d.id AS device_id
                    FROM devices d LEFT JOIN rollup_tails t ON t.device_id = d.id
                    WHERE d.owner_id = who.id AND d.code = $2
                ) x
            ) o ON true
            LEFT JOIN LATERAL (
                SELECT coalesce($3::timestamptz, o.today::timestamp AT TIME ZONE o.time_zone) AS starts_at,
                       coalesce($4::timestamptz, (o.today + 1)::timestamp AT TIME ZONE o.time_zone) AS ends_at
            ) p ON o.device_id IS NOT NULL
            LEFT JOIN LATERAL (
                SELECT coalesce(sum(h.power_integral_watt_seconds) / nullif(sum(h.covered_seconds), 0),
                                sum(h.power_sum_watts) / nullif(sum(h.sample_count), 0)) AS average,
                       max(h.peak_power_watts) AS peak, sum(h.energy_wh) AS energy
                FROM power_rollups_hourly h
                WHERE h.device_id = o.device_id
                  AND h.bucket_start >= date_trunc('hour', p.starts_at) AND h.bucket_start < p.ends_at
            ) f ON true
            \(AutomationStore.glanceJoins(device: "o.device_id", owner: "who.id"))
            """)

    /// $1 token, $2 code, $3 a local date (`YYYY-MM-DD`; NULL: today): the session's four columns, then for each
    /// local hour of that day of the outlet (24, or 23 or 25 across a DST change, in order) its date, time zone,
    /// start and end, and the hour, its figures and its cost (as the chart shows them); one row with NULLs from the
    /// fifth column on when the outlet is not the user's; no row without an active session.
    static let chartStatement = Statement(
        name: "owner_chart",
        sql: """
            WITH who AS (\(activeSession)), day AS (
                SELECT d.id AS device_id, d.code, z.zone, z.local_date,
                       z.local_date::timestamp AT TIME ZONE z.zone AS starts_at,
                       (z.local_date + 1)::timestamp AT TIME ZONE z.zone AS ends_at
                FROM who JOIN devices d ON d.owner_id = who.id AND d.code = $2
                CROSS JOIN LATERAL (SELECT \(outletZone) AS zone) y
                CROSS JOIN LATERAL (
                    SELECT y.zone, coalesce($3::date, (now() AT TIME ZONE y.zone)::date) AS local_date
                ) z
            )
            SELECT who.id, who.name, who.expires_at, who.session_id,
                   to_char(day.local_date, 'YYYY-MM-DD'), day.zone, day.starts_at, day.ends_at,
                   hours.hour, hours.average_power_watts, hours.peak_power_watts, hours.energy_wh, hours.cost
            FROM who LEFT JOIN day ON true
            LEFT JOIN LATERAL (
                SELECT g.at, extract(hour FROM g.at AT TIME ZONE day.zone)::int AS hour,
                       h.average_power_watts, h.peak_power_watts, h.energy_wh, round(c.cost, 6)::text AS cost
                FROM generate_series(day.starts_at, day.ends_at - interval '1 hour', interval '1 hour') AS g(at)
                LEFT JOIN LATERAL (
                    SELECT sum(r.power_integral_watt_seconds) / nullif(sum(r.covered_seconds), 0) AS integral_average,
                           sum(r.power_sum_watts) / nullif(sum(r.sample_count), 0) AS plain_average,
                           max(r.peak_power_watts) AS peak_power_watts, sum(r.energy_wh) AS energy_wh,
                           count(*) AS buckets
                    FROM power_rollups_hourly r
                    WHERE r.device_id = day.device_id
                      AND r.bucket_start >= g.at AND r.bucket_start < g.at + interval '1 hour'
                ) x ON true
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN x.buckets > 0 THEN coalesce(x.integral_average, x.plain_average) END
                               AS average_power_watts,
                           x.peak_power_watts, x.energy_wh
                ) h
                LEFT JOIN (
                    SELECT k.hour_start, sum(k.cost) AS cost
                    FROM outletd_outlet_cost(day.code, day.starts_at, day.ends_at) k GROUP BY k.hour_start
                ) c ON c.hour_start = g.at
            ) hours ON day.device_id IS NOT NULL
            ORDER BY hours.at
            """)

    /// The session `token` stands for and its user's outlet `code` as its detail shows it, over `[from, to)` (nil,
    /// nil: the outlet's local today), in one statement; the detail is nil when the outlet is not theirs, and the
    /// whole nil when ``session(token:)`` would be.
    public func detail(token: String, code: String, from: Date?, to: Date?) throws -> (
        session: OwnerSession, detail: OwnedOutletDetail?
    )? {
        let result = try run(Self.detailStatement, [token, code, from, to])
        guard let session = try Self.session(result) else { return nil }
        guard let outlet = try Self.outlets(result, from: 4).first, let from = try result.date(row: 0, column: 12),
            let to = try result.date(row: 0, column: 13)
        else { return (session, nil) }
        return (
            session,
            OwnedOutletDetail(
                outlet: outlet, from: from, to: to,
                figures: OwnedOutletFigures(
                    averagePowerWatts: try result.double(row: 0, column: 14),
                    peakPowerWatts: try result.double(row: 0, column: 15),
                    energyWattHours: try result.double(row: 0, column: 16)),
                automations: try AutomationStore.glance(result, row: 0, from: 17, code: code))
        )
    }

    /// The session `token` stands for and the local day `date` (`YYYY-MM-DD`; nil: today) of its user's outlet
    /// `code` with its hours (24, or 23 or 25 across a DST change, in order, each with its hourly rollup's figures
    /// and its cost, or nils), in one statement; the chart is nil when the outlet is not theirs, and the whole nil
    /// when ``session(token:)`` would be.
    public func chart(token: String, code: String, date: String?) throws -> (
        session: OwnerSession, chart: (day: OwnedOutletDay, hours: [OwnedOutletHour])?
    )? {
        let result = try run(Self.chartStatement, [token, code, date])
        guard let session = try Self.session(result) else { return nil }
        guard let date = result[0, 4], let zone = result[0, 5], let start = try result.date(row: 0, column: 6),
            let end = try result.date(row: 0, column: 7)
        else { return (session, nil) }
        let hours = try (0..<result.rowCount).map { row in
            OwnedOutletHour(
                hour: try result.int(row: row, column: 8) ?? 0,
                figures: OwnedOutletFigures(
                    averagePowerWatts: try result.double(row: row, column: 9),
                    peakPowerWatts: try result.double(row: row, column: 10),
                    energyWattHours: try result.double(row: row, column: 11)),
                cost: result[row, 12])
        }
        return (session, (OwnedOutletDay(date: date, timeZone: zone, start: start, end: end), hours))
    }
}
