import Foundation
import Postgres
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import Storage
@testable import WritePath

/// `samples_stored` keeps a reading in compact columns (migration 24); the view `samples` must read back exactly
/// what was written: every time, every double bit for bit, whichever way the row was stored.
@Suite struct CompactSampleTests {
    let base = Date(timeIntervalSince1970: 1_800_000_000.25)

    /// Every value with the decimals the protocols send, parsed as the decoders parse it, takes the compact
    /// column and reads back (divided as the view divides it) as the same double.
    @Test(arguments: [
        // (what, units per whole number, largest whole number, step in units)
        ("voltage, 0–500 V by 0.01 V", 100.0, 50_000, 1),
        ("current, 0–100 A by 1 mA", 1_000.0, 100_000, 1),
        ("power, 0–50 kW by 0.1 W", 100.0, 5_000_000, 10),
        ("power, 0–1 kW by 0.01 W", 100.0, 100_000, 1),
        ("energy, 0–100 Wh by 1 mWh", 1_000.0, 100_000, 1),
        ("energy, 0–2,147 kWh by 0.1 Wh", 1_000.0, 2_147_483_000, 100_007),
    ])
    func deviceDecimalsTakeTheCompactColumn(what: String, scale: Double, largest: Int, step: Int) throws {
        let decimals = Int(log10(scale).rounded())
        var misses: [String] = []
        for units in stride(from: 0, through: largest, by: step) {
            let text = Self.decimalText(units, decimals: decimals)
            let value = try #require(JSONParser.parseNumber(text))
            guard let whole = StoredSample.scaled(value, by: scale), whole == units,
                (Double(whole) / scale).bitPattern == value.bitPattern
            else {
                misses.append(text)
                continue
            }
        }
        #expect(misses.isEmpty, "\(what): \(misses.count) values not compact, e.g. \(misses.prefix(5))")
    }

    @Test func powerFactorThousandthsTakeTheCompactColumn() throws {
        for units in -1_000...1_000 {
            let text = (units < 0 ? "-" : "") + Self.decimalText(abs(units), decimals: 3)
            let value = try #require(JSONParser.parseNumber(text))
            #expect(StoredSample.scaled(value, by: 1_000, limit: Int32(Int16.max)).map(Int.init) == units, "\(text)")
        }
    }

    /// What the compact columns cannot hold exactly goes whole: never an approximation.
    @Test func valuesThatAreNotWholeUnitsAreNotScaled() {
        for value in [0.1 + 0.2, 1.0 / 60, -0.0, .nan, .infinity, 3e9, 229.5 * 0.412, 0.0005] {
            #expect(StoredSample.scaled(value, by: 1_000) == nil, "\(value)")
        }
        #expect(StoredSample.scaled(1_000, by: 1_000, limit: Int32(Int16.max)) == nil)
    }

