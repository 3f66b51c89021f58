import Config
import Foundation
import Postgres
import ServiceTestSupport
import Storage
import Telemetry
import TestSupport
import Testing

/// Tariff files as operators write them: the issue's tarifa branca loads as written; each kind of mistake is
/// refused as `FILE:LINE: reason`, and through the CLI a refused file changes nothing.
struct TariffFileTests {

    @Test func theTarifaBrancaLoadsAsWritten() throws {
        let tariff = try TariffFile.parse(TariffFixtures.tarifaBranca, source: "branca.yaml")
        #expect(tariff.currency == "BRL" && tariff.timeZone == "America/Fortaleza" && tariff.validFrom == "2026-11-01")
        #expect(tariff.pricePerKWh == "0.62" && tariff.taxesPercent == "0")
        #expect(tariff.bands.map(\.name) == ["ponta", "intermediario", "intermediario"])
        #expect(tariff.bands.map(\.fromMinute) == [1_080, 1_020, 1_260])
        #expect(tariff.bands.map(\.toMinute) == [1_260, 1_080, 1_320])
        #expect(tariff.bands[0].days == [.mon, .tue, .wed, .thu, .fri] && tariff.bands[0].pricePerKWh == "1.38")
        #expect(tariff.holidays == ["2026-11-02", "2026-11-15", "2026-11-20", "2026-12-25"])
        #expect(tariff.monthlyAdders.map(\.month) == ["2026-11", "2026-12"])
        #expect(tariff.monthlyAdders.map(\.perKWh) == ["0.01885", "0.04463"])
    }

    @Test func aBandMayEndAtMidnightAndTheClockMayBeLeftOut() throws {
        let tariff = try TariffFile.parse(
            """
            currency: EUR
            valid_from: 2026-03-01
            price_per_kwh: 0.30
            bands:
              - {name: night, days: sat, from: "22:00", to: "24:00", price_per_kwh: 0.2}
              - {name: night, days: [sun], from: "00:00", to: "06:00", price_per_kwh: 0.2}
            taxes_percent: 19
            """, source: "night.yaml")
        #expect(tariff.timeZone == nil)
        #expect(tariff.bands.map(\.toMinute) == [1_440, 360])
        #expect(tariff.bands[0].days == [.sat])
    }

    static let base = "currency: BRL\nvalid_from: 2026-11-01\nprice_per_kwh: 0.62\n"

