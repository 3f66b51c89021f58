import Foundation
import MessageSpool
import Postgres
import Runtime
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

@testable import Compaction
@testable import Config
@testable import Storage
@testable import WritePath

/// Compaction of settled days (migration 26, Sources/Compaction): a day written by the real writer reads the same
/// through `samples` in both forms, bit for bit, and so do the totals' and rollups' recomputations; late readings
/// and retransmissions across the boundary are stored once; a kill of outletd or PostgreSQL in the middle loses and
/// doubles nothing; two instances never compact one day twice.
@Suite(.serialized) struct CompactedDayTests {
    /// 2026-06-27, a settled day.
    static let day = "2026-06-27"
    static let dayStart = Date(timeIntervalSince1970: 1_782_518_400)

    /// A realistic day of one outlet, as a protocol's decoder makes readings: the firmware's decimals parsed by
    /// the JSON parser, its clock (or none), noise, an appliance switching on and off (long runs of zeros), gaps,
    /// an energy counter.
    static func readings(outlet: Int, every seconds: Double = 10, from start: Date = dayStart, count: Int = 8_640)
        -> [Reading]
    {
        var random = SeededRandom(seed: UInt64(outlet) &* 0x9E37_79B9 &+ 1)
        let shape = outlet % 6
        var energy = Double(outlet) * 1_234.5
        var result: [Reading] = []
        var on = true
        for index in 0..<count {
            if index % 360 == 0 { on = random.next() % 3 != 0 }
            if shape == 2, index % 1_000 < 30 { continue }  // a Shelly offline for five minutes
            let jitter = Double(random.next() % 400) / 1_000
            let measured = start.addingTimeInterval(Double(index) * seconds + (shape == 0 ? jitter : 0))
            let received = measured.addingTimeInterval(Double(2_000 + random.next() % 40_000) / 1_000_000)
            let volts = 229.0 + Double(random.next() % 400) / 100
            let watts = on ? 90 + Double(random.next() % 2_000) / 100 : 0
            energy += watts * seconds / 3_600
            func parsed(_ value: Double, _ decimals: Int) -> Double {
                JSONParser.parseNumber(String(format: "%.\(decimals)f", value)) ?? value
            }
            let reading: Reading
            switch shape {
            case 0:  // native: device time in milliseconds, every value, a sequence number
                reading = Reading(
                    measuredAt: measured.roundedToMilliseconds, receivedAt: received.roundedToMicroseconds,
                    deviceTime: measured.roundedToMilliseconds, voltageVolts: parsed(volts, 2),
                    currentAmperes: parsed(watts / volts, 3), powerWatts: parsed(watts, 2),
                    powerFactor: on ? parsed(0.9 + Double(random.next() % 100) / 1_000, 2) : 0,
                    energyWattHours: parsed(energy, 3), sequence: Int64(index))
            case 1:  // Tasmota: a clock in seconds, whole volts and watts, Total in kWh
                reading = Reading(
                    measuredAt: measured, receivedAt: received.roundedToMicroseconds, deviceTime: measured,
                    voltageVolts: parsed(volts, 0), currentAmperes: parsed(watts / volts, 3),
                    powerWatts: parsed(watts, 0), powerFactor: on ? parsed(0.95, 2) : 0,
                    energyWattHours: parsed(energy / 1_000, 3) * 1_000)
            case 2:  // Shelly Gen1: no clock, power alone with two decimals, a counter in watt-minutes
                reading = Reading(
                    measuredAt: received.roundedToMicroseconds, receivedAt: received.roundedToMicroseconds,
                    powerWatts: parsed(watts, 2), energyWattHours: (energy * 60).rounded() / 60)
            case 3:  // Shelly Gen2: a clock in seconds, one decimal
                reading = Reading(
                    measuredAt: measured, receivedAt: received.roundedToMicroseconds, deviceTime: measured,
                    voltageVolts: parsed(volts, 1), currentAmperes: parsed(watts / volts, 3),
                    powerWatts: parsed(watts, 1), energyWattHours: parsed(energy, 3))
            case 4:  // Zigbee2MQTT: no clock, whole watts, kWh with two decimals
                reading = Reading(
                    measuredAt: received.roundedToMicroseconds, receivedAt: received.roundedToMicroseconds,
                    voltageVolts: parsed(volts, 0), currentAmperes: parsed(watts / volts, 2),
                    powerWatts: parsed(watts, 0), energyWattHours: parsed(energy / 1_000, 2) * 1_000)
            default:  // ESPHome: floats as its sensors print them, power computed as volts × amperes
                let amperes = parsed(watts / volts, 3)
                reading = Reading(
                    measuredAt: received.roundedToMicroseconds, receivedAt: received.roundedToMicroseconds,
                    voltageVolts: parsed(volts, 1), currentAmperes: amperes, powerWatts: parsed(volts, 1) * amperes)
            }
            result.append(reading)
        }
        return result
    }

