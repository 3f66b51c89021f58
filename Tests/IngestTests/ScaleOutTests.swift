import Foundation
import Logging
import Postgres
import ServiceTestSupport
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

/// Several instances against one broker and one database (docs/SCALING.md): shared subscriptions,
/// one spool per instance, rollups exact when one outlet's readings are split between writers, and three
/// `outletd` processes with one of them killed.
@Suite(.serialized) struct ScaleOutTests {
    // MARK: - Subscriptions and spool ownership

    @Test func telemetryIsASharedSubscriptionOfTheConfiguredGroup() {
        var configuration = OutletdConfiguration()
        configuration.mqtt.topicPrefix = "site/outlets"
        let policy = { TopicPolicy(configuration) }
        // The default: plain subscriptions, and the group of earlier versions' default is stale.
        #expect(policy().subscriptions.first == "site/outlets/+/telemetry")
        #expect(policy().subscriptions.contains("site/outlets/+/set"))
        #expect(policy().staleSubscriptions.contains("$share/outletd/site/outlets/+/telemetry"))
        #expect(policy().staleSubscriptions.contains("$share/outletd/site/outlets/+/set"))
        #expect(policy().subscriptions.contains("site/outlets/+/state"))

        configuration.mqtt.shareGroup = "outletd"
        #expect(policy().subscriptions.first == "$share/outletd/site/outlets/+/telemetry")
        #expect(policy().staleSubscriptions.contains("site/outlets/+/telemetry"))

        configuration.mqtt.shareGroup = "ingest-eu"
        #expect(policy().subscriptions.first == "$share/ingest-eu/site/outlets/+/telemetry")
        #expect(policy().staleSubscriptions.contains("$share/outletd/site/outlets/+/telemetry"))

        configuration.mqtt.shareGroup = ""
        #expect(policy().subscriptions.first == "site/outlets/+/telemetry")
        #expect(policy().staleSubscriptions.contains("$share/outletd/site/outlets/+/telemetry"))
        #expect(!policy().staleSubscriptions.contains("site/outlets/+/telemetry"))
    }

    @Test func readingsOfOtherProtocolsAreSharedAndTheirStatesAreNot() {
        var configuration = OutletdConfiguration()
        configuration.mqtt.shareGroup = "outletd"
        let subscriptions = TopicPolicy(configuration).subscriptions
        for shared in ["tele/+/SENSOR", "shellies/+/relay/+/power", "shellies/+/relay/+/energy", "+/status/+"] {
            #expect(subscriptions.contains("$share/outletd/\(shared)"), "\(shared) in \(subscriptions)")
            #expect(!subscriptions.contains(shared))
        }
        for plain in ["tele/+/LWT", "tele/+/STATE", "shellies/+/relay/+", "shellies/+/online", "+/online"] {
            #expect(subscriptions.contains(plain), "\(plain) in \(subscriptions)")
        }
    }

    @Test func aShareGroupWithTopicCharactersIsRefused() throws {
        do {
            _ = try ConfigurationLoader().load(
                file: nil, environment: ["OUTLETD_MQTT_SHARE_GROUP": "a/b", "OUTLETD_COMMANDS_SHARE_GROUP": "x+"])
            Issue.record("a share group with / or + was accepted")
        } catch {
            #expect(error.problems.contains { $0.key == "mqtt.share_group" })
            #expect(error.problems.contains { $0.key == "commands.share_group" })
        }
    }

