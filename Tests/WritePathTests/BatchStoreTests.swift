import Foundation
import Postgres
import Telemetry
import TestSupport
import Testing

@testable import Config
@testable import MessageSpool
@testable import Runtime
@testable import Storage
@testable import WritePath

/// The write path's SQL against a real PostgreSQL.
@Suite struct BatchStoreTests {
    let base = Date(timeIntervalSince1970: 1_800_000_000)

    func reading(_ offset: Double, power: Double) -> Reading {
        Reading(
            measuredAt: base.addingTimeInterval(offset), receivedAt: base.addingTimeInterval(offset),
            deviceTime: nil, voltageVolts: 230, currentAmperes: power / 230, powerWatts: power,
            powerFactor: nil, energyWattHours: nil, sequence: Int64(offset))
    }

    func setUp() throws -> (String, PostgresConnection, Int32) {
        let url = try Harness.migratedDatabase()
        let connection = try PostgresConnection(connectionString: url)
        let device = try DeviceStore(connection: connection).add(.init(code: "plug-1"))
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        return (url, connection, device.id)
    }

    /// The replay meets stored samples in its COPY straight into `samples`, and goes the careful way.
    @Test func replayedSamplesAreNeitherStoredNorCountedTwice() throws {
        let (url, connection, id) = try setUp()
        defer { connection.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
        let message = RawMessage(topic: "t", payload: [], receivedAt: base)
        batch.add(
            ClassifiedMessage(
                samples: [100, 300, 200].enumerated().map {
                    DeviceSample(deviceID: id, reading: reading(Double($0), power: $1))
                }), of: message)
        let first = try store.write(batch, to: connection)
        #expect(first == .init(inserted: 3, duplicates: 0))
        // The same batch again (a replay), plus one new reading.
        var replay = batch
        replay.add(
            ClassifiedMessage(samples: [DeviceSample(deviceID: id, reading: reading(10, power: 50))]), of: message)
        let second = try store.write(replay, to: connection)
        #expect(second == .init(inserted: 1, duplicates: 3))
        let summary = try PowerSummaryQuery(connection: connection).summary(code: "plug-1")
        #expect(summary?.sampleCount == 4)
        #expect(summary?.averagePowerWatts == 162.5)
        #expect(summary?.peakPowerWatts == 300)
        #expect(summary?.peakAt == base.addingTimeInterval(1))
        #expect(summary?.lastReadingAt == base.addingTimeInterval(10))
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 4)
    }