    /// A migrated database with `outlets` outlets and their day written by the writer (time-ordered batches of
    /// every outlet, as ingest makes them).
    static func dayWritten(outlets: Int, count: Int = 8_640, url: String? = nil) throws -> (String, [Int32]) {
        let url = try url ?? Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let devices = DeviceStore(connection: connection)
        let ids = try (0..<outlets).map { try devices.add(.init(code: "day-\($0)")).id }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        try store.prepareSession(connection)
        let all = ids.enumerated().map { index, _ in readings(outlet: index, count: count) }
        let message = RawMessage(topic: "t", payload: [], receivedAt: dayStart)
        let perBatch = 720
        for start in stride(from: 0, to: count, by: perBatch) {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            for (index, id) in ids.enumerated() {
                let slice = all[index].dropFirst(start).prefix(perBatch)
                guard !slice.isEmpty else { continue }
                batch.add(
                    ClassifiedMessage(samples: slice.map { DeviceSample(deviceID: id, reading: $0) }), of: message)
            }
            _ = try store.write(batch, to: connection)
        }
        return (url, ids)
    }

    /// Every reading as text exact to the bit: times in microseconds, doubles by float8send.
    static let snapshotColumns = """
        device_id, measured_at, received_at, device_time, float8send(voltage_volts) AS v, float8send(current_amperes) AS a,
        float8send(power_watts) AS p, float8send(power_factor) AS pf, float8send(energy_wh) AS e, seq
        """

    static func snapshot(_ url: String, into table: String) throws {
        _ = try Harness.scalar(url, "CREATE TABLE \(table) AS SELECT \(snapshotColumns) FROM samples")
    }

    /// Readings in `samples` and not in `table`, and in `table` and not in `samples` (each copy counts).
    static func differences(_ url: String, from table: String) throws -> Int {
        try Harness.count(
            url,
            """
            SELECT count(*) FROM ((SELECT \(snapshotColumns) FROM samples EXCEPT ALL SELECT * FROM \(table))
                                  UNION ALL (SELECT * FROM \(table) EXCEPT ALL SELECT \(snapshotColumns) FROM samples)) d
            """)
    }

    /// The stored rollups, to compare with what a rebuild from `samples` makes.
    static func snapshotRollups(_ url: String, into prefix: String) throws {
        for level in ["minute", "hourly", "daily"] {
            _ = try Harness.scalar(
                url, "CREATE TABLE \(prefix)_\(level) AS SELECT * FROM power_rollups_\(level)")
        }
    }

    static func rollupDifferences(_ url: String, from prefix: String) throws -> Int {
        try ["minute", "hourly", "daily"].map { level in
            try Harness.count(
                url,
                """
                SELECT count(*) FROM ((SELECT * FROM power_rollups_\(level) EXCEPT ALL SELECT * FROM \(prefix)_\(level))
                    UNION ALL (SELECT * FROM \(prefix)_\(level) EXCEPT ALL SELECT * FROM power_rollups_\(level))) d
                """)
        }.reduce(0, +)
    }

