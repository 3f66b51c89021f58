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

extension CompactedDayTests {
    /// samples_between for each outlet of a table of outlets (`ARRAY[d.id]`: a rebuild's targets, a power rule's
    /// round) reads each one's readings by key in both forms (migration 34), and answers what `samples` does.
    @Test func eachOutletOfATableIsReadByKey() throws {
        let (url, _) = try Self.dayWritten(outlets: 3, count: 720)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let perOutlet = """
            SELECT string_agg(d.id || ':' || n, ',' ORDER BY d.id) FROM devices d
            CROSS JOIN LATERAL (SELECT count(*) AS n FROM samples_between(ARRAY[d.id], '\(Self.day) 01:00+00', 'infinity')) s
            """
        let expected = """
            SELECT string_agg(device_id || ':' || n, ',' ORDER BY device_id) FROM (
                SELECT d.id AS device_id, count(s.measured_at) AS n FROM devices d
                LEFT JOIN samples s ON s.device_id = d.id AND s.measured_at >= '\(Self.day) 01:00+00' GROUP BY d.id) x
            """
        try connection.execute("SET enable_seqscan = off")
        // The row form's partition and samples_compact, each found by its key (device_id first).
        func keyLookups() throws -> Int {
            let plan = try connection.execute("EXPLAIN \(perOutlet)")
            return (0..<plan.rowCount).count {
                let line = plan[$0, 0] ?? ""
                return line.contains("Index Cond: ((device_id = ANY (ARRAY[d.id]))")
            }
        }
        #expect(try keyLookups() >= 2)
        #expect(try Harness.scalar(url, perOutlet) == Harness.scalar(url, expected))
        _ = try CompactionStore(connection: connection).compact(day: Self.day)
        #expect(try keyLookups() >= 2)
        #expect(try Harness.scalar(url, perOutlet) == Harness.scalar(url, expected))
    }

    /// A rebuild's targets read each outlet's newest reading through samples_between inlined, by key: not planned and
    /// run once per outlet (a Function Scan), which took 12 ms an outlet beside a day of 100 outlets.
    @Test func aRebuildsTargetsReadEachOutletInline() throws {
        let (url, ids) = try Self.dayWritten(outlets: 3, count: 720)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let plan = try connection.execute("EXPLAIN " + RollupStore.rebuildTargetsSQL, [Self.dayStart, nil as String?])
        let lines = (0..<plan.rowCount).map { plan[$0, 0] ?? "" }
        #expect(!lines.contains { $0.contains("Function Scan on samples_between") }, "\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("Index Cond: ((device_id = ANY (ARRAY[d.id]))") })
        let targets = try RollupStore(connection: connection).rebuildTargets(since: Self.dayStart, code: nil)
        #expect(Set(targets.map(\.deviceID)).isSuperset(of: ids))
    }
}