    @Test func aSpoolDirectoryOfAnotherInstanceIsRefused() throws {
        let directory = NSTemporaryDirectory() + "outletd-spool-owner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "test")
        let first = try Spool.open(Spool.Settings(directory: directory, owner: "a"), logger: logger)
        first.close()
        #expect(throws: SpoolError.self) {
            try Spool.open(Spool.Settings(directory: directory, owner: "b"), logger: logger)
        }
        let again = try Spool.open(Spool.Settings(directory: directory, owner: "a"), logger: logger)
        again.close()
        #expect(try String(contentsOfFile: "\(directory)/spool.instance", encoding: .utf8) == "a\n")
    }

    // MARK: - Two writers, one outlet's readings split between them

    /// Two `BatchStore` writers on two connections store interleaved readings of the same outlets at once
    /// (odd and even sequence numbers, some late, some delivered to both). Totals and every rollup row must
    /// then equal their recomputation from the raw samples: no update lost to a concurrent transaction.
    @Test(arguments: [UInt64(7), 8])
    func concurrentWritersLoseNoRollupUpdate(seed: UInt64) throws {
        let rollups = RollupTests()
        let (url, connection, ids) = try rollups.setUp(
            (0..<4).map { "split-\($0)" }, timeZone: "Europe/Berlin", maxGapSeconds: 120)
        connection.close()
        var random = SplitMix64(seed: seed)
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        var shares: [[DeviceSample]] = [[], []]
        for id in ids {
            var at = start
            for seq in 0..<1_500 {
                let power = Double(random.next() % 3_000) / 10
                let energy: Double? = id % 2 == 0 ? Double(seq) * 0.5 : nil
                let reading = rollups.sample(id, at, power: power, energy: energy)
                shares[seq % 2].append(reading)
                // A redelivery that reached the other instance too.
                if random.next() % 20 == 0 { shares[(seq + 1) % 2].append(reading) }
                at = at.addingTimeInterval(random.next() % 15 == 0 ? 200 : Double(1 + random.next() % 9))
            }
        }
        // Mostly in order, as outlets send; every tenth batch position swapped with a later one (late readings).
        for index in shares.indices {
            for position in stride(from: 0, to: shares[index].count - 40, by: 10) {
                shares[index].swapAt(position, position + Int(random.next() % 40))
            }
        }
        let splits = shares
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            do {
                let connection = try PostgresConnection(connectionString: url)
                defer { connection.close() }
                try Self.write(splits[writer], inBatchesOfUpTo: 60, seed: seed &+ UInt64(writer), rollups, connection)
            } catch {
                failures.value.append("writer \(writer): \(error)")
            }
        }
        #expect(failures.value.isEmpty, "\(failures.value)")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == ids.count * 1_500)
        #expect(
            try Harness.outletsWithTotalsAsRecomputed(url) == ids.count)
        try rollups.expectRollupsMatchFromScratch(url, timeZone: "Europe/Berlin", maxGapSeconds: 120)
    }

    /// `outletd rollup rebuild` runs again and again while a writer stores readings of the same
    /// outlets: two of them share a rollup lock stripe (ids 1024 apart), one has a stripe of its own.
    /// The rollup locks serialise each rebuild chunk with the writer's batches, so totals, every
    /// rollup row and every tail end equal to their recomputation from the raw samples.
    @Test func aRebuildWhileTheWriterStoresLosesNothing() throws {
        let rollups = RollupTests()
        let (url, connection, _) = try rollups.setUp([], timeZone: "Europe/Berlin", maxGapSeconds: 120)
        try DeviceStore(connection: connection).addMany(codes: (0..<1_026).map { String(format: "stripe-%04d", $0) })
        let rows = try connection.execute("SELECT id, code FROM devices ORDER BY id")
        let devices = try (0..<rows.rowCount).map {
            (id: Int32(try rows.int64(row: $0, column: 0) ?? 0), code: rows[$0, 1] ?? "")
        }
        connection.close()
        let outlets = [devices[0], devices[1], devices[1_024]]
        #expect(outlets[0].id % 1_024 == outlets[2].id % 1_024)
        var random = SplitMix64(seed: 11)
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        var samples: [DeviceSample] = []
        for outlet in outlets {
            var at = start
            for seq in 0..<1_200 {
                let energy: Double? = outlet.id % 2 == 0 ? Double(seq) * 0.5 : nil
                samples.append(rollups.sample(outlet.id, at, power: Double(random.next() % 3_000) / 10, energy: energy))
                at = at.addingTimeInterval(Double(1 + random.next() % 9))
            }
        }
        samples.sort { $0.reading.measuredAt < $1.reading.measuredAt }
        let ordered = samples
        let writing = Locked(true)
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { task in
            do {
                let connection = try PostgresConnection(connectionString: url)
                defer { connection.close() }
                if task == 0 {
                    defer { writing.value = false }
                    try Self.write(ordered, inBatchesOfUpTo: 40, seed: 12, rollups, connection)
                } else {
                    let store = RollupStore(connection: connection)
                    var rebuilds = 0
                    while writing.value || rebuilds == 0 {
                        for outlet in outlets {
                            for target in try store.rebuildTargets(since: start, code: outlet.code) {
                                try store.rebuild(target, chunkSeconds: 600)
                            }
                        }
                        rebuilds += 1
                    }
                    #expect(rebuilds > 1, "the writer finished before a second rebuild")
                }
            } catch {
                failures.value.append("task \(task): \(error)")
            }
        }
        #expect(failures.value.isEmpty, "\(failures.value)")
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == ordered.count)
        try rollups.expectRollupsMatchFromScratch(url, timeZone: "Europe/Berlin", maxGapSeconds: 120)
        try rollups.expectTailsAreNewestSamples(url)
    }

    /// Writes `samples` in order through the write path on `connection` (a session of its own), in
    /// batches of 1 to `maxSize` readings, the sizes drawn from `seed`.
    static func write(
        _ samples: [DeviceSample], inBatchesOfUpTo maxSize: Int, seed: UInt64, _ rollups: RollupTests,
        _ connection: PostgresConnection
    ) throws {
        try BatchStore(keepRejectedMessages: 5, pendingDevicesMax: 3).prepareSession(connection)
        var generator = SplitMix64(seed: seed)
        var position = 0
        while position < samples.count {
            let size = 1 + Int(generator.next() % UInt64(maxSize))
            let end = min(samples.count, position + size)
            try rollups.write(Array(samples[position..<end]), connection, batchSize: size)
            position = end
        }
    }

    // MARK: - Three processes, one killed

    /// Three `outletd run` processes in one share group. A disabled outlet is refused by all of them (each
    /// hears the registry's NOTIFY). One instance is SIGKILLed mid-stream: the broker keeps its share of the
    /// messages in its session (mosquitto 2.0 still deals messages to a stopped member) until it is restarted.
    /// Then every acknowledged reading is stored exactly once and totals and rollups equal their recomputation.
    @Test func threeInstancesShareTheStreamAndSurviveAKill() async throws {
        let url = try Harness.migratedDatabase()
        let base = try Harness.configuration(databaseURL: url)
        let codes = (0..<12).map { String(format: "scale-%02d", $0) }
        try Harness.register(codes + ["scale-off"], databaseURL: url)
        let stackDirectory = try TestStack.shared().directory
        let configurations = (0..<3).map { index -> OutletdConfiguration in
            var configuration = base
            configuration.instanceID = "\(base.instanceID)-\(index)"
            configuration.spool.directory = "\(stackDirectory)/spool-\(configuration.instanceID)"
            return configuration
        }
        var instances = try configurations.map { try OutletdProcess.start($0) }
        defer { for instance in instances { instance.signal(SIGKILL) } }
        for configuration in configurations { try await Harness.waitForStatus(configuration, "online") }

        // A second process on the spool of instance 0 is refused, whatever its id.
        var intruder = configurations[0]
        intruder.instanceID = "\(base.instanceID)-intruder"
        let refused = try OutletdProcess.start(intruder)
        #expect(try await refused.waitForExit(timeout: 30) != 0)
        #expect(refused.output.contains("is in use"), "\(refused.output)")

        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        let prefix = base.mqtt.topicPrefix
        // The registry refreshes on every instance: readings of an outlet disabled now are refused by all.
        _ = try Harness.scalar(url, "UPDATE devices SET enabled = false WHERE code = 'scale-off'")
        try await Task.sleep(for: .seconds(2))
        for seq in 0..<30 {
            try publisher.publish("\(prefix)/scale-off/telemetry", payload: Payloads.reading(ts: Date(), seq: seq))
        }
        try await Harness.waitUntil(timeout: 30, "30 readings of the disabled outlet refused") {
            try Harness.count(url, "SELECT coalesce(sum(count), 0) FROM rejection_counts") == 30
        }

        let total = 6_000
        let start = Date()
        let publishing = Task {
            for n in 0..<total {
                let seq = n / codes.count
                try publisher.publish(
                    "\(prefix)/\(codes[n % codes.count])/telemetry",
                    payload: Payloads.reading(
                        power: Double(n % 89), ts: start.addingTimeInterval(Double(seq) * 0.2), seq: seq))
                if n % 100 == 99 { try await Task.sleep(for: .milliseconds(50)) }
            }
        }
        try await Harness.waitUntil(timeout: 60, "some readings stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") > 1_000
        }
        instances[1].signal(SIGKILL)
        _ = try await instances[1].waitForExit(timeout: 30)
        // Its spool now belongs to it alone: another id is refused even with nobody holding the lock.
        var impostor = configurations[1]
        impostor.instanceID = "\(base.instanceID)-impostor"
        let impostorProcess = try OutletdProcess.start(impostor)
        #expect(try await impostorProcess.waitForExit(timeout: 30) != 0)
        #expect(impostorProcess.output.contains("belongs to instance"), "\(impostorProcess.output)")

        try await publishing.value
        try await Harness.waitUntil(timeout: 60, "broker acknowledgements") {
            publisher.acknowledgedCount == UInt64(total + 30)
        }
        // The two live members drain what they were dealt; the stopped member's share waits in its session.
        try await Task.sleep(for: .seconds(3))
        let storedWhileDown = try Harness.count(url, "SELECT count(*) FROM samples")
        #expect(storedWhileDown < total, "mosquitto kept dealing messages to the stopped member")

        instances[1] = try OutletdProcess.start(configurations[1])
        try await Harness.waitUntil(timeout: 90, "every reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") >= total
        }
        try await Task.sleep(for: .milliseconds(500))
        for instance in instances { instance.signal(SIGTERM) }
        for instance in instances { #expect(try await instance.waitForExit(timeout: 60) == 0, "\(instance.output)") }

        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == total)
        #expect(try Harness.count(url, "SELECT count(DISTINCT (device_id, seq)) FROM samples") == total)
        #expect(try Harness.count(url, "SELECT count(*) FROM ingest_checkpoints") == 3, "every instance wrote")
        #expect(try Harness.count(url, "SELECT coalesce(sum(count), 0) FROM rejection_counts") == 30)
        #expect(try Harness.count(url, "SELECT count FROM rejection_counts WHERE reason = 'disabled_device'") == 30)
        #expect(
            try Harness.outletsWithTotalsAsRecomputed(url) == codes.count)
        try RollupTests().expectRollupsMatchFromScratch(url, timeZone: "UTC", maxGapSeconds: 600)
    }

    // MARK: - Retiring an instance

    /// The hand-over decision: a member hands over only while another member of its group runs. Members
    /// stopping one after the other hand over until the last, which keeps its subscriptions; two stopping at
    /// the same moment are decided one after the other, so exactly one of them hands over.
    @Test func onlyAMemberWithAnotherRunningHandsOver() async throws {
        let url = try Harness.migratedDatabase()
        let logger = Logger(label: "test")
        var names: [String] = []
        func group(_ size: Int) -> [ShareGroupMembership] {
            let name = TestStack.uniqueName("g")
            names.append("'\(name)'")
            return (0..<size).map { _ in ShareGroupMembership(group: name) }
        }
        let (pair, three, sole) = (group(2), group(3), group(1))
        let workers = (pair + three + sole).map {
            DatabaseWorker($0, connectionString: url, reconnectDelayMax: 1, logger: logger)
        }
        for worker in workers { worker.start() }
        let held = """
            SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
              AND objid IN (SELECT hashtext(name)::oid FROM unnest(ARRAY[\(names.joined(separator: ","))]) AS n(name))
            """
        try await Harness.waitUntil(timeout: 10, "six member locks") { try Harness.count(url, held) == 6 }
        let (together, oneByOne, alone) = try await Blocking.run {
            let decided = Locked<[Bool]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let decision = pair[index].decideHandover()
                decided.withValue { $0.append(decision) }
            }
            return (decided.value, three.map { $0.decideHandover() }, sole[0].decideHandover())
        }
        #expect(together.sorted { !$0 && $1 } == [false, true])
        #expect(oneByOne == [true, true, false])
        #expect(alone == false)
        for worker in workers { await worker.stop() }
    }

    /// Three `outletd run` processes in one share group, 250 outlets publishing once a second; one instance
    /// gets SIGTERM mid-stream and is not started again. Before it stops it unsubscribes its shared filters
    /// (another member runs) and takes everything the broker dealt it: every acknowledged reading is stored,
    /// exactly once, by it or by the others.
    @Test func retiringAnInstanceLosesNothing() async throws {
        let url = try Harness.migratedDatabase()
        let base = try Harness.configuration(databaseURL: url)
        let codes = (0..<250).map { String(format: "ret-%03d", $0) }
        try Harness.register(codes, databaseURL: url)
        let stackDirectory = try TestStack.shared().directory
        let configurations = (0..<3).map { index -> OutletdConfiguration in
            var configuration = base
            configuration.instanceID = "\(base.instanceID)-\(index)"
            configuration.spool.directory = "\(stackDirectory)/spool-\(configuration.instanceID)"
            return configuration
        }
        let instances = try configurations.map { try OutletdProcess.start($0) }
        defer { for instance in instances { instance.signal(SIGKILL) } }
        for configuration in configurations { try await Harness.waitForStatus(configuration, "online") }

        let publisher = try Harness.publisher()
        defer { publisher.stop() }
        let prefix = base.mqtt.topicPrefix
        let seconds = 12
        let start = Date()
        let publishing = Task {
            for second in 0..<seconds {
                for code in codes {
                    try publisher.publish(
                        "\(prefix)/\(code)/telemetry",
                        payload: Payloads.reading(
                            power: Double(second), ts: start.addingTimeInterval(Double(second)), seq: second))
                }
                try await Task.sleep(until: .now + .seconds(1))
            }
        }
        try await Task.sleep(for: .seconds(4))
        instances[1].signal(SIGTERM)
        #expect(try await instances[1].waitForExit(timeout: 60) == 0, "\(instances[1].output)")
        #expect(instances[1].output.contains("handed this instance's share"), "\(instances[1].output)")
        try await publishing.value
        let total = seconds * codes.count
        try await Harness.waitUntil(timeout: 60, "broker acknowledgements") {
            publisher.acknowledgedCount == UInt64(total)
        }
        // Without the hand-over, the broker keeps dealing to the stopped member's session: its share is stored
        // by nobody until (unless) it comes back.
        try? await Harness.waitUntil(timeout: 30, "every acknowledged reading stored") {
            try Harness.count(url, "SELECT count(*) FROM samples") >= total
        }
        try await Task.sleep(for: .milliseconds(500))
        let stored = try Harness.count(url, "SELECT count(*) FROM samples")
        #expect(stored == total, "\(total - stored) of \(total) acknowledged readings stored by nobody")
        for index in [0, 2] { instances[index].signal(SIGTERM) }
        for index in [0, 2] {
            #expect(try await instances[index].waitForExit(timeout: 60) == 0, "\(instances[index].output)")
        }
        #expect(try Harness.count(url, "SELECT count(*) FROM samples") == total)
        #expect(
            try Harness.count(
                url,
                """
                SELECT count(*) FROM devices d CROSS JOIN generate_series(0, \(seconds - 1)) AS s(seq)
                WHERE NOT EXISTS (SELECT 1 FROM samples x WHERE x.device_id = d.id AND x.seq = s.seq)
                """) == 0, "a reading acknowledged and stored by nobody")
        #expect(try Harness.count(url, "SELECT count(*) FROM ingest_checkpoints") == 3, "every instance wrote")
    }
}