    /// The first rows that differ, each side, for the failure's message.
    static func rollupDifference(_ url: String, from prefix: String) throws -> String {
        try ["minute", "hourly", "daily"].map { level in
            try Harness.scalar(
                url,
                """
                SELECT '\(level): ' || coalesce(string_agg(d::text, ' | '), '') FROM (
                    (SELECT 'now', * FROM power_rollups_\(level) EXCEPT ALL SELECT 'now', * FROM \(prefix)_\(level) LIMIT 2)
                    UNION ALL (SELECT 'was', * FROM \(prefix)_\(level) EXCEPT ALL SELECT 'was', * FROM power_rollups_\(level) LIMIT 2)) d
                """) ?? ""
        }.joined(separator: "\n")
    }

    /// Every outlet's rollups of the day recomputed from `samples` (the rebuild's SQL).
    static func rebuildRollups(_ url: String, _ ids: [Int32]) throws {
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        for id in ids {
            try connection.transaction {
                try connection.execute(
                    "SELECT outletd_rollups_rebuild($1, $2, $3)",
                    [id, dayStart, dayStart.addingTimeInterval(86_400)])
            }
        }
    }

    @Test func bothFormsOfADayAnswerTheSame() throws {
        let (url, ids) = try Self.dayWritten(outlets: 12)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Self.snapshot(url, into: "row_form")
        try Self.rebuildRollups(url, ids)
        try Self.snapshotRollups(url, into: "row_rollups")
        let hour =
            "SELECT \(Self.snapshotColumns) FROM samples_between(ARRAY[\(ids[3])], "
            + "'\(Self.day) 13:00+00', '\(Self.day) 14:00+00') ORDER BY measured_at"
        let hourBefore = try Harness.scalar(url, "SELECT md5(string_agg(x::text, '|')) FROM (\(hour)) x")
        let readings = try Harness.count(url, "SELECT count(*) FROM samples")

        let outcome = try CompactionStore(connection: connection).compact(day: Self.day)
        #expect(outcome.readings == readings && outcome.outlets == 12 && outcome.leftInRows == 0, "\(outcome)")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_rows") == 0)
        #expect(try Self.differences(url, from: "row_form") == 0)
        #expect(try Harness.scalar(url, "SELECT md5(string_agg(x::text, '|')) FROM (\(hour)) x") == hourBefore)
        // The totals and the rollups, recomputed from the compact form, are what the row form gave.
        try Harness.expectTotalsAreThoseOfTheSamples(url, "compact")
        try Self.rebuildRollups(url, ids)
        let differences = try Self.rollupDifferences(url, from: "row_rollups")
        let differing = differences > 0 ? try Self.rollupDifference(url, from: "row_rollups") : ""
        #expect(differences == 0, "\(differing)")
        let status = try CompactionStore(connection: connection).status().first { $0.day == Self.day }
        #expect(status?.form == "compact" && status?.compactReadings == Int64(readings))
        #expect((status?.compactBytes ?? 0) < Int64(readings) * 8, "\(String(describing: status))")

        // Back to rows and compact again: the same readings every time.
        #expect(try CompactionStore(connection: connection).expand(day: Self.day) == readings)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_compact") == 0)
        #expect(try Self.differences(url, from: "row_form") == 0)
        _ = try CompactionStore(connection: connection).compact(day: Self.day)
        #expect(try Self.differences(url, from: "row_form") == 0)
    }