    /// Two readings of one outlet at one time in one batch cannot go straight into `samples`: the batch goes the
    /// careful way (staged, then moved with ON CONFLICT DO NOTHING), where the one received first is stored and
    /// the other counted as a duplicate; the totals count one.
    @Test func aBatchWithTwoReadingsOfAnOutletAtOneTimeGoesTheCarefulWay() throws {
        let (url, connection, id) = try setUp()
        defer { connection.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        let message = RawMessage(topic: "t", payload: [], receivedAt: base)
        func sample(_ offset: Double, power: Double, receivedLater: Double = 0) -> DeviceSample {
            var reading = reading(offset, power: power)
            reading.receivedAt = reading.receivedAt.addingTimeInterval(receivedLater)
            return DeviceSample(deviceID: id, reading: reading)
        }
        for (round, first) in [0.0, 60].enumerated() {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            batch.add(
                ClassifiedMessage(samples: [
                    sample(first + 2, power: 70, receivedLater: 1), sample(first + 1, power: 10),
                    sample(first + 2, power: 20),
                ]), of: message)
            let outcome = try store.write(batch, to: connection)
            #expect(outcome == .init(inserted: 2, duplicates: 1), "round \(round)")
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == 4)
        #expect(try Harness.count(url, "SELECT count(*) FROM samples WHERE power_watts = 70") == 0)
        let summary = try PowerSummaryQuery(connection: connection).summary(code: "plug-1")
        #expect(summary?.sampleCount == 4)
        #expect(summary?.averagePowerWatts == 15)
    }

    /// A batch of a third of the outlets with totals or fewer finds their rows by key (add_totals.sql with its
    /// `by key:` line), a larger one by the join alone; either way every outlet's totals are what its samples say,
    /// an outlet new to the totals included.
    @Test func totalsByKeyAndByJoinAgreeWithTheSamples() throws {
        #expect(BatchStore.addTotalsByKey.contains("\n    AND t.device_id = ANY (ARRAY(SELECT device_id"))
        #expect(!WriteSQL.addTotals.contains("\n    AND t.device_id = ANY"))
        let (url, connection, first) = try setUp()
        defer { connection.close() }
        let devices = try DeviceStore(connection: connection)
        let ids = try [first] + (2...31).map { try devices.add(.init(code: "plug-\($0)")).id }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        let message = RawMessage(topic: "t", payload: [], receivedAt: base)
        func write(_ outlets: ArraySlice<Int32>, at offset: Double) throws {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            for (n, id) in outlets.enumerated() {
                batch.add(
                    ClassifiedMessage(samples: [
                        DeviceSample(deviceID: id, reading: reading(offset, power: Double(n * 10) + offset)),
                        DeviceSample(deviceID: id, reading: reading(offset + 1, power: Double(n) + offset / 2)),
                    ]), of: message)
            }
            _ = try store.write(batch, to: connection)
        }
        // How many outlets have totals, as the writer learns it with every batch (ensure_partitions.sql).
        func outletsWithTotals() throws -> Double? {
            try connection.execute(WriteSQL.ensurePartitions, [[Int32]()]).double(row: 0, column: 2)
        }
        #expect(try outletsWithTotals() == 0)
        try write(ids.prefix(30), at: 0)
        try Harness.expectTotalsAreThoseOfTheSamples(url, "the first 30 outlets, uncounted: by join")
        // Before autovacuum first analyzes the table, the cumulative statistics count its rows (the writer's
        // session reports them at the end of its next transaction).
        try connection.execute("SELECT pg_stat_force_next_flush()")
        #expect(try Harness.scalar(url, "SELECT reltuples FROM pg_class WHERE relname = 'device_power_totals'") != "30")
        #expect(try outletsWithTotals() == 30)
        try connection.execute("ANALYZE device_power_totals")
        let counted = try #require(try outletsWithTotals())
        #expect(counted == 30)
        #expect(BatchStore.findsTotalsByKey(batchOutlets: 6, outletsWithTotals: counted))
        try write(ids[0..<5] + ids[30...], at: 60)
        try Harness.expectTotalsAreThoseOfTheSamples(url, "5 of the 30 and a new one: by key")
        #expect(!BatchStore.findsTotalsByKey(batchOutlets: 31, outletsWithTotals: counted))
        try write(ids[...], at: 120)
        try Harness.expectTotalsAreThoseOfTheSamples(url, "all 31: by join")
        #expect(try Harness.count(url, "SELECT count(*) FROM device_power_totals") == 31)
    }

    /// (outlets in the batch, outlets with totals as counted, by key?)
    static let byKeyCases: [(Int, Double, Bool)] = [
        (36, 18_000, true), (6_000, 18_000, true), (6_001, 18_000, false), (18_000, 18_000, false),
        (1, 0, false), (1, -1, false), (1, 3, true), (2, 3, false),
    ]

    @Test(arguments: byKeyCases)
    func aThirdOfTheOutletsOrFewerAreFoundByKey(batchOutlets: Int, outletsWithTotals: Double, byKey: Bool) {
        #expect(BatchStore.findsTotalsByKey(batchOutlets: batchOutlets, outletsWithTotals: outletsWithTotals) == byKey)
    }

    @Test func afterADuplicateTheNextBatchesGoTheCarefulWayThenStraightIntoSamplesAgain() {
        let recent = RecentDuplicates()
        #expect(recent.expectsNone())
        recent.met()
        let careful = (0..<RecentDuplicates.carefulBatches).filter { _ in !recent.expectsNone() }.count
        #expect(careful == RecentDuplicates.carefulBatches)
        #expect(recent.expectsNone())
        #expect(recent.expectsNone())
    }

    @Test func rejectedMessagesAndPendingDevicesStayBounded() throws {
        let (url, connection, _) = try setUp()
        defer { connection.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        for round in 0..<4 {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            for n in 0..<4 {
                let code = "ghost-\(round)-\(n)"
                let message = RawMessage(
                    topic: "outlets/\(code)/telemetry", payload: Array("{}".utf8), receivedAt: base)
                batch.add(
                    ClassifiedMessage(
                        rejections: [
                            RejectedReading(
                                receivedAt: base, topic: message.topic, deviceCode: code, reason: .unknownDevice,
                                detail: "not registered", index: nil)
                        ], unknownCode: code), of: message)
            }
            _ = try store.write(batch, to: connection)
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM rejected_messages") == 5)
        #expect(try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = 'unknown_device'") == 16)
        #expect(try Harness.count(url, "SELECT count(*) FROM pending_devices") == 3)
        // The newest rejections are the ones kept.
        #expect(
            try Harness.scalar(url, "SELECT string_agg(device_code, ',' ORDER BY id) FROM rejected_messages")
                == "ghost-2-3,ghost-3-0,ghost-3-1,ghost-3-2,ghost-3-3")
    }

    @Test func pendingDeviceCountsGrowAndRegisteringRemovesIt() throws {
        let (url, connection, _) = try setUp()
        defer { connection.close() }
        let store = BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3)
        for _ in 0..<3 {
            var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 16)
            let message = RawMessage(topic: "outlets/ghost/telemetry", payload: [], receivedAt: base)
            batch.add(
                ClassifiedMessage(
                    rejections: [
                        RejectedReading(
                            receivedAt: base, topic: message.topic, deviceCode: "ghost", reason: .unknownDevice,
                            detail: "", index: nil)
                    ], unknownCode: "ghost"), of: message)
            _ = try store.write(batch, to: connection)
        }
        let pending = try DeviceStore(connection: connection).pending()
        #expect(pending.map(\.code) == ["ghost"])
        #expect(pending.first?.messageCount == 3)
        try DeviceStore(connection: connection).approve("ghost", name: "found it")
        #expect(try Harness.count(url, "SELECT count(*) FROM pending_devices") == 0)
        #expect(try DeviceStore(connection: connection).find("ghost")?.name == "found it")
    }
}
