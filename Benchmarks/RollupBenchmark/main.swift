import Config
import Foundation
import Postgres
import Storage
import Telemetry
import WritePath

// outletd-bench: the figures of docs/ROLLUPS.md ("Benchmark"). Not a test.
//
//   outletd-bench ingest URL_WITHOUT URL_WITH [--outlets 100] [--readings 2000] [--rounds 3] [--batch-rows N]
//                        [--warm-up 0] [--across-hour] [--replay-every 50]
//       Writes the same readings through BatchStore (batches of N rows, by default the daemon's
//       `ingest.batch_max_rows`, i.e. the size of a batch under backlog) into
//       two empty databases, one with the rollups switched off, one with them on; the timed
//       batches alternate between the two. Prints readings per second of each side and round, each
//       round's ratio, the ratio of the medians with the median of the rounds' ratios, and the
//       ratio over all rounds (all readings over all seconds of each side). With
//       --warm-up K, each outlet's first K readings are written before the clock starts: the
//       timed batches then find every outlet known (the steady state) instead of new. The readings
//       end a minute before an hour starts; with --across-hour, an hour starts in the middle of
//       the timed readings (see makeBatches). One reading in --replay-every (50) is in its batch twice, a
//       replay, which sends the batch the careful way (BatchStore); 0: none, every batch goes straight into
//       `samples`.
//   outletd-bench query URL [--samples 10000000] [--outlets 100] [--runs 200]
//       Fills an empty database with raw samples (SQL generate_series, the last 30 days), builds
//       the rollups with the rebuild SQL, then times the dashboards' "average and peak of one
//       outlet over the last 24 h" query (PowerStatsQuery.averageAndPeakSQL) and prints its plan.
//   outletd-bench registry URL [--outlets 1000000] [--lookups 5000000]
//       Registers outlets until --outlets are (`bench-0000001` …), then measures what
//       outletd's registry costs at that size: the full load (`DeviceStore.registryEntries`, what
//       start-up and every periodic reload run) in seconds, the process's resident memory before and
//       after the load and with a second copy being built (a reload), and the nanoseconds per look-up
//       of a registered code and of an unknown one.

