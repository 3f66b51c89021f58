import Foundation
import Postgres
import Telemetry
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage
@testable import WritePath

/// The power rollups against a real PostgreSQL, fed through the real write path (`BatchStore`).
@Suite struct RollupTests {
    /// A database with one store session and the outlets `codes`; returns their ids too.
    func setUp(_ codes: [String], timeZone: String = "UTC", maxGapSeconds: Double = 600) throws
        -> (url: String, connection: PostgresConnection, ids: [Int32])
    {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        let ids = try codes.map { try DeviceStore(connection: connection).add(.init(code: $0)).id }
        try RollupStore(connection: connection).store(.init(timeZone: timeZone, maxGapSeconds: maxGapSeconds))
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        return (url, connection, ids)
    }

    func sample(_ deviceID: Int32, _ at: Date, power: Double, voltage: Double? = 230, energy: Double? = nil)
        -> DeviceSample
    {
        DeviceSample(
            deviceID: deviceID,
            reading: Reading(
                measuredAt: at.roundedToMicroseconds, receivedAt: at.roundedToMicroseconds, voltageVolts: voltage,
                currentAmperes: voltage.map { power / $0 }, powerWatts: power, energyWattHours: energy))
    }

    /// Writes `samples` through the write path, `batchSize` per transaction.
    @discardableResult
    func write(_ samples: [DeviceSample], _ connection: PostgresConnection, batchSize: Int = 500) throws -> Int {
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        var inserted = 0
        for start in stride(from: 0, to: samples.count, by: batchSize) {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            let chunk = Array(samples[start..<min(samples.count, start + batchSize)])
            batch.add(
                ClassifiedMessage(samples: chunk),
                of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
            inserted += try store.write(batch, to: connection).inserted
        }
        return inserted
    }

    // MARK: - The property: incremental = from scratch

    /// How the readings reach the write path.
    enum Arrival: String, CustomTestStringConvertible {
        /// All shuffled: nearly every batch holds late readings (the recomputing path).
        case shuffled
        /// In time order with one reading in 200 arriving late, a few hundred readings after its
        /// time: most batches merge from the outlets' tails, some recompute.
        case mostlyInOrder
        /// In time order, replays included: every batch merges from the tails, except for outlets
        /// with a replayed reading.
        case inOrder
        /// In time order, in batches of one to four readings (a steady rate): most outlets stay in
        /// their open minute from one batch to the next, and cross into a new hour and day with
        /// all of a batch in one minute.
        case steady
        /// In time order, in batches of up to 40 readings: outlets leave their open minute within
        /// their open hour.
        case catchingUp
        var testDescription: String { rawValue }
    }

    @Test(
        arguments: zip(
            [UInt64(1), 2, 3, 4, 5, 6, 7, 8, 9, 10],
            [
                Arrival.shuffled, .shuffled, .shuffled, .mostlyInOrder, .mostlyInOrder, .mostlyInOrder, .inOrder,
                .steady,
                .catchingUp,
                .steady,
            ])
    )
    func incrementalRollupsEqualAFromScratchComputation(seed: UInt64, arrival: Arrival) throws {
        let (url, connection, ids) = try setUp(["p-1", "p-2", "p-3"], timeZone: "Europe/Berlin", maxGapSeconds: 120)
        defer { connection.close() }
        var random = SplitMix64(seed: seed)
        // Around Berlin's local midnight and the end of summer time (2026-10-25 01:00 UTC).
        let start = RFC3339.date(from: "2026-10-24T21:30:00Z") ?? Date()
        var readings: [DeviceSample] = []
        for (index, id) in ids.enumerated() {
            var at = start.addingTimeInterval(Double(random.next() % 60))
            var counter = Double(random.next() % 1_000)
            let end = start.addingTimeInterval(5 * 3_600)
            while at < end {
                let power = Double(random.next() % 3_000) / 10
                // p-1 integrates power, p-2 reports a counter (with resets), p-3 sometimes does.
                var energy: Double?
                if index == 1 || (index == 2 && random.next() % 2 == 0) {
                    counter += Double(random.next() % 50) / 10
                    if random.next() % 40 == 0 { counter = Double(random.next() % 5) }  // reset
                    energy = counter
                }
                let voltage: Double? = random.next() % 10 == 0 ? nil : 220 + Double(random.next() % 200) / 10
                readings.append(sample(id, at, power: power, voltage: voltage, energy: energy))
                // Mostly 1–20 s apart; sometimes a gap longer than the 120 s maximum.
                at = at.addingTimeInterval(
                    random.next() % 25 == 0
                        ? Double(121 + random.next() % 900) : 1 + Double(random.next() % 20_000) / 1_000)
            }
        }
        // Duplicates (a replay repeats some readings, with other values that must be ignored).
        var fed = readings
        for _ in 0..<readings.count / 5 {
            var copy = readings[Int(random.next() % UInt64(readings.count))]
            copy.reading.powerWatts += 1_000
            fed.append(copy)
        }
        // Out of order, then fed in batches of random sizes.
        switch arrival {
        case .shuffled:
            fed.shuffle(using: &random)
        case .mostlyInOrder:
            fed.sort { $0.reading.measuredAt < $1.reading.measuredAt }
            for index in stride(from: fed.count - 1, through: 0, by: -1) where random.next() % 200 == 0 {
                let late = fed.remove(at: index)
                fed.insert(late, at: min(fed.count, index + 1 + Int(random.next() % 400)))
            }
        case .inOrder, .steady, .catchingUp:
            fed.sort { $0.reading.measuredAt < $1.reading.measuredAt }
        }
        var position = 0
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        var inserted = 0
        while position < fed.count {
            let size = 1 + Int(random.next() % (arrival == .steady ? 4 : arrival == .catchingUp ? 40 : 300))
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            batch.add(
                ClassifiedMessage(samples: Array(fed[position..<min(fed.count, position + size)])),
                of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
            inserted += try store.write(batch, to: connection).inserted
            position += size
        }
        // A replayed reading is stored once (whichever copy came first).
        let distinct = Set(readings.map { "\($0.deviceID)/\($0.reading.measuredAt.timeIntervalSince1970)" })
        #expect(inserted == distinct.count)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == distinct.count)

        try expectRollupsMatchFromScratch(url, timeZone: "Europe/Berlin", maxGapSeconds: 120)
        #expect(try Harness.count(url, "SELECT count(DISTINCT day) FROM power_rollups_daily") == 2)
        try expectTailsAreNewestSamples(url)
        try Harness.expectTotalsAreThoseOfTheSamples(url)

        // Damage the rollups, then rebuild them: the rebuild gives what the incremental path gave.
        let before = try Harness.scalar(url, Self.rollupFingerprintSQL)
        try connection.execute("DELETE FROM power_rollups_minute_stored WHERE device_id = $1", [ids[0]])
        try connection.execute("UPDATE power_rollups_hourly_stored SET energy_wh = -1")
        let rollups = RollupStore(connection: connection)
        let targets = try rollups.rebuildTargets(since: start.addingTimeInterval(-86_400), code: nil)
        #expect(targets.count == 3)
        for target in targets { try rollups.rebuild(target, chunkSeconds: 3_600) }
        try expectRollupsMatchFromScratch(url, timeZone: "Europe/Berlin", maxGapSeconds: 120)
        #expect(try Harness.scalar(url, Self.rollupFingerprintSQL) == before)
        try expectTailsAreNewestSamples(url)
    }

    /// A late reading in a batch that went straight into `samples` (no replay in it, so not the careful way):
    /// its outlet's rollups are recomputed from the raw samples, which the writer stages for that.
    @Test func aLateReadingStraightIntoSamplesIsRecomputed() throws {
        let (url, connection, ids) = try setUp(["p-1", "p-2"], maxGapSeconds: 120)
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        let early = (0..<12).flatMap { step in
            ids.map { sample($0, start.addingTimeInterval(Double(step) * 10), power: 100 + Double(step)) }
        }
        #expect(try write(early, connection) == 24)
        let late = [
            sample(ids[0], start.addingTimeInterval(35), power: 900),
            sample(ids[1], start.addingTimeInterval(125), power: 50),
        ]
        #expect(try write(late, connection) == 2)
        try expectRollupsMatchFromScratch(url, timeZone: "UTC", maxGapSeconds: 120)
        try expectTailsAreNewestSamples(url)
        try Harness.expectTotalsAreThoseOfTheSamples(url)
    }

    /// Each outlet's rollup tail is its newest raw sample (time, power and counter).
    func expectTailsAreNewestSamples(_ url: String) throws {
        let mismatches = try Harness.count(
            url,
            """
            SELECT count(*) FROM (SELECT DISTINCT ON (device_id) device_id, measured_at, power_watts, energy_wh
                                  FROM samples ORDER BY device_id, measured_at DESC) s
            FULL JOIN rollup_tails t USING (device_id)
            WHERE s.measured_at IS DISTINCT FROM t.measured_at OR s.power_watts IS DISTINCT FROM t.power_watts
               OR s.energy_wh IS DISTINCT FROM t.energy_wh
            """)
        #expect(mismatches == 0, "outlets whose rollup tail is not their newest sample: \(mismatches)")
    }

    /// Counts, extremes and times exactly; sums rounded to 6 significant digits.
    static let rollupFingerprintSQL = """
        SELECT md5(string_agg(concat_ws(',', device_id, bucket_start, sample_count, min_power_watts, peak_power_watts,
                                        peak_at, min_voltage_volts, max_voltage_volts, last_power_watts, last_at,
                                        round(energy_wh::numeric, 6), round(average_power_watts::numeric, 6)),
                              ';' ORDER BY t, device_id, bucket_start))
        FROM (SELECT 1 AS t, * FROM power_rollups_minute UNION ALL SELECT 2, * FROM power_rollups_hourly
              UNION ALL SELECT 3, device_id, bucket_start, sample_count, power_sum_watts, power_integral_watt_seconds,
                     covered_seconds, average_power_watts, min_power_watts, peak_power_watts, peak_at, energy_wh,
                     min_voltage_volts, max_voltage_volts, last_power_watts, last_at
              FROM power_rollups_daily) r
        """

    /// Compares each rollup table with the definition computed over all raw samples at once:
    /// segments from consecutive samples (SQL window `lead`), each in the bucket of its start.
    func expectRollupsMatchFromScratch(_ url: String, timeZone: String, maxGapSeconds: Double) throws {
        let tables = [
            ("power_rollups_minute", "bucket_start", "date_trunc('minute', measured_at, 'UTC')"),
            // Europe/Berlin has whole-hour offsets: its hours are UTC hours.
            ("power_rollups_hourly", "bucket_start", "date_trunc('hour', measured_at, 'UTC')"),
            ("power_rollups_daily", "day", "(measured_at AT TIME ZONE '\(timeZone)')::date"),
        ]
        for (table, key, bucket) in tables {
            let mismatches = try Harness.scalar(
                url,
                """
                WITH segments AS (
                    SELECT device_id, measured_at, power_watts, voltage_volts, energy_wh, \(bucket) AS bucket,
                           extract(epoch FROM lead(measured_at) OVER w - measured_at)::float8 AS seconds,
                           lead(power_watts) OVER w AS next_power, lead(energy_wh) OVER w AS next_energy
                    FROM samples WINDOW w AS (PARTITION BY device_id ORDER BY measured_at)
                ), expected AS (
                    SELECT device_id, bucket, count(*) AS sample_count,
                           sum(power_watts) AS power_sum,
                           coalesce(sum((power_watts + next_power) / 2 * seconds) FILTER (WHERE seconds <= \(maxGapSeconds)), 0) AS integral,
                           coalesce(sum(seconds) FILTER (WHERE seconds <= \(maxGapSeconds)), 0) AS covered,
                           min(power_watts) AS min_power, max(power_watts) AS peak,
                           (array_agg(measured_at ORDER BY power_watts DESC, measured_at))[1] AS peak_at,
                           sum(CASE WHEN energy_wh IS NOT NULL AND next_energy IS NOT NULL
                                    THEN CASE WHEN next_energy >= energy_wh THEN next_energy - energy_wh
                                              WHEN energy_wh - next_energy <= greatest(1, energy_wh / 100) THEN 0
                                              ELSE next_energy END
                                    WHEN seconds <= \(maxGapSeconds) THEN (power_watts + next_power) / 2 * seconds / 3600
                                    ELSE 0 END) AS energy,
                           min(voltage_volts) AS min_v, max(voltage_volts) AS max_v,
                           (array_agg(power_watts ORDER BY measured_at DESC))[1] AS last_power, max(measured_at) AS last_at
                    FROM segments GROUP BY 1, 2
                )
                SELECT count(*) || coalesce(' first: ' || min(coalesce(e.device_id, a.device_id) || ' ' || coalesce(e.bucket::text, a.\(key)::text)), '')
                FROM expected e
                FULL JOIN \(table) a ON a.device_id = e.device_id AND a.\(key) = e.bucket
                WHERE e.device_id IS NULL OR a.device_id IS NULL
                   OR e.sample_count <> a.sample_count OR e.min_power <> a.min_power_watts OR e.peak <> a.peak_power_watts
                   OR e.peak_at <> a.peak_at OR e.min_v IS DISTINCT FROM a.min_voltage_volts
                   OR e.max_v IS DISTINCT FROM a.max_voltage_volts OR e.last_power <> a.last_power_watts
                   OR e.last_at <> a.last_at
                   OR abs(e.energy - a.energy_wh) > 1e-9 * greatest(1, abs(e.energy))
                   OR abs(e.integral - a.power_integral_watt_seconds) > 1e-9 * greatest(1, abs(e.integral))
                   OR abs(e.covered - a.covered_seconds) > 1e-9 * greatest(1, e.covered)
                   OR abs(CASE WHEN e.covered > 0 THEN e.integral / e.covered ELSE e.power_sum / e.sample_count END
                          - a.average_power_watts) > 1e-9 * greatest(1, abs(a.average_power_watts))
                """)
            #expect(mismatches == "0", "\(table): rows differing from the from-scratch computation: \(mismatches)")
            #expect(try Harness.count(url, "SELECT count(*) FROM \(table)") > 0)
            // A bucket is stored or open, never both.
            let twice = try Harness.count(
                url, "SELECT count(*) FROM (SELECT FROM \(table) GROUP BY device_id, \(key) HAVING count(*) > 1) d")
            #expect(twice == 0, "\(table): buckets both stored and open: \(twice)")
        }
    }

    // MARK: - Energy

    @Test func constantHundredWattsForOneHourIsHundredWattHours() throws {
        let (url, connection, ids) = try setUp(["lamp"])
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        // A reading every 10 s from 10:00:00 to 11:00:00, out of order, in batches of 50.
        let samples = (0...360).map { sample(ids[0], start.addingTimeInterval(Double($0) * 10), power: 100) }
        try write(samples.reversed(), connection, batchSize: 50)
        let energy = Double(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_daily")) ?? 0
        #expect(abs(energy - 100) <= 0.1)
        let hour = try Harness.scalar(
            url,
            "SELECT round(average_power_watts::numeric, 9) || ' ' || round(energy_wh::numeric, 9) FROM power_rollups_hourly WHERE bucket_start = '2026-06-01T10:00:00Z'"
        )
        #expect(hour == "100.000000000 100.000000000")
    }

    /// A batch carrying samples of more outlets than PostgreSQL's lock table has room for (~14,000
    /// locks with the test stack's max_connections = 200) is stored with its rollups: the rollup
    /// lock of an outlet is one of 1024 stripes, so a transaction holds at most 1024 of them.
    @Test func aBatchOfMoreOutletsThanTheLockTableHoldsIsStored() throws {
        let (url, connection, _) = try setUp([])
        defer { connection.close() }
        let outlets = 40_000
        try DeviceStore(connection: connection).addMany(codes: (0..<outlets).map { "fleet-\($0)" })
        let idRows = try connection.execute("SELECT id FROM devices ORDER BY id")
        let ids = try (0..<idRows.rowCount).compactMap { try idRows.int64(row: $0, column: 0).map(Int32.init) }
        #expect(ids.count == outlets)
        let start = RFC3339.date(from: "2026-06-01T10:00:05Z") ?? Date()
        // The first batch opens every outlet's buckets (the merge), the second adds to them (the
        // short way): both lock all 40,000 outlets.
        for step in 0..<2 {
            let at = start.addingTimeInterval(Double(step) * 10)
            let inserted = try write(ids.map { sample($0, at, power: 100) }, connection, batchSize: outlets)
            #expect(inserted == outlets)
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails") == outlets)
        #expect(
            try Harness.count(url, "SELECT count(*) FROM power_rollups_minute WHERE sample_count = 2") == outlets)
    }

    /// The short way stores the minutes it closes without a conflict check, as none of them can have
    /// a stored row. Should one have it anyway (here planted by hand), the batch is written again
    /// merging into it: nothing is lost and ingest goes on.
    @Test func aClosedMinuteWithAStoredRowAlreadyIsMergedIntoIt() throws {
        let (url, connection, ids) = try setUp(["lamp"])
        defer { connection.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        func write(_ seconds: [Double]) throws -> BatchStore.Outcome {
            let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            batch.add(
                ClassifiedMessage(
                    samples: seconds.map { sample(ids[0], start.addingTimeInterval($0), power: 100, voltage: nil) }),
                of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
            return try store.write(batch, to: connection)
        }
        #expect(try write([5, 15]).rewrittenAfterMinuteConflict == false)
        // Minute 10:00 is the outlet's open minute: planting a stored row for it breaks the invariant.
        try connection.execute(
            """
            INSERT INTO power_rollups_minute_stored (device_id, bucket_start, sample_count, power_sum_watts,
                power_integral_watt_seconds, covered_seconds, min_power_watts, peak_power_watts, peak_at, energy_wh,
                last_power_watts, last_at)
            VALUES ($1, '2026-06-01T10:00:00Z', 1, 40, 0, 0, 40, 40, '2026-06-01T10:00:01Z', 0, 40,
                    '2026-06-01T10:00:01Z')
            """, [ids[0]])
        let closing = try write([65, 75])
        #expect(closing.rewrittenAfterMinuteConflict)
        #expect(closing.inserted == 2)
        #expect(
            try Harness.scalar(
                url,
                "SELECT sample_count || ' ' || min_power_watts || ' ' || peak_power_watts FROM power_rollups_minute WHERE bucket_start = '2026-06-01T10:00:00Z'"
            ) == "3 40 100")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 4)
        // The next minute closes as usual, at the first attempt.
        #expect(try write([125]).rewrittenAfterMinuteConflict == false)
        #expect(
            try Harness.scalar(
                url, "SELECT sample_count FROM power_rollups_minute WHERE bucket_start = '2026-06-01T10:01:00Z'") == "2"
        )
    }

    @Test func counterEnergyTreatsADecreaseAsAResetAndIgnoresTheGapRule() throws {
        let (url, connection, ids) = try setUp(["meter"], maxGapSeconds: 60)
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        let samples = [
            sample(ids[0], start, power: 5, energy: 10),
            sample(ids[0], start.addingTimeInterval(30), power: 5, energy: 20),  // +10
            sample(ids[0], start.addingTimeInterval(60), power: 5, energy: 5),  // reset: +5
            sample(ids[0], start.addingTimeInterval(3_660), power: 5, energy: 15),  // an hour later: +10
            sample(ids[0], start.addingTimeInterval(3_690), power: 100),  // no counter, 30 s: 52.5 W × 30 s
        ]
        try write(samples, connection)
        let energy = Double(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_daily")) ?? 0
        #expect(abs(energy - (25 + 52.5 * 30 / 3_600)) < 1e-9)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute WHERE energy_wh < 0") == 0)
    }

    /// A counter that goes back by a rounding step adds nothing, whichever way the rollups see the segment:
    /// inside a batch (the writer's deltas), across batches (the merge with the stored tail), and in a
    /// rebuild from the raw samples (`outletd_minute_rollups`).
    @Test(arguments: [1, 500])
    func aCounterGoingBackByARoundingStepIsJitterNotAReset(batchSize: Int) throws {
        let (url, connection, ids) = try setUp(["jitter"], maxGapSeconds: 600)
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        let counters = [1_000.00, 999.99, 1_000.50, 1_000.49, 1_001.00, 0.25]  // the last: a reboot, +0.25
        let samples = counters.enumerated().map { index, energy in
            sample(ids[0], start.addingTimeInterval(Double(index) * 40), power: 30, energy: energy)
        }
        try write(samples, connection, batchSize: batchSize)
        let expected = 0.51 + 0.51 + 0.25
        func dayEnergy() throws -> Double {
            Double(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_daily")) ?? -1
        }
        let energy = try dayEnergy()
        #expect(abs(energy - expected) < 1e-9, "\(energy) Wh")
        try expectRollupsMatchFromScratch(url, timeZone: "UTC", maxGapSeconds: 600)
        let store = RollupStore(connection: connection)
        for target in try store.rebuildTargets(since: start.addingTimeInterval(-60), code: "jitter") {
            try store.rebuild(target)
        }
        let rebuilt = try dayEnergy()
        #expect(abs(rebuilt - expected) < 1e-9, "after a rebuild: \(rebuilt) Wh")
    }

    @Test func aGapLongerThanTheMaximumAddsNoEnergyAndALateReadingSplitsIt() throws {
        let (url, connection, ids) = try setUp(["gap"], maxGapSeconds: 600)
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        try write(
            [sample(ids[0], start, power: 360), sample(ids[0], start.addingTimeInterval(1_200), power: 360)], connection
        )
        #expect(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_hourly") == "0")
        // A late reading in the middle makes two 10-minute segments: 2 × 360 W × 600 s = 120 Wh.
        try write([sample(ids[0], start.addingTimeInterval(600), power: 360)], connection)
        #expect(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_hourly") == "120")
        #expect(try Harness.scalar(url, "SELECT sum(energy_wh) FROM power_rollups_minute") == "120")
    }

    // MARK: - Days in local time

    @Test func berlinDaysFollowDaylightSavingTime() throws {
        let (url, connection, ids) = try setUp(["heater"], timeZone: "Europe/Berlin", maxGapSeconds: 600)
        defer { connection.close() }
        // 60 W, a reading every 5 minutes, around the two DST changes of 2026.
        for (from, to) in [
            ("2026-03-28T20:00:00Z", "2026-03-30T00:00:00Z"), ("2026-10-24T20:00:00Z", "2026-10-26T00:00:00Z"),
        ] {
            let start = RFC3339.date(from: from) ?? Date()
            let end = RFC3339.date(from: to) ?? Date()
            let samples = stride(from: 0.0, through: end.timeIntervalSince(start), by: 300).map {
                sample(ids[0], start.addingTimeInterval($0), power: 60)
            }
            try write(samples, connection, batchSize: 97)
        }
        let days = try Harness.scalar(
            url,
            """
            SELECT string_agg(day || ' ' || to_char(bucket_start AT TIME ZONE 'UTC', 'HH24:MI') || ' ' || sample_count
                              || ' ' || round(energy_wh::numeric, 6), '; ' ORDER BY day)
            FROM power_rollups_daily
            """)
        // 29 March has 23 hours (276 readings, 1380 Wh), 25 October 25 hours (300, 1500 Wh); each
        // local midnight is 23:00 UTC in winter and 22:00 UTC in summer.
        #expect(
            days == "2026-03-28 23:00 36 180.000000; 2026-03-29 23:00 276 1380.000000; "
                + "2026-03-30 22:00 25 120.000000; 2026-10-24 22:00 24 120.000000; "
                + "2026-10-25 22:00 300 1500.000000; 2026-10-26 23:00 13 60.000000")
        // The repeated hour of 25 October is two hourly buckets.
        #expect(
            try Harness.count(
                url,
                "SELECT count(*) FROM power_rollups_hourly WHERE bucket_start >= '2026-10-24T22:00Z' AND bucket_start < '2026-10-25T23:00Z'"
            ) == 25)
    }

    @Test func halfHourZonesGetHoursStartingAtHalfPastUTC() throws {
        let (url, connection, ids) = try setUp(["fan"], timeZone: "Asia/Kolkata")
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        try write((0..<12).map { sample(ids[0], start.addingTimeInterval(Double($0) * 600), power: 10) }, connection)
        #expect(
            try Harness.scalar(
                url,
                "SELECT string_agg(to_char(bucket_start AT TIME ZONE 'UTC', 'HH24:MI') || '=' || sample_count, ',' ORDER BY bucket_start) FROM power_rollups_hourly"
            ) == "09:30=3,10:30=6,11:30=3")
        #expect(try Harness.scalar(url, "SELECT day FROM power_rollups_daily") == "2026-06-01")
    }

    // MARK: - Partitions and retention

    @Test func retentionDropsOnlyOldPartitionsAndOldMinuteRollups() throws {
        let (url, connection, ids) = try setUp(["old"])
        defer { connection.close() }
        let now = RFC3339.date(from: "2026-06-30T12:00:00Z") ?? Date()
        // Readings 40, 31, 29 and 0 days ago: the writer creates their partitions on demand.
        let ages = [40.0, 31, 29, 0]
        try write(ages.map { sample(ids[0], now.addingTimeInterval(-$0 * 86_400), power: 50) }, connection)
        #expect(try Harness.count(url, "SELECT count(*) FROM sample_partitions") >= 4)
        var retention = OutletdConfiguration.RetentionSettings()
        retention.rawDays = 30
        retention.minuteRollupDays = 35
        let outcome = try RollupStore(connection: connection).maintain(retention, now: now)
        #expect(outcome.partitionsDropped.contains("samples_p20260521"))  // 40 days old
        #expect(outcome.partitionsDropped.contains("samples_p20260530"))  // 31 days old
        #expect(!outcome.partitionsDropped.contains("samples_p20260601"))  // 29 days old
        #expect(outcome.minuteRowsDeleted == 1)
        #expect(outcome.partitionsCreated >= 3)  // tomorrow and after
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 2)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute") == 3)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_hourly") == 4)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_daily") == 4)
        #expect(try Harness.count(url, "SELECT count(*) FROM sample_partitions WHERE day = '2026-07-03'") == 1)
        // A rebuild from before the oldest partition leaves the older minutes alone.
        let rollups = RollupStore(connection: connection)
        for target in try rollups.rebuildTargets(since: RFC3339.date(from: "2000-01-01T00:00:00Z") ?? now, code: "old")
        { try rollups.rebuild(target) }
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute") == 3)
    }

    @Test func anOpenMinuteOlderThanItsRetentionGoesAndItsHourAndDayStay() throws {
        let (url, connection, ids) = try setUp(["quiet"])
        defer { connection.close() }
        let now = RFC3339.date(from: "2026-06-30T12:00:00Z") ?? Date()
        // One reading 40 days ago: its minute, hour and day are open in the outlet's tail row.
        try write([sample(ids[0], now.addingTimeInterval(-40 * 86_400), power: 50)], connection)
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails WHERE open_minute_start IS NOT NULL") == 1)
        var retention = OutletdConfiguration.RetentionSettings()
        retention.rawDays = 60
        retention.minuteRollupDays = 35
        let outcome = try RollupStore(connection: connection).maintain(retention, now: now)
        #expect(outcome.minuteRowsDeleted == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute") == 0)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_hourly") == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_daily") == 1)
        // The tail stays (its partition does), and the next reading merges from it.
        try write([sample(ids[0], now.addingTimeInterval(-40 * 86_400 + 30), power: 70)], connection)
        try expectTailsAreNewestSamples(url)
        #expect(try Harness.scalar(url, "SELECT sample_count FROM power_rollups_hourly") == "2")
    }

    @Test func aTailGoesWithItsPartitionAndWithItsOutlet() throws {
        let (url, connection, ids) = try setUp(["silent", "recent"])
        defer { connection.close() }
        let now = RFC3339.date(from: "2026-06-30T12:00:00Z") ?? Date()
        // Counter 10 Wh: "silent" 31 days ago (its partition goes), "recent" 29 days ago (stays).
        try write(
            [
                sample(ids[0], now.addingTimeInterval(-31 * 86_400), power: 50, energy: 10),
                sample(ids[1], now.addingTimeInterval(-29 * 86_400), power: 50, energy: 10),
            ], connection)
        var retention = OutletdConfiguration.RetentionSettings()
        retention.rawDays = 30
        retention.minuteRollupDays = 35
        _ = try RollupStore(connection: connection).maintain(retention, now: now)
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails") == 1)
        // The silent outlet's open minute, hour and day were written to the stored tables first.
        #expect(
            try Harness.count(url, "SELECT count(*) FROM power_rollups_daily_stored WHERE device_id = \(ids[0])") == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM power_rollups_minute WHERE device_id = \(ids[0])") == 1)
        // Now both report 30 Wh: only "recent" still has the sample the counter difference starts at.
        try write(
            [sample(ids[0], now, power: 50, energy: 30), sample(ids[1], now, power: 50, energy: 30)], connection)
        #expect(
            try Harness.scalar(
                url,
                "SELECT string_agg(device_id || ':' || energy_wh, ' ' ORDER BY device_id) FROM power_rollups_daily WHERE energy_wh > 0"
            ) == "\(ids[1]):20")
        try expectTailsAreNewestSamples(url)
        // An outlet removed from the registry takes its tail with it.
        _ = try DeviceStore(connection: connection).remove("recent")
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails WHERE device_id = \(ids[1])") == 0)
    }

    /// `rollups.maintain: false`: batches store samples without touching the rollups, drop their
    /// outlets' tails and note from when the rollups miss samples: the earliest dropped tail (its
    /// segment to the next sample belongs to its minute), or an earlier late reading. A rebuild of
    /// every outlet from that note restates the rollups exactly and clears it.
    @Test func rollupsNotMaintainedMissTheSamplesUntilARebuildFromTheNotedTime() throws {
        let (url, connection, ids) = try setUp(["plain", "counter"])
        defer { connection.close() }
        let start = RFC3339.date(from: "2026-06-01T10:00:00Z") ?? Date()
        func readings(_ seconds: StrideThrough<Int>) -> [DeviceSample] {
            seconds.flatMap { second in
                let at = start.addingTimeInterval(Double(second))
                return [
                    sample(ids[0], at, power: 100 + Double(second % 70)),
                    sample(ids[1], at, power: 60, energy: 1_000 + Double(second) / 60),
                ]
            }
        }
        // Maintained up to 10:05:00.
        try write(readings(stride(from: 0, through: 300, by: 10)), connection, batchSize: 7)
        let rollups = RollupStore(connection: connection)
        let maintained = try Harness.scalar(url, Self.rollupFingerprintSQL)

        // Turned off: the open buckets go to the stored tables, and the rollups read the same.
        try rollups.stopMaintaining()
        #expect(try Harness.scalar(url, Self.rollupFingerprintSQL) == maintained)
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails WHERE open_day_start IS NULL") == 2)
        #expect(try rollups.unmaintainedSince() == nil)

        // From 10:06:10 without rollups: the note is the tails' 10:05:00, then a late reading's
        // 10:02:05.5 (rounded down to the second).
        let unmaintained = try PostgresConnection(connectionString: url)
        defer { unmaintained.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3, maintainsRollups: false)
        try store.prepareSession(unmaintained)
        let late = sample(ids[0], start.addingTimeInterval(125.5), power: 900)
        for (chunk, noted) in [
            (readings(stride(from: 370, through: 450, by: 10)), 300.0),
            (readings(stride(from: 460, through: 600, by: 10)) + [late], 125),
        ] {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            batch.add(ClassifiedMessage(samples: chunk), of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
            #expect(try store.write(batch, to: unmaintained).inserted == chunk.count)
            #expect(try rollups.unmaintainedSince() == start.addingTimeInterval(noted))
        }
        #expect(try Harness.scalar(url, Self.rollupFingerprintSQL) == maintained)
        #expect(try Harness.count(url, "SELECT count(*) FROM rollup_tails") == 0)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 2 * 55 + 1)

        // Maintained again, then rebuilt: a rebuild from later than the note leaves it.
        try write(readings(stride(from: 610, through: 720, by: 10)), connection, batchSize: 7)
        let since = try rollups.unmaintainedSince() ?? start
        for target in try rollups.rebuildTargets(since: since, code: nil) { try rollups.rebuild(target) }
        #expect(try rollups.rebuilt(since: since.addingTimeInterval(1)) == false)
        #expect(try rollups.rebuilt(since: since))
        #expect(try rollups.unmaintainedSince() == nil)
        try expectRollupsMatchFromScratch(url, timeZone: "UTC", maxGapSeconds: 600)
        try expectTailsAreNewestSamples(url)
    }

    @Test func migrationKeepsExistingSamplesAndComputesTheirRollups() throws {
        let url = try TestStack.shared().createDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Migrator(migrations: Migration.all.filter { $0.version == 1 }).migrate(connection)
        try connection.execute("INSERT INTO devices (code) VALUES ('legacy')")
        try connection.execute(
            """
            INSERT INTO samples (device_id, measured_at, received_at, power_watts)
            SELECT 1, t, t, 100 FROM generate_series(timestamptz '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', '10 s') AS t
            """)
        try Migrator().migrate(connection)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 361)
        #expect(try Harness.scalar(url, "SELECT relkind FROM pg_class WHERE relname = 'samples_stored'") == "p")
        #expect(
            try Harness.scalar(url, "SELECT round(sum(energy_wh)::numeric, 6) FROM power_rollups_daily") == "100.000000"
        )
        try expectTailsAreNewestSamples(url)
    }

    // MARK: - Views and stats

    @Test func overviewAndStatsReadTheRollups() throws {
        let (url, connection, ids) = try setUp(["desk", "tv"])
        defer { connection.close() }
        let now = Date()
        // desk: 200 W for the last 30 minutes, one reading a minute.
        try write((0...30).map { sample(ids[0], now.addingTimeInterval(-Double($0) * 60), power: 200) }, connection)
        let overview = try Harness.scalar(
            url,
            "SELECT code || ' ' || last_power_watts || ' ' || coalesce(online::text, 'null') || ' ' || round(energy_month_wh::numeric, 3) FROM outlet_overview WHERE code = 'desk'"
        )
        // 30 one-minute segments of 200 W, unless the local month began within the last half hour.
        #expect(overview.hasPrefix("desk 200 null"))
        let top = try Harness.scalar(url, "SELECT code FROM outlet_top_consumers ORDER BY energy_7d_wh DESC LIMIT 1")
        #expect(top == "desk")
        let stats = try PowerStatsQuery(connection: connection).stats(
            code: "desk", since: now.addingTimeInterval(-86_400))
        #expect(stats?.sampleCount == 31)
        #expect(stats?.averagePowerWatts == 200)
        #expect(stats?.peakPowerWatts == 200)
        #expect(abs((stats?.energyWattHours ?? 0) - 100) < 1e-9)
        #expect(try PowerStatsQuery(connection: connection).stats(code: "nope", since: now) == nil)
        // The dashboards' 24-hour query never reads a raw partition.
        let plan = try connection.execute(
            "EXPLAIN " + PowerStatsQuery.averageAndPeakSQL, ["desk", now.addingTimeInterval(-86_400)])
        let planText = (0..<plan.rowCount).compactMap { plan[$0, 0] }.joined(separator: "\n")
        #expect(!planText.contains("samples"), "\(planText)")
    }

    @Test func barChartScalesToTheLargestHour() {
        let start = Date(timeIntervalSince1970: 0)
        let hours = [50.0, 100, 0].enumerated().map {
            PowerStats.Hour(
                startsAt: start.addingTimeInterval(Double($0.offset) * 3_600), averagePowerWatts: $0.element,
                peakPowerWatts: $0.element, energyWattHours: $0.element)
        }
        let chart = PowerBarChart.render(hours, width: 10) { "h\(Int($0.timeIntervalSince1970 / 3_600))" }
        #expect(chart == "h0  █████ 50.0 W\nh1  ██████████ 100.0 W\nh2   0.0 W")
        #expect(PowerBarChart.render([], label: { _ in "" }) == "(no readings in this period)")
    }

    @Test func timeArgumentsAreDurationsOrTimestamps() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(TimeArgument.parse("24h", now: now) == now.addingTimeInterval(-86_400))
        #expect(TimeArgument.parse("90m", now: now) == now.addingTimeInterval(-5_400))
        #expect(TimeArgument.parse("7d", now: now) == now.addingTimeInterval(-604_800))
        #expect(TimeArgument.parse("1970-01-01T00:00:10Z", now: now) == Date(timeIntervalSince1970: 10))
        #expect(TimeArgument.parse("yesterday", now: now) == nil)
        #expect(TimeArgument.parse("-3h", now: now) == nil)
    }
}
