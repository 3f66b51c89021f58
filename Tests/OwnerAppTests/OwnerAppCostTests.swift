import Foundation
import Postgres
import ServiceTestSupport
import Storage
import TestSupport
import Testing
import WritePath

/// What the app shows of cost: the outlet's detail and its day by hour, priced on the tarifa branca.
@Suite(.serialized) struct OwnerAppCostTests {
    @Test func theOwnersAppShowsCostInTheDetailAndEachHour() async throws {
        try await OwnerAppTests.withApp { app in
            let connection = try PostgresConnection(connectionString: app.url)
            defer { connection.close() }
            try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
            try DeviceStore(connection: connection).setTimeZone("kit-1", "America/Fortaleza")
            let deviceID = try #require(try DeviceStore(connection: connection).find("kit-1")?.id)
            try TariffFixtures.set(app.url, "branca", TariffFixtures.tarifaBranca)
            _ = try TestStack.run(
                [try OutletdProcess.executable(), "tariff", "assign", "branca", "--outlet", "kit-1"],
                environment: ["OUTLETD_DATABASE_URL": app.url, "OUTLETD_CONFIG": ""])
            try TariffFixtures.draw(
                connection, deviceID: deviceID, watts: 1_000, from: "2026-11-03T20:30:00Z", to: "2026-11-03T21:30:00Z")
            // And an hour just gone, for this month so far.
            let recent = (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 2 * 3_600
            try TariffFixtures.draw(
                connection, deviceID: deviceID, watts: 1_000,
                from: Date(timeIntervalSince1970: recent).formatted(.iso8601),
                to: Date(timeIntervalSince1970: recent + 3_600).formatted(.iso8601))
            let ana = try await app.login("ana")
            #expect(
                try await app.send("POST", "/api/v1/outlets", token: ana, body: try app.claimBody("kit-1", "Fridge"))
                    .status == 201)
            let detail = try await app.send(
                "GET", "/api/v1/outlets/kit-1?from=2026-11-03T03:00:00Z&to=2026-11-04T03:00:00Z", token: ana)
            #expect(detail.status == 200)
            #expect(detail.body.contains(#""cost":1.153850,"currency":"BRL""#), "\(detail.body)")
            let monthToDate = detail.json?["month_to_date_cost"]?.numberValue() ?? -1
            let projected = detail.json?["projected_month_cost"]?.numberValue() ?? -1
            #expect(monthToDate > 0 && projected >= monthToDate, "\(detail.body)")
            #expect(detail.json?["standby_watts"]?.numberValue() != nil, "\(detail.body)")
            #expect(detail.json?["standby_month_cost"] != nil, "\(detail.body)")

            let day = try await app.send("GET", "/api/v1/outlets/kit-1/hourly?date=2026-11-03", token: ana)
            guard case .array(let hours)? = day.json?["hours"] else { throw HarnessError(day.body) }
            #expect(hours[16]["cost"] == .null)
            #expect(hours[17]["cost"]?.numberValue() == 0.454425 && hours[18]["cost"]?.numberValue() == 0.699425)
            #expect(day.body.contains(#""cost":0.454425"#), "\(day.body)")
        }
    }
}