func option(_ name: String, _ fallback: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return Int(arguments[index + 1]) ?? fallback
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func migratedConnection(_ url: String) throws -> PostgresConnection {
    let connection = try PostgresConnection(connectionString: url, applicationName: "outletd-bench")
    try Migrator().migrate(connection)
    return connection
}

/// Readings of `outlets` outlets every 10 s, most recent last, one in `replayEvery` repeated (replays): the
/// first `warmUp` readings of each outlet, then the others, each in batches of `batchRows`.
///
/// Where the readings fall in the hour is fixed, not left to the clock: a batch whose readings
/// cross an hour costs several times more (most outlets leave the short ways), and ten timed
/// batches of 10,000 outlets span 500 s, so a run started in the last minutes of an hour had one
/// such batch in ten, a run started later none. By default the readings end a minute before an
/// hour starts (none of a window shorter than an hour crosses one); `acrossHour` puts an hour's
/// start in the middle of the timed readings instead.
func makeBatches(
    deviceIDs: [Int32], readingsPerOutlet: Int, warmUp: Int, batchRows: Int, acrossHour: Bool, replayEvery: Int
) -> (warmUp: [Batch], timed: [Batch]) {
    let previousHour = (Date().timeIntervalSince1970 / 3_600).rounded(.down) * 3_600 - 3_600
    let timedSeconds = Double(readingsPerOutlet - warmUp) * 10
    let end = Date(
        timeIntervalSince1970: acrossHour ? previousHour + (timedSeconds / 2).rounded(.down) : previousHour - 60)
    var samples: [DeviceSample] = []
    samples.reserveCapacity(deviceIDs.count * readingsPerOutlet)
    var firstTimed = 0
    for step in 0..<readingsPerOutlet {
        if step == warmUp { firstTimed = samples.count }
        let at = end.addingTimeInterval(-Double(readingsPerOutlet - step) * 10)
        for (index, id) in deviceIDs.enumerated() {
            let power = 50 + Double((step * 7 + index * 13) % 400)
            let reading = Reading(
                measuredAt: at.addingTimeInterval(Double(index) / 1_000).roundedToMicroseconds,
                receivedAt: at, voltageVolts: 229, currentAmperes: power / 229, powerWatts: power)
            samples.append(DeviceSample(deviceID: id, reading: reading))
            if replayEvery > 0 && (step + index) % replayEvery == 0 {
                samples.append(DeviceSample(deviceID: id, reading: reading))
            }
        }
    }
    func batches(_ samples: ArraySlice<DeviceSample>) -> [Batch] {
        stride(from: samples.startIndex, to: samples.endIndex, by: batchRows).map { start in
            var batch = Batch(maxStoredRejections: 0, payloadExcerptBytes: 0)
            batch.add(
                ClassifiedMessage(samples: Array(samples[start..<min(samples.endIndex, start + batchRows)])),
                of: RawMessage(topic: "bench", payload: [], receivedAt: Date()))
            return batch
        }
    }
    return (batches(samples[..<firstTimed]), batches(samples[firstTimed...]))
}

/// One database of `ingest`: its connection, store and batches for a round.
struct IngestSide {
    let rollups: Bool
    let connection: PostgresConnection
    let store: BatchStore
    let batches: [Batch]
    var elapsed = 0.0
    var written = 0

    /// Empties the database, adds the outlets, writes the warm-up batches and leaves the tables
    /// vacuumed and analysed.
    init(
        url: String, rollups: Bool, outlets: Int, readings: Int, warmUp: Int, batchRows: Int, acrossHour: Bool,
        replayEvery: Int
    ) throws {
        let connection = try migratedConnection(url)
        try connection.execute(
            "TRUNCATE samples_stored, device_power_totals, power_rollups_minute_stored, power_rollups_hourly_stored, power_rollups_daily_stored, rollup_tails"
        )
        try connection.execute("DELETE FROM devices")
        _ = try DeviceStore(connection: connection).addMany(
            codes: (0..<outlets).map { String(format: "bench-%04d", $0) })
        let idRows = try connection.execute("SELECT id FROM devices ORDER BY id")
        let ids = try (0..<idRows.rowCount).compactMap { try idRows.int64(row: $0, column: 0).map(Int32.init) }
        let (warmUpBatches, batches) = makeBatches(
            deviceIDs: ids, readingsPerOutlet: readings, warmUp: warmUp, batchRows: batchRows, acrossHour: acrossHour,
            replayEvery: replayEvery)
        let store = BatchStore(keepRejectedMessages: 0, pendingDevicesMax: 0, maintainsRollups: rollups)
        try store.prepareSession(connection)
        for batch in warmUpBatches { _ = try store.write(batch, to: connection) }
        try connection.execute("VACUUM ANALYZE")
        self.rollups = rollups
        self.connection = connection
        self.store = store
        self.batches = batches
    }

    var readings: Int { batches.reduce(0) { $0 + $1.samples.count } }
    var rate: Double { Double(readings) / elapsed }

    mutating func write(_ index: Int) throws {
        let clock = ContinuousClock()
        let started = clock.now
        written += try store.write(batches[index], to: connection).inserted
        elapsed += seconds(clock.now - started)
    }
}

func ingest(withoutURL: String, withURL: String) throws {
    let outlets = option("--outlets", 100)
    let readings = option("--readings", 2_000)
    let rounds = option("--rounds", 3)
    let batchRows = option("--batch-rows", OutletdConfiguration().ingest.batchMaxRows)
    let warmUp = min(option("--warm-up", 0), readings - 1)
    let acrossHour = CommandLine.arguments.contains("--across-hour")
    let replayEvery = option("--replay-every", 50)
    var rates: [Bool: [Double]] = [false: [], true: []]
    var ratios: [Double] = []
    // Readings and seconds of all rounds, per side: the rate over the whole run.
    var totals: [Bool: (readings: Int, seconds: Double)] = [false: (0, 0), true: (0, 0)]
    for round in 1...rounds {
        var sides = try [withoutURL, withURL].enumerated().map { index, url in
            try IngestSide(
                url: url, rollups: index == 1, outlets: outlets, readings: readings, warmUp: warmUp,
                batchRows: batchRows, acrossHour: acrossHour, replayEvery: replayEvery)
        }
        defer { for side in sides { side.connection.close() } }
        // Both databases are in one state of the machine: the timed batches alternate between them
        // (one batch without rollups, the same batch with them, the next without, …), after one
        // checkpoint (of the whole cluster) and with the order of each pair swapped every other
        // batch. What slows the machine for a while slows both alike.
        try sides[0].connection.execute("CHECKPOINT")
        for index in sides[0].batches.indices {
            for side in index % 2 == 0 ? [0, 1] : [1, 0] { try sides[side].write(index) }
        }
        for side in sides {
            try side.connection.execute("VACUUM ANALYZE")
            rates[side.rollups, default: []].append(side.rate)
            totals[side.rollups, default: (0, 0)].readings += side.readings
            totals[side.rollups, default: (0, 0)].seconds += side.elapsed
            print(
                String(
                    format: "round %d, rollups %@: %d readings (%d stored) in %.2f s = %.0f readings/s", round,
                    side.rollups ? "on " : "off", side.readings, side.written, side.elapsed, side.rate))
        }
        let ratio = sides[1].rate / sides[0].rate
        ratios.append(ratio)
        print(String(format: "round %d: on/off = %.1f %%", round, ratio * 100))
    }
    let off = median(rates[false] ?? [])
    let on = median(rates[true] ?? [])
    print(
        String(
            format: "median: off %.0f/s, on %.0f/s, on/off = %.1f %% (median of the rounds' on/off: %.1f %%)", off, on,
            on / off * 100, median(ratios) * 100))
    let (offTotal, onTotal) = (totals[false] ?? (0, 0), totals[true] ?? (0, 0))
    let (offRate, onRate) = (Double(offTotal.readings) / offTotal.seconds, Double(onTotal.readings) / onTotal.seconds)
    print(
        String(format: "all rounds: off %.0f/s, on %.0f/s, on/off = %.1f %%", offRate, onRate, onRate / offRate * 100))
}

func query(url: String) throws {
    let total = option("--samples", 10_000_000)
    let outlets = option("--outlets", 100)
    let runs = option("--runs", 200)
    let connection = try migratedConnection(url)
    defer { connection.close() }
    let clock = ContinuousClock()
    let existing = try connection.execute("SELECT count(*) FROM samples").int64(row: 0, column: 0) ?? 0
    if existing < total {
        let perOutlet = total / outlets
        let spacing = 30.0 * 86_400 / Double(perOutlet)
        try connection.execute("TRUNCATE samples_stored")
        try connection.execute("DELETE FROM devices")
        _ = try DeviceStore(connection: connection).addMany(
            codes: (0..<outlets).map { String(format: "bench-%04d", $0) })
        let days = Array(
            Int32(Date().timeIntervalSince1970 / 86_400) - 31...Int32(Date().timeIntervalSince1970 / 86_400) + 1)
        try connection.execute("SELECT outletd_ensure_sample_partitions($1::integer[])", [days])
        var started = clock.now
        try connection.execute(
            """
            INSERT INTO samples_stored
            SELECT c.*
            FROM devices d
            CROSS JOIN LATERAL generate_series(1, $1::integer) AS n
            CROSS JOIN LATERAL (SELECT now() - ($1 - n) * make_interval(secs => $2) AS t,
                                       50 + ((n * 7 + d.id * 13) % 400)::float8 AS p) v
            CROSS JOIN LATERAL outletd_compact_sample(d.id, t, t, NULL, 229, p / 229, p, NULL, NULL, NULL) c
            ORDER BY t
            """, [Int32(perOutlet), spacing])
        print(String(format: "inserted %d raw samples in %.1f s", total, seconds(clock.now - started)))
        try connection.execute("VACUUM ANALYZE samples_stored")
        started = clock.now
        let rebuilt = try connection.execute(
            "SELECT sum(outletd_rollups_rebuild(id, now() - interval '31 days', now() + interval '1 day')) FROM devices"
        )
        print(
            String(
                format: "rollups rebuilt (%@ minute buckets) in %.1f s", rebuilt[0, 0] ?? "?",
                seconds(clock.now - started)))
        try connection.execute("VACUUM ANALYZE")
    }
    let counts = try connection.execute(
        "SELECT (SELECT count(*) FROM samples), (SELECT count(*) FROM sample_partitions), (SELECT count(*) FROM power_rollups_hourly)"
    )
    print("samples: \(counts[0, 0] ?? "?"), partitions: \(counts[0, 1] ?? "?"), hourly rollups: \(counts[0, 2] ?? "?")")
    let code = String(format: "bench-%04d", outlets / 2)
    try connection.prepare(name: "bench_average_and_peak", sql: PowerStatsQuery.averageAndPeakSQL)
    var timings: [Double] = []
    for _ in 0..<runs {
        let since = Date().addingTimeInterval(-86_400)
        let started = clock.now
        let result = try connection.executePrepared(name: "bench_average_and_peak", [code, since])
        timings.append(seconds(clock.now - started) * 1_000)
        precondition(result.rowCount == 1)
    }
    let sorted = timings.sorted()
    print(
        String(
            format: "query (prepared, client round trip) over %d runs: median %.3f ms, p95 %.3f ms, max %.3f ms", runs,
            median(timings), sorted[Int(Double(sorted.count - 1) * 0.95)], sorted.last ?? 0))
    let explain = try connection.execute(
        "EXPLAIN (ANALYZE, BUFFERS) " + PowerStatsQuery.averageAndPeakSQL, [code, Date().addingTimeInterval(-86_400)])
    print("plan:")
    for row in 0..<explain.rowCount { print("  " + (explain[row, 0] ?? "")) }
}

/// The process's resident set in KiB (VmRSS), or its peak (VmHWM).
func residentKiB(_ field: String = "VmRSS") -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

func registry(url: String) throws {
    let outlets = option("--outlets", 1_000_000)
    let lookups = option("--lookups", 5_000_000)
    let connection = try migratedConnection(url)
    defer { connection.close() }
    let clock = ContinuousClock()
    let existing = try connection.execute("SELECT count(*) FROM devices").int64(row: 0, column: 0) ?? 0
    if existing < outlets {
        let started = clock.now
        try connection.execute(
            """
            INSERT INTO devices (code, name)
            SELECT 'bench-' || lpad(i::text, 7, '0'), 'registry bench' FROM generate_series(1, $1::integer) i
            """, [Int32(outlets - Int(existing))])
        try connection.execute("VACUUM ANALYZE devices")
        print(
            String(
                format: "registered %d more outlets in %.1f s", outlets - Int(existing), seconds(clock.now - started)))
    }
    let store = DeviceStore(connection: connection)
    let registry = DeviceRegistry()
    let before = residentKiB()
    var started = clock.now
    registry.replaceAll(try store.registryEntries())
    let loadSeconds = seconds(clock.now - started)
    let loaded = residentKiB()
    started = clock.now
    registry.replaceAll(try store.registryEntries())
    let reloadSeconds = seconds(clock.now - started)
    print(
        String(
            format:
                "full load of %d outlets: %.2f s (a reload: %.2f s); RSS %d KiB before, %d KiB loaded (+%d), peak %d KiB",
            registry.count, loadSeconds, reloadSeconds, before, loaded, loaded - before, residentKiB("VmHWM")))
    // Codes looked up in a scattered order, as readings of a fleet arrive.
    let sample = try connection.execute("SELECT code FROM devices ORDER BY random() LIMIT 100000")
    let known = (0..<sample.rowCount).compactMap { sample[$0, 0] }
    let unknown = (0..<100_000).map { "unknown-\($0)" }
    for (label, codes) in [("registered", known), ("unknown", unknown)] {
        var found = 0
        started = clock.now
        for index in 0..<lookups where registry.lookup(codes[index % codes.count]) != nil { found += 1 }
        let nanoseconds = seconds(clock.now - started) / Double(lookups) * 1e9
        print(
            String(
                format: "look-up of a%@ code: %.0f ns (%d of %d found)",
                label == "unknown" ? "n unknown" : " registered",
                nanoseconds, found, lookups))
    }
}

let arguments = CommandLine.arguments
do {
    switch arguments.count > 1 ? arguments[1] : "" {
    case "ingest" where arguments.count >= 4: try ingest(withoutURL: arguments[2], withURL: arguments[3])
    case "query" where arguments.count >= 3: try query(url: arguments[2])
    case "registry" where arguments.count >= 3: try registry(url: arguments[2])
    default:
        FileHandle.standardError.write(
            Data("usage: outletd-bench ingest URL_WITHOUT URL_WITH | query URL | registry URL\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("outletd-bench: \(error)\n".utf8))
    exit(1)
}