    @Test(arguments: [
        (
            base + "bands:\n  - {name: a, days: [mon], from: \"18:00\", to: \"21:00\", price_per_kwh: 1}\n"
                + "  - {name: b, days: [fri, mon], from: \"20:00\", to: \"22:00\", price_per_kwh: 1}\n",
            "f.yaml:6: bands: b overlaps a on mon"
        ),
        (
            base + "bands:\n  - {name: a, days: [mon], from: \"21:00\", to: \"18:00\", price_per_kwh: 1}\n",
            "f.yaml:5: bands: a: to (18:00) must be after from (21:00)"
        ),
        (
            base + "bands:\n  - {name: a, days: [monday], from: \"18:00\", to: \"21:00\", price_per_kwh: 1}\n",
            #"f.yaml:5: bands: days: unknown day "monday""#
        ),
        (
            base + "bands:\n  - {name: a, days: [mon], from: \"18:00\", to: \"21:00\", price_per_kwh: -1.38}\n",
            "f.yaml:5: bands: price_per_kwh: -1.38 is negative"
        ),
        (
            base + "bands:\n  - {name: a, days: [mon], from: \"25:00\", to: \"26:00\", price_per_kwh: 1}\n",
            #"f.yaml:5: bands: from: "25:00" is not a time"#
        ),
        (base + "time_zone: America/Nowhere\n", #"f.yaml:4: time_zone: "America/Nowhere" is not an IANA time zone"#),
        (
            "currency: XYZ\nvalid_from: 2026-11-01\nprice_per_kwh: 0.62\n",
            #"f.yaml:1: currency: "XYZ" is not an ISO 4217 code"#
        ),
        (
            "currency: BRL\nvalid_from: 2026-11-31\nprice_per_kwh: 0.62\n",
            #"f.yaml:2: valid_from: "2026-11-31" is not a date"#
        ),
        ("currency: BRL\nvalid_from: 2026-11-01\nprice_per_kwh: -0.62\n", "f.yaml:3: price_per_kwh: -0.62 is negative"),
        ("currency: BRL\nvalid_from: 2026-11-01\n", "f.yaml:1: price_per_kwh: required"),
        (base + "taxes_percent: lots\n", #"f.yaml:4: taxes_percent: "lots" is not a decimal number"#),
        (
            base + "monthly_adders_per_kwh: {\"2026-13\": 0.1}\n",
            #"f.yaml:4: monthly_adders_per_kwh: "2026-13" is not a month"#
        ),
        (base + "holidays: [2026-02-30]\n", #"f.yaml:4: holidays: "2026-02-30" is not a date"#),
        (base + "price: 1\n", #"f.yaml:4: unknown key "price""#),
        ("currency: [BRL\n", "f.yaml: not valid YAML"),
    ])
    func wrongFilesAreRefusedWithTheirLine(_ text: String, _ expected: String) {
        do {
            _ = try TariffFile.parse(text, source: "f.yaml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.lines.contains { $0.hasPrefix(expected) }, "\(error.lines)")
        }
    }

    /// `outletd tariff …` as an operator runs it: set, list, show (text and JSON), assign at each level, a second
    /// version, and a wrong file that changes nothing.
    @Test func theCLILoadsListsShowsAndAssignsAndAWrongFileChangesNothing() throws {
        let url = try Harness.migratedDatabase()
        try Harness.register(["kit-1", "kit-2", "kit-3"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try OwnerStore(connection: connection).addUser(
            name: "ana", passwordHash: "$2b$12$" + String(repeating: "x", count: 53))
        _ = try connection.execute("UPDATE devices SET owner_id = (SELECT id FROM app_users) WHERE code = 'kit-2'")
        let directory = try TestStack.shared().directory
        let file = "\(directory)/branca-\(UUID().uuidString).yaml"
        try TariffFixtures.tarifaBranca.write(toFile: file, atomically: true, encoding: .utf8)
        func run(_ arguments: [String]) throws -> String {
            try TestStack.run(
                [try OutletdProcess.executable()] + arguments,
                environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        }
        #expect(try run(["tariff", "set", "branca", "--file", file]).contains("loaded a version from 2026-11-01"))
        let december = file + ".dec.yaml"
        try TariffFixtures.tarifaBranca.replacingOccurrences(
            of: "valid_from: 2026-11-01", with: "valid_from: 2026-12-01"
        )
        .replacingOccurrences(of: "0.62", with: "0.65").write(toFile: december, atomically: true, encoding: .utf8)
        _ = try run(["tariff", "set", "branca", "--file", december])
        try "currency: EUR\nvalid_from: 2026-01-01\nprice_per_kwh: 0.3\n".write(
            toFile: file + ".eur", atomically: true, encoding: .utf8)
        _ = try run(["tariff", "set", "flat", "--file", file + ".eur"])

        let before = try Harness.scalar(
            url, "SELECT count(*) || '/' || (SELECT count(*) FROM tariff_bands) FROM tariff_versions")
        let wrong = file + ".wrong"
        try (Self.base + "bands:\n  - {name: a, days: [mon], from: \"21:00\", to: \"18:00\", price_per_kwh: 1}\n")
            .write(toFile: wrong, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) { try run(["tariff", "set", "branca", "--file", wrong]) }
        // A version in another currency would mix them.
        #expect(throws: (any Error).self) { try run(["tariff", "set", "branca", "--file", file + ".eur"]) }
        #expect(
            try Harness.scalar(
                url, "SELECT count(*) || '/' || (SELECT count(*) FROM tariff_bands) FROM tariff_versions") == before)

        _ = try run(["tariff", "assign", "flat", "--default"])
        _ = try run(["tariff", "assign", "branca", "--owner", "ana"])
        _ = try run(["tariff", "assign", "flat", "--outlet", "kit-2"])
        #expect(throws: (any Error).self) { try run(["tariff", "assign", "flat", "--outlet", "nope"]) }
        #expect(throws: (any Error).self) { try run(["tariff", "assign", "flat", "--default", "--owner", "ana"]) }
        // Outlet beats owner beats default.
        let store = TariffStore(connection: connection)
        #expect(try store.tariff(ofOutlet: "kit-1")?.name == "flat")
        #expect(try store.tariff(ofOutlet: "kit-1")?.assignedBy == "default")
        #expect(try store.tariff(ofOutlet: "kit-2")?.assignedBy == "outlet")
        _ = try run(["tariff", "assign", "branca", "--outlet", "kit-3"])
        #expect(try store.tariff(ofOutlet: "kit-3")?.name == "branca")

        let list = try run(["tariff", "list"])
        #expect(
            list.contains("branca") && list.contains("BRL") && list.contains("2026-12-01") && list.contains("owner ana")
        )
        let show = try run(["tariff", "show", "branca"])
        #expect(show.contains("version from 2026-11-01 until 2026-12-01"))
        #expect(show.contains("ponta mon,tue,wed,thu,fri 18:00–21:00 1.38 per kWh"))
        let json = try run(["tariff", "show", "branca", "--format", "json"])
        #expect(json.contains(#""valid_from":"2026-12-01""#) && json.contains(#""price_per_kwh":"0.65""#))
        // What was stored reads back as the file said.
        #expect(
            try store.versions(name: "branca").first?.tariff
                == TariffFile.parse(TariffFixtures.tarifaBranca, source: "x"))
    }
}
