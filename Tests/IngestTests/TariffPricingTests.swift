import Foundation
import OwnerApp
import Postgres
import ServiceTestSupport
import Storage
import Telemetry
import TestSupport
import Testing
import WritePath

/// Cost priced from the minute rollups (migration 21), against figures computed by hand: a November in Fortaleza
/// on the tarifa branca (three bands, holidays, the bandeira adder, a late reading, a new version mid-month) and a
/// day across a DST change in Europe/Berlin, to the cent.
@Suite(.serialized) struct TariffPricingTests {
    /// Sum of cost (and energy, kWh) over a period, by band (`base` outside every band).
    static func cost(_ url: String, _ code: String, _ from: String, _ to: String) throws -> [String: (Double, Double)] {
        let text = try Harness.scalar(
            url,
            """
            SELECT string_agg(coalesce(band, 'base') || '=' || coalesce(round(c, 6)::text, 'null') || '/'
                              || round(e::numeric / 1000, 6), ',' ORDER BY band)
            FROM (SELECT band, sum(cost) AS c, sum(energy_wh) AS e
                  FROM outletd_outlet_cost('\(code)', '\(from)', '\(to)') GROUP BY band) x
            """)
        var result: [String: (Double, Double)] = [:]
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: "=")
            let values = parts[1].split(separator: "/")
            result[String(parts[0])] = (Double(values[0]) ?? .nan, Double(values[1]) ?? .nan)
        }
        return result
    }

    @Test func aNovemberInFortalezaPricesToTheCent() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["fort-1"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        try DeviceStore(connection: connection).setTimeZone("fort-1", "America/Fortaleza")
        let deviceID = try #require(try DeviceStore(connection: connection).find("fort-1")?.id)
        try TariffFixtures.set(url, "branca", TariffFixtures.tarifaBranca)
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "assign", "branca", "--default"],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])

        // 1 kW for an hour at a time; Fortaleza is UTC−3 all year. Adder for November: 0.01885.
        // before the tariff: Fri 30 Oct 18:00–19:00, no price.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-10-30T21:00:00Z", to: "2026-10-30T22:00:00Z")
        // A: Mon 2 Nov 18:00–19:00, a holiday: base 0.62 + 0.01885 = 0.63885.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-02T21:00:00Z", to: "2026-11-02T22:00:00Z")
        // B: Tue 3 Nov 17:30–18:30: ½ kWh intermediário 0.90885 + ½ kWh ponta 1.39885 = 1.15385.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-03T20:30:00Z", to: "2026-11-03T21:30:00Z")
        // C: Sat 7 Nov 18:00–19:00, no bands at weekends: 0.63885.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-07T21:00:00Z", to: "2026-11-07T22:00:00Z")
        // E: Sun 15 Nov 12:00–13:00 (a holiday too): 0.63885.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-15T15:00:00Z", to: "2026-11-15T16:00:00Z")
        // D: Mon 16 Nov 18:00–19:00, ponta: 1.39885 (1.51885 once the version from 16 Nov is loaded).
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-16T21:00:00Z", to: "2026-11-16T22:00:00Z")
        // F, arriving late: Wed 4 Nov 21:30–22:30: ½ kWh intermediário 0.454425 + ½ kWh base 0.319425 = 0.77385.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-11-05T00:30:00Z", to: "2026-11-05T01:30:00Z")

        let (from, to) = ("2026-11-01T03:00:00Z", "2026-12-01T03:00:00Z")
        var bands = try Self.cost(url, "fort-1", from, to)
        #expect(bands["ponta"]?.1 == 1.5 && bands["intermediario"]?.1 == 1.0 && bands["base"]?.1 == 3.5, "\(bands)")
        // ponta 0.699425 + 1.39885; intermediário 0.454425 × 2; base 0.63885 × 3 + 0.319425.
        #expect(bands["ponta"]?.0 == 2.098275 && bands["intermediario"]?.0 == 0.90885, "\(bands)")
        #expect(bands["base"]?.0 == 2.235975, "\(bands)")
        var total = try Harness.scalar(
            url, "SELECT round(sum(cost), 2) FROM outletd_outlet_cost('fort-1', '\(from)', '\(to)')")
        #expect(total == "5.24")

        // Before the tariff's first version: no price, NULL, never 0.
        let october = try Self.cost(url, "fort-1", "2026-10-30T00:00:00Z", "2026-10-31T00:00:00Z")
        #expect(october["base"]?.1 == 1.0 && october["base"]?.0.isNaN == true, "\(october)")

        // A new version from 16 Nov: ponta 1.50. It prices its own period only.
        try TariffFixtures.set(
            url, "branca",
            TariffFixtures.tarifaBranca.replacingOccurrences(
                of: "valid_from: 2026-11-01", with: "valid_from: 2026-11-16"
            )
            .replacingOccurrences(of: "1.38", with: "1.50"))
        bands = try Self.cost(url, "fort-1", from, to)
        #expect(bands["ponta"]?.0 == 0.699425 + 1.51885, "\(bands)")
        total = try Harness.scalar(
            url, "SELECT round(sum(cost), 2) FROM outletd_outlet_cost('fort-1', '\(from)', '\(to)')")
        #expect(total == "5.36")
        #expect(
            try Harness.scalar(url, "SELECT DISTINCT currency FROM outletd_outlet_cost('fort-1', '\(from)', '\(to)')")
                == "BRL")

        // The dashboards' views: days in the outlet's zone, hours by band.
        #expect(
            try Harness.scalar(
                url,
                "SELECT round(cost, 6) || ' ' || round(energy_wh::numeric, 3) || ' ' || currency FROM outlet_cost_daily "
                    + "WHERE day = '2026-11-03'") == "1.153850 1000.000 BRL")
        #expect(
            try Harness.scalar(
                url,
                """
                SELECT string_agg(to_char(hour_start AT TIME ZONE 'America/Fortaleza', 'HH24:MI') || ' '
                                  || coalesce(band, 'base') || ' ' || round(cost, 6), ', ' ORDER BY hour_start, band)
                FROM outlet_cost_hourly WHERE hour_start >= '2026-11-03T20:00:00Z' AND hour_start < '2026-11-04T00:00:00Z'
                """) == "17:00 intermediario 0.454425, 18:00 ponta 0.699425")
        #expect(
            try Harness.scalar(
                url, "SELECT round(sum(cost), 2) FROM outlet_cost_daily WHERE day BETWEEN '2026-11-01' AND '2026-11-30'"
            )
                == "5.36")
        #expect(
            try Harness.scalar(url, "SELECT count(*) FROM outlet_cost_daily WHERE day = '2026-10-30' AND cost IS NULL")
                == "1")

        // outletd stats: rounded once, to the cent; exact in JSON.
        let environment = ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""]
        let stats = try TestStack.run(
            [try OutletdProcess.executable(), "stats", "fort-1", "--since", "2026-11-01T03:00:00Z"],
            environment: environment)
        #expect(
            stats.contains("cost:          5.36 BRL (intermediario 0.91, ponta 2.22, outside bands 2.24)"), "\(stats)")
        let json = try TestStack.run(
            [
                try OutletdProcess.executable(), "stats", "fort-1", "--since", "2026-11-01T03:00:00Z", "--format",
                "json",
            ],
            environment: environment)
        #expect(json.contains(#""cost":5.3631"#) && json.contains(#""currency":"BRL""#), "\(json)")
    }

    @Test func standbyIsTheLowestSustainedPowerAndWhatItCostsAMonth() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["tv-1"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        try DeviceStore(connection: connection).setTimeZone("tv-1", "UTC")
        let deviceID = try #require(try DeviceStore(connection: connection).find("tv-1")?.id)
        try TariffFixtures.set(url, "flat", "currency: EUR\nvalid_from: 2026-01-01\nprice_per_kwh: 1.00\n")
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "assign", "flat", "--default"],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        // Three hours in standby at 5 W, then an hour watching at 100 W, all within the last 7 days.
        let hour = (Date().timeIntervalSince1970 / 3_600).rounded(.down) * 3_600 - 6 * 3_600
        func at(_ hours: Double) -> String {
            Date(timeIntervalSince1970: hour + hours * 3_600).formatted(.iso8601)
        }
        try TariffFixtures.draw(connection, deviceID: deviceID, watts: 5, from: at(0), to: at(3))
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 100, from: at(3).replacingOccurrences(of: ":00Z", with: ":10Z"),
            to: at(4))
        // 5 W for the 720 hours of the last 30 days at 1.00 per kWh: 3.60.
        #expect(
            try Harness.scalar(
                url, "SELECT standby_watts || ' ' || round(month_cost, 4) || ' ' || currency FROM outlet_standby")
                == "5 3.6000 EUR")
    }

    @Test func aDayAcrossBerlinsDSTChangePricesBothOfItsRepeatedHours() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["ber-1"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        let deviceID = try #require(try DeviceStore(connection: connection).find("ber-1")?.id)
        // No clock in the file: the outlet's own zone.
        try DeviceStore(connection: connection).setTimeZone("ber-1", "Europe/Berlin")
        try TariffFixtures.set(
            url, "night",
            """
            currency: EUR
            valid_from: 2026-10-01
            price_per_kwh: 0.10
            bands:
              - {name: two, days: [mon, tue, wed, thu, fri, sat, sun], from: "02:00", to: "03:00", price_per_kwh: 1.00}
            taxes_percent: 19
            """)
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "assign", "night", "--outlet", "ber-1"],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        // Sunday 25 Oct 2026: 02:00–03:00 happens twice (CEST, then CET). 1 kW from 01:00 CEST (23:00 UTC) to
        // 04:00 CET (03:00 UTC): 1 kWh base, 2 kWh in the band, 1 kWh base = (0.10 + 2.00 + 0.10) × 1.19 = 2.618.
        try TariffFixtures.draw(
            connection, deviceID: deviceID, watts: 1_000, from: "2026-10-24T23:00:00Z", to: "2026-10-25T03:00:00Z")
        let bands = try Self.cost(url, "ber-1", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")
        #expect(bands["two"]?.1 == 2.0 && bands["base"]?.1 == 2.0, "\(bands)")
        #expect(bands["two"]?.0 == 2.38 && bands["base"]?.0 == 0.238, "\(bands)")
        let total = try Harness.scalar(
            url,
            "SELECT round(sum(cost), 2) FROM outletd_outlet_cost('ber-1', '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z')"
        )
        #expect(total == "2.62")
    }

    /// The owner sees cost in the app: the detail's period, this month so far and its projection, the standby, and
    /// each hour of the day; money as exact decimals.
    /// The detail prices today apart from the month before it (which the app keeps up to an hour): the two add up
    /// to exactly what pricing the whole month to date gives, whatever the hour of the run.
    @Test func todayPlusTheMonthBeforeItIsTheMonthToDate() throws {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        let store = OwnerStore(connection: connection)
        let userID = try store.addUser(name: "ana", passwordHash: PasswordHasher.hash("ana-password-1"))
        try DeviceStore(connection: connection).addMany(codes: ["kit-1"])
        try DeviceStore(connection: connection).setTimeZone("kit-1", "America/Fortaleza")
        _ = try Harness.scalar(url, "UPDATE devices SET owner_id = \(userID) WHERE code = 'kit-1' RETURNING code")
        let deviceID = try #require(try DeviceStore(connection: connection).find("kit-1")?.id)
        try TariffFixtures.set(url, "branca", Self.everyMonth)
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "assign", "branca", "--outlet", "kit-1"],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        // Early this month (in a band on a weekday, or not), the last hours, and the ten minutes just gone.
        let monthStart = try #require(
            RFC3339.date(
                from: try Harness.scalar(
                    url,
                    "SELECT to_char(date_trunc('month', now(), 'America/Fortaleza') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                )))
        let now = (Date().timeIntervalSince1970 / 60).rounded(.down) * 60
        for (from, to) in [
            (monthStart.timeIntervalSince1970 + 20.5 * 3_600, monthStart.timeIntervalSince1970 + 22 * 3_600),
            (now - 5 * 3_600, now - 3 * 3_600), (now - 600, now - 60),
        ] where from >= monthStart.timeIntervalSince1970 {
            try TariffFixtures.draw(
                connection, deviceID: deviceID, watts: 1_250,
                from: Date(timeIntervalSince1970: from).formatted(.iso8601),
                to: Date(timeIntervalSince1970: to).formatted(.iso8601))
        }
        // Today in the outlet's zone, as the detail's statement counts it.
        let today = try ["", " + 1"].map { plus in
            try #require(
                RFC3339.date(
                    from: try Harness.scalar(
                        url,
                        "SELECT to_char(((now() AT TIME ZONE 'America/Fortaleza')::date\(plus))::timestamp AT TIME ZONE 'America/Fortaleza' AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                    )))
        }
        let (todayStart, todayEnd) = (today[0], today[1])
        let whole = try #require(try store.cost(userID: userID, code: "kit-1", from: todayStart, to: todayEnd))
        let base = try #require(try store.costBase(userID: userID, code: "kit-1", todayStart: todayStart))
        let split = try #require(
            try store.cost(userID: userID, code: "kit-1", todayStart: todayStart, todayEnd: todayEnd, base: base))
        // The projection and the standby's month cost scale by the part of the month gone, read at each call's
        // instant: the two calls, milliseconds apart (more on a busy machine), may differ in their last digits.
        // Everything else is equal.
        var splitAtWholesInstant = split
        splitAtWholesInstant.projectedMonthCost = whole.projectedMonthCost
        splitAtWholesInstant.standbyMonthCost = whole.standbyMonthCost
        #expect(splitAtWholesInstant == whole, "today apart: \(split), the whole month: \(whole)")
        for figure in [\OwnedOutletCost.projectedMonthCost, \.standbyMonthCost] {
            let values = [split, whole].compactMap { $0[keyPath: figure].flatMap(Double.init) }
            #expect(values.count == 2 && abs(values[0] - values[1]) <= 1e-4 * max(1, values[1]), "\(values)")
        }
        #expect(whole.monthToDateCost != nil && whole.currency == "BRL")
        // Not the caller's outlet: nothing.
        #expect(try store.costBase(userID: userID + 1, code: "kit-1", todayStart: todayStart) == nil)
    }

    /// `outletd_tariff_pieces` and `outletd_outlet_cost` as migration 21 made them, under the names
    /// `migration21_tariff_pieces` and `migration21_outlet_cost`: what pricing gave before migration 27.
    static func createMigration21Pricing(_ url: String) throws {
        let text = try #require(Migration.all.first { $0.version == 21 }?.sql)
        for name in ["outletd_tariff_pieces", "outletd_outlet_cost"] {
            let start = try #require(text.range(of: "CREATE FUNCTION \(name)("))
            let opening = try #require(text.range(of: "$$", range: start.upperBound..<text.endIndex))
            let closing = try #require(text.range(of: "$$;", range: opening.upperBound..<text.endIndex))
            let function = String(text[start.lowerBound..<closing.upperBound])
                .replacingOccurrences(of: "outletd_tariff_pieces", with: "migration21_tariff_pieces")
                .replacingOccurrences(of: "outletd_outlet_cost", with: "migration21_outlet_cost")
            _ = try Harness.scalar(url, function)
        }
    }

    /// Pricing reads in proportion to what it prices (migration 27): a year is priced by its hours and the bands of
    /// each of its days, not by every piece of the year against every band of the year. The pieces of 360 days
    /// handle at most 18 times the rows of 30 days' (12 if exactly linear); migration 21's handled 110 times
    /// (1.09 million rows for a year of the tarifa branca). Rows, not milliseconds: PostgreSQL's own count of the
    /// rows each step of the plan produced or filtered out, whatever the machine's speed.
    @Test func aYearsPricesAreFoundInProportionToItsDays() throws {
        let url = try Harness.migratedDatabase()
        try TariffFixtures.set(url, "branca", Self.everyMonth)
        let tariffID = try Harness.scalar(url, "SELECT id FROM tariffs WHERE name = 'branca'")
        func rowsHandled(days: Int) throws -> Int {
            let plan = try Harness.scalar(
                url,
                """
                EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM outletd_tariff_pieces(\(tariffID), 'America/Fortaleza',
                    '2025-01-01T03:00:00Z', '2025-01-01T03:00:00Z'::timestamptz + interval '\(days) days')
                """)
            let parsed = try JSONParser.parse(Array(plan.utf8))
            guard case .array(let plans) = parsed, let root = plans.first?["Plan"] else {
                throw HarnessError("no plan: \(plan.prefix(200))")
            }
            func handled(_ node: JSONValue) -> Int {
                let counted = ["Actual Rows", "Rows Removed by Filter", "Rows Removed by Join Filter"]
                    .compactMap { node[$0]?.numberValue() }.reduce(0, +)
                var total = Int(counted * (node["Actual Loops"]?.numberValue() ?? 1))
                if case .array(let children)? = node["Plans"] { total += children.map(handled).reduce(0, +) }
                return total
            }
            return handled(root)
        }
        let month = try rowsHandled(days: 30)
        let year = try rowsHandled(days: 360)
        #expect(month > 0 && year <= 18 * month, "30 days: \(month) rows, 360 days: \(year)")
    }

    /// Migration 27's pricing gives what migration 21's gave, row for row and digit for digit (energy as the same
    /// double, cost as the same numeric text): a year of hourly rollups and 40 days of minute rollups of uneven
    /// energy, on a tariff with band edges inside hours (priced minute by minute), holidays, adders, taxes and a new
    /// version, in Fortaleza; and one without a clock of its own across Berlin's DST change; over a year, a month,
    /// a day, periods starting inside an hour and an empty one.
    @Test func pricingGivesWhatMigration21Gave() throws {
        let url = try Harness.migratedDatabase()
        try Self.createMigration21Pricing(url)
        try Harness.register(["fort-1", "ber-1"], databaseURL: url)
        _ = try Harness.scalar(
            url,
            "UPDATE devices SET time_zone = CASE code WHEN 'fort-1' THEN 'America/Fortaleza' ELSE 'Europe/Berlin' END")
        try TariffFixtures.set(
            url, "cut",
            """
            currency: BRL
            time_zone: America/Fortaleza
            valid_from: 2025-11-01
            price_per_kwh: 0.62
            bands:
              - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:30", to: "21:30", price_per_kwh: 1.38}
              - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "17:30", to: "18:30", price_per_kwh: 0.89}
              - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "21:30", to: "22:45", price_per_kwh: 0.89}
            holidays: [2025-12-25, 2026-01-01, 2026-11-02, 2026-11-15]
            monthly_adders_per_kwh: {"2025-12": 0.01885, "2026-10": 0.04463}
            taxes_percent: 7.5
            """)
        try TariffFixtures.set(
            url, "cut",
            """
            currency: BRL
            time_zone: America/Fortaleza
            valid_from: 2026-10-20
            price_per_kwh: 0.6543
            bands:
              - {name: ponta, days: [mon, tue, wed, thu, fri, sat], from: "18:00", to: "21:15", price_per_kwh: 1.4}
            holidays: [2026-11-02]
            monthly_adders_per_kwh: {"2026-11": 0.02}
            taxes_percent: 12
            """)
        try TariffFixtures.set(
            url, "night",
            """
            currency: EUR
            valid_from: 2025-10-01
            price_per_kwh: 0.10
            bands:
              - {name: two, days: [mon, tue, wed, thu, fri, sat, sun], from: "02:00", to: "03:00", price_per_kwh: 1.00}
              - {name: evening, days: [mon, tue, wed, thu, fri], from: "17:20", to: "19:00", price_per_kwh: 0.31}
            taxes_percent: 19
            """)
        for (tariff, code) in [("cut", "fort-1"), ("night", "ber-1")] {
            _ = try TestStack.run(
                [try OutletdProcess.executable(), "tariff", "assign", tariff, "--outlet", code],
                environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        }
        // Rollups written straight into the stored tables, their energy uneven from one bucket to the next.
        _ = try Harness.scalar(
            url,
            """
            INSERT INTO power_rollups_hourly_stored (device_id, bucket_start, sample_count, power_sum_watts,
                power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
                last_power_watts, last_at)
            SELECT d.id, h, 360, 36000, 360000, 3600, 1, 100, h, 37.3 + (extract(epoch FROM h)::bigint % 97) / 7.0,
                   1, h
            FROM devices d, generate_series('2025-11-15T00:00:00Z'::timestamptz, '2026-11-15T00:00:00Z',
                                            interval '1 hour') h;
            INSERT INTO power_rollups_minute_stored (device_id, bucket_start, sample_count, power_sum_watts,
                power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
                last_power_watts, last_at)
            SELECT d.id, m, 6, 600, 6000, 60, 1, 100, m, 0.61 + (extract(epoch FROM m)::bigint / 60 % 13) / 3.0,
                   1, m
            FROM devices d, generate_series('2026-10-06T00:00:00Z'::timestamptz, '2026-11-15T00:00:00Z',
                                            interval '1 minute') m;
            ANALYZE power_rollups_hourly_stored; ANALYZE power_rollups_minute_stored
            """)
        let periods = [
            ("2025-11-15T00:00:00Z", "2026-11-15T00:00:00Z"), ("2026-10-01T03:00:00Z", "2026-11-01T03:00:00Z"),
            ("2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"), ("2026-11-03T20:30:00Z", "2026-11-05T01:45:00Z"),
            ("2026-10-19T00:00:00Z", "2026-10-22T00:00:00Z"), ("2026-11-10T00:00:00Z", "2026-11-10T00:00:00Z"),
        ]
        for code in ["fort-1", "ber-1"] {
            for (from, to) in periods {
                let rows = "hour_start, band, energy_wh, cost::text, currency"
                let now = "FROM outletd_outlet_cost('\(code)', '\(from)', '\(to)')"
                let before = "FROM migration21_outlet_cost('\(code)', '\(from)', '\(to)')"
                let compared = try Harness.scalar(
                    url,
                    """
                    SELECT (SELECT count(*) \(now)) || ' ' || (SELECT count(*) \(before)) || ' '
                           || (SELECT count(*) FROM (SELECT \(rows) \(now) EXCEPT ALL SELECT \(rows) \(before)) x)
                           || ' ' || (SELECT count(*) FROM (SELECT \(rows) \(before) EXCEPT ALL SELECT \(rows) \(now)) y)
                           || ' ' || (SELECT count(*) \(now) WHERE band IS NOT NULL AND cost IS NOT NULL)
                    """)
                let counts = compared.split(separator: " ").compactMap { Int($0) }
                #expect(counts.count == 5 && counts[0] == counts[1], "\(code) \(from)–\(to): \(compared)")
                #expect(counts.count == 5 && counts[2] == 0 && counts[3] == 0, "\(code) \(from)–\(to): \(compared)")
                if from != to { #expect(counts.count == 5 && counts[4] > 0, "\(code) \(from)–\(to): \(compared)") }
            }
        }
        // Cut hours were priced (bands at :30 and :45 and :15, and minutes to price them), and across Berlin's DST.
        #expect(
            try Harness.count(
                url,
                """
                SELECT count(*) FROM (SELECT hour_start FROM outletd_outlet_cost('fort-1', '2026-11-03T00:00:00Z',
                    '2026-11-07T00:00:00Z') GROUP BY hour_start HAVING count(*) > 1) x
                """) >= 2)
    }

    /// One price all day, every month: whatever the day the test runs on is priced.
    static let everyMonth = """
        currency: BRL
        time_zone: America/Fortaleza
        valid_from: 2020-01-01
        price_per_kwh: 0.62
        bands:
          - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:00", to: "21:00", price_per_kwh: 1.38}
        """
}
