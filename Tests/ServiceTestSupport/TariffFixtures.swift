import Foundation
import Postgres
import Telemetry
import TestSupport
import Testing
import WritePath

/// Tariffs and readings for the cost tests: the tarifa branca as its operator writes it, a tariff set through the
/// CLI, and an outlet drawing a steady power through the real writer.
public enum TariffFixtures {
    public static let tarifaBranca = """
        currency: BRL                 # ISO 4217
        time_zone: America/Fortaleza  # the bands' clock; when absent, each outlet's own time zone
        valid_from: 2026-11-01
        price_per_kwh: 0.62           # outside every band
        bands:                        # optional; the first band that matches wins
          - {name: ponta, days: [mon, tue, wed, thu, fri], from: "18:00", to: "21:00", price_per_kwh: 1.38}
          - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "17:00", to: "18:00", price_per_kwh: 0.89}
          - {name: intermediario, days: [mon, tue, wed, thu, fri], from: "21:00", to: "22:00", price_per_kwh: 0.89}
        holidays: [2026-11-02, 2026-11-15, 2026-11-20, 2026-12-25]   # no bands apply on these days
        monthly_adders_per_kwh: {"2026-11": 0.01885, "2026-12": 0.04463}  # e.g. the bandeira of each month
        taxes_percent: 0              # on everything: cost = kWh × (price + adder) × (1 + taxes_percent / 100)

        """

    /// An outlet drawing `watts` from `from` to `to` (UTC), a reading every 10 s: exactly watts × hours Wh, each
    /// minute its sixtieth of an hour.
    public static func draw(_ connection: PostgresConnection, deviceID: Int32, watts: Double, from: String, to: String)
        throws
    {
        let start = try #require(RFC3339.date(from: from))
        let end = try #require(RFC3339.date(from: to))
        let count = Int(end.timeIntervalSince(start) / 10) + 1
        let samples = (0..<count).map { index -> DeviceSample in
            let at = start.addingTimeInterval(Double(index) * 10)
            return DeviceSample(
                deviceID: deviceID,
                reading: Reading(
                    measuredAt: at, receivedAt: at, voltageVolts: 230, currentAmperes: watts / 230, powerWatts: watts,
                    energyWattHours: nil))
        }
        var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        batch.add(ClassifiedMessage(samples: samples), of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
        _ = try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).write(batch, to: connection)
    }

    public static func set(_ url: String, _ name: String, _ yaml: String) throws {
        let file = "\(try TestStack.shared().directory)/\(name)-\(UUID().uuidString).yaml"
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        _ = try TestStack.run(
            [try OutletdProcess.executable(), "tariff", "set", name, "--file", file],
            environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
    }
}