    static func decimalText(_ units: Int, decimals: Int) -> String {
        var divisor = 1
        for _ in 0..<decimals { divisor *= 10 }
        let fraction = String(units % divisor)
        return "\(units / divisor)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    /// Readings that exercise each case of the encoding (times and values).
    func readings() -> [Reading] {
        func at(_ seconds: Double) -> Date { base.addingTimeInterval(seconds).roundedToMicroseconds }
        return [
            // No device time: measured is received.
            Reading(
                measuredAt: at(0), receivedAt: at(0), voltageVolts: 229.5, currentAmperes: 0.42, powerWatts: 96.39,
                powerFactor: 0.97, energyWattHours: 1_234.567, sequence: 1),
            // A trusted device time (ms), received 3.25 ms later.
            Reading(
                measuredAt: at(10), receivedAt: at(10.003_25), deviceTime: at(10), voltageVolts: 127.1,
                currentAmperes: 0.001, powerWatts: 0.1, powerFactor: -1, energyWattHours: 0, sequence: -5),
            // A trusted device time equal to the receive time.
            Reading(measuredAt: at(20), receivedAt: at(20), deviceTime: at(20), powerWatts: 50_000),
            // An untrusted device time (a clock in 1970); measured is received.
            Reading(
                measuredAt: at(30), receivedAt: at(30), deviceTime: Date(timeIntervalSince1970: 12.5),
                voltageVolts: 500, powerWatts: 0, sequence: Int64.max),
            // An element of an array without a device time: 2 µs before the receive time.
            Reading(
                measuredAt: at(39.999_998), receivedAt: at(40), voltageVolts: 0.1 + 0.2, currentAmperes: 100,
                powerWatts: 229.5 * 0.412, powerFactor: 0.001, energyWattHours: 1.0 / 60, sequence: 2_147_483_648),
            // An untrusted device time while measured is not received (not made by the decoders, kept anyway).
            Reading(
                measuredAt: at(50), receivedAt: at(50.5), deviceTime: at(-7_200), powerWatts: -0.0,
                energyWattHours: 1e7, sequence: -2_147_483_649),
            // A buffered reading an hour old (received beyond the ±35 minutes of the short delay).
            Reading(
                measuredAt: at(-3_600), receivedAt: at(60), deviceTime: at(-3_600), currentAmperes: 0.000_5,
                powerWatts: 12.345, powerFactor: 2, energyWattHours: 12.345 * 1_000),
            // A device time PostgreSQL cannot store (year 20000): kept as none, as before.
            Reading(
                measuredAt: at(70), receivedAt: at(70), deviceTime: Date(timeIntervalSince1970: 568_971_820_800),
                powerWatts: 1),
        ]
    }

    /// The readings of `device`, as the view `samples` reads them, in time order.
    func stored(_ connection: PostgresConnection, device: Int32) throws -> [Reading] {
        let rows = try connection.execute(
            """
            SELECT (extract(epoch FROM measured_at) * 1000000)::bigint, (extract(epoch FROM received_at) * 1000000)::bigint,
                   (extract(epoch FROM device_time) * 1000000)::bigint, voltage_volts, current_amperes, power_watts,
                   power_factor, energy_wh, seq
            FROM samples WHERE device_id = $1 ORDER BY measured_at
            """, [device])
        func date(_ row: Int, _ column: Int) throws -> Date? {
            try rows.int64(row: row, column: column).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
        }
        return try (0..<rows.rowCount).map { row in
            Reading(
                measuredAt: try #require(try date(row, 0)).roundedToMicroseconds,
                receivedAt: try #require(try date(row, 1)).roundedToMicroseconds,
                deviceTime: try date(row, 2)?.roundedToMicroseconds,
                voltageVolts: try rows.double(row: row, column: 3),
                currentAmperes: try rows.double(row: row, column: 4),
                powerWatts: try #require(try rows.double(row: row, column: 5)),
                powerFactor: try rows.double(row: row, column: 6),
                energyWattHours: try rows.double(row: row, column: 7),
                sequence: try rows.int64(row: row, column: 8))
        }
    }

    /// Doubles compared by their bits (`Reading`'s == takes -0 for 0), times to the microsecond.
    func expectIdentical(_ stored: [Reading], _ written: [Reading], _ path: String) {
        let expected = written.map { reading in
            var reading = reading
            // PostgreSQL keeps years 1–9999: a device time beyond was never stored.
            if let time = reading.deviceTime, time.timeIntervalSince1970 > 253_402_300_799 { reading.deviceTime = nil }
            return reading
        }.sorted { $0.measuredAt < $1.measuredAt }
        #expect(stored.count == expected.count, "\(path)")
        for (got, want) in zip(stored, expected) {
            let bits = { (r: Reading) in
                [r.voltageVolts, r.currentAmperes, r.powerWatts, r.powerFactor, r.energyWattHours].map {
                    $0?.bitPattern
                }
            }
            #expect(got == want, "\(path)")
            #expect(bits(got) == bits(want), "\(path): \(got) vs \(want)")
        }
    }

    /// Straight COPY (StoredSample.encode) and the careful way (outletd_compact_sample in move_samples.sql) store
    /// the same rows, which read back as written.
    @Test func theWriterStoresEveryReadingExactly() throws {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let devices = DeviceStore(connection: connection)
        let first = try devices.add(.init(code: "compact-1")).id
        let second = try devices.add(.init(code: "compact-2")).id
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        try store.prepareSession(connection)
        let message = RawMessage(topic: "t", payload: [], receivedAt: base)
        var straight = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        straight.add(
            ClassifiedMessage(samples: readings().map { DeviceSample(deviceID: first, reading: $0) }), of: message)
        #expect(try store.write(straight, to: connection) == .init(inserted: readings().count, duplicates: 0))
        // One reading stored already sends the whole batch the careful way.
        var careful = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        careful.add(
            ClassifiedMessage(
                samples: [DeviceSample(deviceID: first, reading: readings()[0])]
                    + readings().map { DeviceSample(deviceID: second, reading: $0) }), of: message)
        #expect(try store.write(careful, to: connection) == .init(inserted: readings().count, duplicates: 1))
        expectIdentical(try stored(connection, device: first), readings(), "COPY")
        expectIdentical(try stored(connection, device: second), readings(), "careful way")
        // Both ways wrote the same columns.
        let differing = try connection.execute(
            """
            SELECT count(*) FROM samples_stored a JOIN samples_stored b USING (measured_at)
            WHERE a.device_id = $1 AND b.device_id = $2
              AND (a.*) IS DISTINCT FROM (b.measured_at, b.received_at_wide, b.device_time, b.seq_wide, b.voltage_exact,
                   b.current_exact, b.power_exact, b.power_factor_exact, b.energy_exact, a.device_id, b.received_delay_us,
                   b.seq, b.voltage_centivolts, b.current_milliamperes, b.power_centiwatts, b.energy_milliwatt_hours,
                   b.power_factor_thousandths)
            """, [first, second])
        #expect(differing[0, 0] == "0")
        // The bench's kind of reading (trusted time, five values with the device's decimals, seq) needs no double.
        let wide = try connection.execute(
            """
            SELECT received_delay_us IS NOT NULL, num_nulls(received_at_wide, device_time, seq_wide, voltage_exact,
                   current_exact, power_exact, power_factor_exact, energy_exact)
            FROM samples_stored WHERE device_id = $1 AND measured_at = $2
            """, [first, readings()[1].measuredAt])
        #expect(wide[0, 0] == "t" && wide[0, 1] == "8")
    }

    /// Migration 24 re-encodes rows of the old layout (partitioned by day) and keeps them exact; the view takes
    /// inserts and deletes as the table did.
    @Test func migrationKeepsRowsOfTheOldLayoutExactly() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator(migrations: Migration.all.filter { $0.version <= 23 }).migrate(connection)
        let device = try DeviceStore(connection: connection).add(.init(code: "old-layout")).id
        func literal(_ date: Date?) -> String {
            date.map {
                "timestamptz 'epoch' + \(Int64(($0.timeIntervalSince1970 * 1_000_000).rounded())) * interval '1 microsecond'"
            }
                ?? "NULL"
        }
        func literal(_ value: Double?) -> String { value.map { "'\($0)'::float8" } ?? "NULL" }
        let written = readings()
        let days = Set(written.map { Int(($0.measuredAt.timeIntervalSince1970 / 86_400).rounded(.down)) })
        try connection.execute(
            "SELECT outletd_ensure_sample_partitions(ARRAY[\(days.map(String.init).joined(separator: ","))])")
        for reading in written {
            try connection.execute(
                """
                INSERT INTO samples VALUES ($1, \(literal(reading.measuredAt)), \(literal(reading.receivedAt)),
                    \(literal(reading.deviceTime.flatMap { $0.timeIntervalSince1970 > 253_402_300_799 ? nil : $0 })),
                    \(literal(reading.voltageVolts)), \(literal(reading.currentAmperes)), \(literal(reading.powerWatts)),
                    \(literal(reading.powerFactor)), \(literal(reading.energyWattHours)),
                    \(reading.sequence.map(String.init) ?? "NULL"))
                """, [device])
        }
        try Migrator().migrate(connection)
        expectIdentical(try stored(connection, device: device), written, "migrated")
        let partitions = try connection.execute("SELECT count(*) FROM sample_partitions")
        #expect(Int(partitions[0, 0] ?? "") ?? 0 >= days.count)
        // Into the view: stored as the writer stores it.
        try connection.execute(
            "INSERT INTO samples (device_id, measured_at, received_at, power_watts) VALUES ($1, $2, $2, 12.5)",
            [device, base.addingTimeInterval(80)])
        let inserted = try connection.execute(
            "SELECT power_centiwatts, received_delay_us, device_time FROM samples_stored WHERE measured_at = $1",
            [base.addingTimeInterval(80)])
        #expect(inserted[0, 0] == "1250" && inserted[0, 1] == nil && inserted[0, 2] == nil)
        let deleted = try connection.execute("DELETE FROM samples WHERE device_id = $1", [device])
        #expect(deleted.affectedRows == written.count + 1)
    }