    @Test func lateReadingsAndRetransmissionsAcrossTheBoundaryAreStoredOnce() throws {
        let (url, ids) = try Self.dayWritten(outlets: 4, count: 2_000)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        _ = try CompactionStore(connection: connection).compact(day: Self.day)
        try Self.snapshot(url, into: "compacted")
        let before = try Harness.count(url, "SELECT count(*) FROM samples")
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        try store.prepareSession(connection)
        let message = RawMessage(topic: "t", payload: [], receivedAt: Self.dayStart)
        // Retransmissions of compacted readings, late readings between them (5 s after), and readings of today.
        let retransmitted = Array(Self.readings(outlet: 1, count: 2_000).prefix(300))
        let late = (0..<40).map { index in
            Reading(
                measuredAt: Self.dayStart.addingTimeInterval(Double(index) * 10 + 5), receivedAt: Date(),
                powerWatts: Double(index))
        }
        let today = (0..<30).map { index in
            Reading(
                measuredAt: Date().addingTimeInterval(Double(-index)).roundedToMicroseconds,
                receivedAt: Date().roundedToMicroseconds, powerWatts: 7)
        }
        var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        batch.add(
            ClassifiedMessage(
                samples: retransmitted.map { DeviceSample(deviceID: ids[1], reading: $0) }
                    + late.map { DeviceSample(deviceID: ids[2], reading: $0) }
                    + today.map { DeviceSample(deviceID: ids[3], reading: $0) }), of: message)
        try connection.execute(
            "SELECT outletd_ensure_sample_partitions(ARRAY[(extract(epoch FROM now()) / 86400)::int])")
        #expect(try store.write(batch, to: connection) == .init(inserted: 70, duplicates: 300))
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == before + 70)
        #expect(try Harness.count(url, "SELECT count(*) - count(DISTINCT (device_id, measured_at)) FROM samples") == 0)
        try Harness.expectTotalsAreThoseOfTheSamples(url, "after late readings")
        // The same again: all duplicates now, the late ones in row form and the rest compact.
        #expect(try store.write(batch, to: connection) == .init(inserted: 0, duplicates: 370))
        // The next compaction folds the late ones in; they stay duplicates after.
        #expect(try CompactionStore(connection: connection).daysDue(afterHours: 24) == [Self.day])
        _ = try CompactionStore(connection: connection).compact(day: Self.day)
        #expect(
            try Harness.count(url, "SELECT count(*) FROM samples_rows WHERE measured_at < '\(Self.day)'::date + 1") == 0
        )
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == before + 70)
        #expect(try store.write(batch, to: connection) == .init(inserted: 0, duplicates: 370))
        try Harness.expectTotalsAreThoseOfTheSamples(url, "after folding in")
        // Into the view: a compacted reading is refused as a stored one is; deleting one takes its day back.
        let one = try #require(retransmitted.first)
        #expect(throws: PostgresError.self) {
            try connection.execute(
                "INSERT INTO samples (device_id, measured_at, received_at, power_watts) VALUES ($1, $2, $2, 1)",
                [ids[1], one.measuredAt])
        }
        let deleted = try connection.execute(
            "DELETE FROM samples WHERE device_id = $1 AND measured_at = $2", [ids[1], one.measuredAt])
        #expect(deleted.affectedRows == 1)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == before + 69)
    }

    /// Between a chunk and the end of the pass, an outlet's readings are in its pending row and in the partition:
    /// `samples` reads them once, a retransmission is a duplicate, and a late reading marks the row touched, so the
    /// end packs it in. The partition is truncated at the end, not emptied row by row.
    @Test func readingsArrivingDuringAPassAreStoredOnce() throws {
        let (url, ids) = try Self.dayWritten(outlets: 4, count: 2_000)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try Self.snapshot(url, into: "row_form")
        let before = try Harness.count(url, "SELECT count(*) FROM samples")
        let writer = try PostgresConnection(connectionString: url)
        defer { writer.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        try store.prepareSession(writer)
        let retransmitted = try #require(Self.readings(outlet: 0, count: 2_000).first)
        let late = Reading(measuredAt: Self.dayStart.addingTimeInterval(5), receivedAt: Date(), powerWatts: 12.5)
        var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        batch.add(
            ClassifiedMessage(samples: [retransmitted, late].map { DeviceSample(deviceID: ids[0], reading: $0) }),
            of: RawMessage(topic: "t", payload: [], receivedAt: Self.dayStart))
        var during: [String] = []
        let outcome = try CompactionStore(connection: connection).compact(
            day: Self.day, chunkOutlets: 1,
            progress: { progress in
                guard progress.outlets == 1, during.isEmpty else { return }
                do {
                    let pending = try Harness.count(url, "SELECT count(*) FROM samples_compact WHERE pending")
                    let readings = try Harness.count(url, "SELECT count(*) FROM samples")
                    let written = try store.write(batch, to: writer)
                    let after = try Harness.count(url, "SELECT count(*) FROM samples")
                    let touched = try Harness.count(url, "SELECT count(*) FROM samples_compact WHERE touched")
                    during = ["\(pending) \(readings) \(written.inserted) \(written.duplicates) \(after) \(touched)"]
                } catch {
                    during = ["\(error)"]
                }
            })
        // One pending row, every reading once; the batch: one new, one duplicate; the pending row touched.
        #expect(during == ["1 \(before) 1 1 \(before + 1) 1"])
        #expect(outcome.leftInRows == 0 && outcome.readings >= before + 1, "\(outcome)")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_compact WHERE pending OR touched") == 0)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_compact") == 4)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_rows") == 0)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == before + 1)
        _ = try Harness.scalar(
            url,
            "INSERT INTO row_form SELECT \(Self.snapshotColumns) FROM samples WHERE device_id = \(ids[0]) "
                + "AND measured_at = '\(Self.day) 00:00:05+00'")
        #expect(try Self.differences(url, from: "row_form") == 0)
        #expect(try store.write(batch, to: writer) == .init(inserted: 0, duplicates: 2))
        try Harness.expectTotalsAreThoseOfTheSamples(url, "after the pass")
    }

    /// The writer stores how long each batch's oldest message waited; a pass waits between chunks while the batches
    /// an instance committed in the last seconds waited longer than the pacer's yield, and goes on once they do not.
    @Test func aPassWaitsWhileIngestIsBehind() throws {
        let (url, ids) = try Self.dayWritten(outlets: 3, count: 200)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let writer = try PostgresConnection(connectionString: url)
        defer { writer.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        try store.prepareSession(writer)
        var offset: Int64 = 0
        func writeBatch(waited seconds: Double) throws {
            offset += 100
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            let reading = Reading(measuredAt: Date(), receivedAt: Date(), powerWatts: 5)
            batch.add(
                ClassifiedMessage(samples: [DeviceSample(deviceID: ids[1], reading: reading)]),
                of: RawMessage(topic: "t", payload: [], receivedAt: Date()))
            let checkpoint = BatchStore.Checkpoint(
                instanceID: "busy", spool: SpoolCheckpoint(spoolID: "s", position: .init(segment: 0, offset: offset)),
                oldestReceivedAt: Date().addingTimeInterval(-seconds))
            _ = try store.write(batch, to: writer, checkpoint: checkpoint)
        }
        let dayReadings = try Harness.count(url, "SELECT count(*) FROM samples")
        let compaction = CompactionStore(connection: connection)
        #expect(try compaction.ingestWait() == 0)
        try writeBatch(waited: 2)
        let behind = try compaction.ingestWait()
        #expect(behind >= 2 && behind < 3, "\(behind)")
        // Another instance, on time, does not hide the one behind.
        _ = try Harness.scalar(
            url,
            "INSERT INTO ingest_checkpoints VALUES ('on-time', 's', 0, 0, now(), 0.01) RETURNING 1")
        #expect(try compaction.ingestWait() >= 2)

        let pacer = CompactionPacer(duty: 1, yieldSeconds: 0.5, recheckSeconds: 0.05)
        var seen: [Double] = []
        var waited = 0.0
        let outcome = try compaction.compact(
            day: Self.day, chunkOutlets: 1,
            pause: { busy in
                waited += try pacer.rest(
                    afterBusy: busy,
                    ingestWait: {
                        let wait = try compaction.ingestWait()
                        seen.append(wait)
                        return wait
                    },
                    sleep: { _ in
                        // Ingest catches up: its next batch waited 10 ms.
                        if seen.count == 2 { try? writeBatch(waited: 0.01) }
                        return false
                    })
            })
        #expect(outcome.readings == dayReadings && outcome.leftInRows == 0, "\(outcome)")
        #expect(seen.count >= 4 && seen[0] >= 2 && seen[1] >= 2 && seen.dropFirst(2).allSatisfy { $0 < 0.5 }, "\(seen)")
        #expect(abs(waited - 0.1) < 1e-9)
        // A batch older than the window counts no more: that instance has gone quiet.
        try writeBatch(waited: 5)
        _ = try Harness.scalar(
            url, "UPDATE ingest_checkpoints SET updated_at = now() - interval '11 seconds' RETURNING 1")
        #expect(try compaction.ingestWait() == 0)
    }

    @Test func twoInstancesNeverCompactADayTwice() async throws {
        let (url, _) = try Self.dayWritten(outlets: 16, count: 2_000)
        try Self.snapshot(url, into: "row_form")
        let readings = try Harness.count(url, "SELECT count(*) FROM samples")
        // An instance holding the day's lock: the other skips the day.
        let holder = try PostgresConnection(connectionString: url)
        defer { holder.close() }
        try holder.execute("SELECT pg_advisory_lock($1, $2)", [AdvisoryLock.compaction, Int32(20_631)])
        let other = try PostgresConnection(connectionString: url)
        defer { other.close() }
        #expect(try CompactionStore(connection: other).compact(day: Self.day).skipped)
        try holder.execute("SELECT pg_advisory_unlock_all()")
        // Two at once, chunk by chunk: between them every reading is packed once.
        let outcomes = try await withThrowingTaskGroup(of: CompactionStore.Outcome.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try await Blocking.run("compaction-test") {
                        let connection = try PostgresConnection(connectionString: url)
                        defer { connection.close() }
                        return try CompactionStore(connection: connection).compact(day: Self.day, chunkOutlets: 1)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.map(\.readings).reduce(0, +) == readings, "\(outcomes)")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_compact") == 16)
        #expect(try Self.differences(url, from: "row_form") == 0)
    }

    @Test func killingOutletdOrPostgreSQLDuringCompactionLosesAndDoublesNothing() async throws {
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        let (url, _) = try Self.dayWritten(outlets: 30, count: 4_000, url: Harness.migratedDatabase(on: stack))
        try Self.snapshot(url, into: "row_form")
        let outletd = try OutletdProcess.executable()
        func compactInProcess() throws -> BackgroundProcess {
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OUTLETD_") }
            environment["OUTLETD_DATABASE_URL"] = url
            environment["OUTLETD_RETENTION_COMPACT_CHUNK_OUTLETS"] = "1"
            return try BackgroundProcess(
                [outletd, "storage", "compact", Self.day], environment: environment,
                logPath: "\(stack.directory)/compact-\(UUID().uuidString).log")
        }
        // kill -9 of outletd once a few outlets are packed.
        let first = try compactInProcess()
        try await Harness.waitUntil(timeout: 60, "4 outlets packed") {
            try Harness.count(url, "SELECT count(*) FROM samples_compact") >= 4
        }
        first.signal(SIGKILL)
        _ = await first.waitForExit(timeout: 10)
        let packed = try Harness.count(url, "SELECT count(*) FROM samples_compact")
        #expect(packed >= 4 && packed < 30, "packed \(packed) of 30 before the kill")
        #expect(try Self.differences(url, from: "row_form") == 0)
        // PostgreSQL killed (immediate stop: no checkpoint, WAL replay) in the middle of the next run.
        let second = try compactInProcess()
        try await Harness.waitUntil(timeout: 60, "4 more outlets packed") {
            try Harness.count(url, "SELECT count(*) FROM samples_compact") >= packed + 4
        }
        try stack.crashPostgres()
        _ = await second.waitForExit(timeout: 30)
        #expect(try Self.differences(url, from: "row_form") == 0)
        // And to the end: every outlet packed, every reading once.
        let third = try compactInProcess()
        #expect(await third.waitForExit(timeout: 120) == 0)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_compact") == 30)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples_rows") == 0)
        #expect(try Self.differences(url, from: "row_form") == 0)
    }
}

/// A small deterministic generator (SplitMix64), so that a failing day can be made again.
struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) >> 1)
    }
}

extension Date {
    fileprivate var roundedToMilliseconds: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1_000).rounded() / 1_000)
    }
}
