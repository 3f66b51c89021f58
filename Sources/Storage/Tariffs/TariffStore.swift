import Foundation
import Postgres
import Telemetry

/// A tariff as `outletd tariff list` shows it.
public struct TariffSummary: Sendable, Equatable {
    public var name: String
    public var currency: String
    public var versionCount: Int
    public var latestValidFrom: String?
    /// Where it is assigned: `default`, `owner NAME`, `outlet CODE`.
    public var assignments: [String]
}

/// One stored version of a tariff.
public struct TariffVersionRecord: Sendable, Equatable {
    public var validFrom: String
    public var loadedAt: Date?
    public var tariff: Tariff
}

/// Where ``TariffStore/assign(_:to:)`` assigns a tariff.
public enum TariffScope: Sendable, Equatable {
    case fleetDefault
    case owner(String)
    case outlet(String)
}

/// The SQL of tariffs (migration 20): loading versions, listing them, assigning them.
public struct TariffStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Stores `tariff` as the version of `name` from its `validFrom` (replacing a version with the same date), in
    /// one transaction; creates the tariff on its first version. Returns whether a version was replaced.
    @discardableResult
    public func set(name: String, tariff: Tariff, source: String) throws -> Bool {
        guard name.range(of: "^[A-Za-z0-9_.-]{1,64}$", options: .regularExpression) != nil else {
            throw DeviceStoreError(message: "tariff name must be 1–64 of A-Z a-z 0-9 _ . -, not \"\(name)\"")
        }
        return try connection.transaction {
            let existing = try connection.execute("SELECT id, currency FROM tariffs WHERE name = $1 FOR UPDATE", [name])
            let tariffID: Int64
            if existing.rowCount == 1, let id = try existing.int64(row: 0, column: 0) {
                guard existing[0, 1] == tariff.currency else {
                    throw DeviceStoreError(
                        message: "tariff \(name) is in \(existing[0, 1] ?? "?"); a version in \(tariff.currency) "
                            + "would mix currencies (use another name)")
                }
                tariffID = id
            } else {
                let created = try connection.execute(
                    "INSERT INTO tariffs (name, currency) VALUES ($1, $2) RETURNING id", [name, tariff.currency])
                guard let id = try created.int64(row: 0, column: 0) else { throw DeviceStoreError(message: "no id") }
                tariffID = id
            }
            let replaced =
                try connection.execute(
                    "DELETE FROM tariff_versions WHERE tariff_id = $1 AND valid_from = $2::date",
                    [tariffID, tariff.validFrom]
                ).affectedRows == 1
            let version = try connection.execute(
                """
                INSERT INTO tariff_versions (tariff_id, valid_from, time_zone, price_per_kwh, taxes_percent, holidays,
                                             source)
                VALUES ($1, $2::date, $3, $4::numeric, $5::numeric, $6::date[], $7)
                RETURNING id
                """,
                [
                    tariffID, tariff.validFrom, tariff.timeZone, tariff.pricePerKWh, tariff.taxesPercent,
                    tariff.holidays, source,
                ])
            guard let versionID = try version.int64(row: 0, column: 0) else {
                throw DeviceStoreError(message: "no version id")
            }
            for (position, band) in tariff.bands.enumerated() {
                try connection.execute(
                    """
                    INSERT INTO tariff_bands (version_id, position, name, isodows, from_minute, to_minute, price_per_kwh)
                    VALUES ($1, $2, $3, $4::int[], $5, $6, $7::numeric)
                    """,
                    [
                        versionID, Int64(position), band.name, band.days.map { String($0.isoNumber) },
                        Int64(band.fromMinute), Int64(band.toMinute), band.pricePerKWh,
                    ])
            }
            for adder in tariff.monthlyAdders {
                try connection.execute(
                    "INSERT INTO tariff_monthly_adders (version_id, month, per_kwh) VALUES ($1, ($2 || '-01')::date, $3::numeric)",
                    [versionID, adder.month, adder.perKWh])
            }
            return replaced
        }
    }

    /// Every tariff, by name.
    public func list() throws -> [TariffSummary] {
        let result = try connection.execute(
            """
            SELECT t.name, t.currency,
                   (SELECT count(*) FROM tariff_versions v WHERE v.tariff_id = t.id),
                   (SELECT to_char(max(v.valid_from), 'YYYY-MM-DD') FROM tariff_versions v WHERE v.tariff_id = t.id),
                   (SELECT string_agg(CASE a.scope WHEN 'default' THEN 'default'
                                                   WHEN 'owner' THEN 'owner ' || u.name
                                                   ELSE 'outlet ' || d.code END, E'\\n' ORDER BY a.scope, u.name, d.code)
                    FROM tariff_assignments a LEFT JOIN app_users u ON u.id = a.user_id
                    LEFT JOIN devices d ON d.id = a.device_id WHERE a.tariff_id = t.id)
            FROM tariffs t ORDER BY t.name
            """)
        return try (0..<result.rowCount).map { row in
            TariffSummary(
                name: result[row, 0] ?? "", currency: result[row, 1] ?? "",
                versionCount: try result.int(row: row, column: 2) ?? 0, latestValidFrom: result[row, 3],
                assignments: (result[row, 4] ?? "").split(separator: "\n").map(String.init))
        }
    }

    /// Every version of tariff `name`, oldest first; throws when there is no such tariff.
    public func versions(name: String) throws -> [TariffVersionRecord] {
        let result = try connection.execute(
            """
            SELECT v.id, to_char(v.valid_from, 'YYYY-MM-DD'), v.loaded_at, t.currency, v.time_zone,
                   v.price_per_kwh::text, v.taxes_percent::text,
                   coalesce((SELECT string_agg(to_char(h, 'YYYY-MM-DD'), ',' ORDER BY h) FROM unnest(v.holidays) h), '')
            FROM tariffs t JOIN tariff_versions v ON v.tariff_id = t.id
            WHERE t.name = $1 ORDER BY v.valid_from
            """, [name])
        guard result.rowCount > 0 else { throw DeviceStoreError(message: "no tariff \(name)") }
        return try (0..<result.rowCount).map { row in
            guard let versionID = try result.int64(row: row, column: 0) else {
                throw DeviceStoreError(message: "unexpected tariff_versions row")
            }
            let bands = try connection.execute(
                """
                SELECT name, array_to_string(isodows, ','), from_minute, to_minute, price_per_kwh::text
                FROM tariff_bands WHERE version_id = $1 ORDER BY position
                """, [versionID])
            let adders = try connection.execute(
                "SELECT to_char(month, 'YYYY-MM'), per_kwh::text FROM tariff_monthly_adders WHERE version_id = $1 ORDER BY month",
                [versionID])
            let days = Weekday.allCases
            let tariff = Tariff(
                currency: result[row, 3] ?? "", timeZone: result[row, 4], validFrom: result[row, 1] ?? "",
                pricePerKWh: result[row, 5] ?? "0",
                bands: try (0..<bands.rowCount).map { index in
                    Tariff.Band(
                        name: bands[index, 0] ?? "",
                        days: (bands[index, 1] ?? "").split(separator: ",").compactMap { Int($0) }
                            .filter { (1...7).contains($0) }.map { days[$0 - 1] },
                        fromMinute: try bands.int(row: index, column: 2) ?? 0,
                        toMinute: try bands.int(row: index, column: 3) ?? 0, pricePerKWh: bands[index, 4] ?? "0")
                },
                holidays: (result[row, 7] ?? "").split(separator: ",").map(String.init),
                monthlyAdders: (0..<adders.rowCount).map { (adders[$0, 0] ?? "", adders[$0, 1] ?? "0") },
                taxesPercent: result[row, 6] ?? "0")
            return TariffVersionRecord(
                validFrom: result[row, 1] ?? "", loadedAt: try result.date(row: row, column: 2), tariff: tariff)
        }
    }

    /// Assigns tariff `name` as the default, to an owner's outlets, or to one outlet (replacing what was there).
    public func assign(_ name: String, to scope: TariffScope) throws {
        try connection.transaction {
            let tariff = try connection.execute("SELECT id FROM tariffs WHERE name = $1", [name])
            guard tariff.rowCount == 1, let tariffID = try tariff.int64(row: 0, column: 0) else {
                throw DeviceStoreError(message: "no tariff \(name) (load one with `outletd tariff set`)")
            }
            switch scope {
            case .fleetDefault:
                try connection.execute("DELETE FROM tariff_assignments WHERE scope = 'default'")
                try connection.execute(
                    "INSERT INTO tariff_assignments (tariff_id, scope) VALUES ($1, 'default')", [tariffID])
            case .owner(let user):
                let found = try connection.execute("SELECT id FROM app_users WHERE name = $1", [user])
                guard found.rowCount == 1, let userID = try found.int64(row: 0, column: 0) else {
                    throw DeviceStoreError(message: "no user \(user)")
                }
                try connection.execute(
                    "DELETE FROM tariff_assignments WHERE scope = 'owner' AND user_id = $1", [userID])
                try connection.execute(
                    "INSERT INTO tariff_assignments (tariff_id, scope, user_id) VALUES ($1, 'owner', $2)",
                    [tariffID, userID])
            case .outlet(let code):
                let found = try connection.execute("SELECT id FROM devices WHERE code = $1", [code])
                guard found.rowCount == 1, let deviceID = try found.int64(row: 0, column: 0) else {
                    throw DeviceStoreError(message: "no device \(code) is registered")
                }
                try connection.execute(
                    "DELETE FROM tariff_assignments WHERE scope = 'outlet' AND device_id = $1", [deviceID])
                try connection.execute(
                    "INSERT INTO tariff_assignments (tariff_id, scope, device_id) VALUES ($1, 'outlet', $2)",
                    [tariffID, deviceID])
            }
        }
    }

    /// The tariff pricing outlet `code` and by which rule (`outlet`, `owner`, `default`), or nil when none does.
    public func tariff(ofOutlet code: String) throws -> (name: String, assignedBy: String)? {
        let result = try connection.execute(
            """
            SELECT t.name, o.assigned_by FROM outlet_tariffs o JOIN tariffs t ON t.id = o.tariff_id WHERE o.code = $1
            """, [code])
        guard result.rowCount == 1, let name = result[0, 0], let rule = result[0, 1] else { return nil }
        return (name, rule)
    }
}