    /// The maintenance pass rebuilds packed the index of a partition whose day settled (a day after it ended), once;
    /// the index still keeps readings unique.
    @Test func settledPartitionsGetTheirIndexPacked() throws {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let now = try #require(RFC3339.date(from: "2026-06-30T12:00:00Z"))
        // 200 outlets, a reading each every 10 s for 10 minutes, stored as batches come: time by time.
        try connection.execute("SELECT outletd_ensure_sample_partitions(ARRAY[20631])")
        try connection.execute(
            """
            INSERT INTO samples_stored
            SELECT c.* FROM generate_series(0, 59) s, generate_series(1, 200) d,
                 LATERAL (SELECT timestamptz '2026-06-27 10:00:00+00' + s * interval '10 s' AS t) x,
                 LATERAL outletd_compact_sample(d, t, t, NULL, 229.5, 0.42, 96.4, 0.97, s * 0.27, s) c
            ORDER BY s, d
            """)
        let size = "SELECT pg_relation_size('samples_p20260627_pkey')"
        let loose = try Harness.count(url, size)
        let retention = OutletdConfiguration.RetentionSettings()
        let first = try RollupStore(connection: connection).maintain(retention, now: now)
        #expect(first.partitionsPacked == ["samples_p20260627"])
        let packed = try Harness.count(url, size)
        #expect(packed * 10 < loose * 7, "index \(loose) → \(packed) bytes")
        // Yesterday's and today's are not settled; nothing is packed twice.
        let second = try RollupStore(connection: connection).maintain(retention, now: now)
        #expect(second.partitionsPacked.isEmpty)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples WHERE measured_at < '2026-06-28'") == 12_000)
        #expect(throws: PostgresError.self) {
            try connection.execute(
                "INSERT INTO samples_stored (measured_at, device_id, power_centiwatts) VALUES ('2026-06-27 10:00:00+00', 1, 0)"
            )
        }
    }
}
