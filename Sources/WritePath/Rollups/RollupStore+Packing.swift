import Foundation
import Postgres

extension RollupStore {
    /// The comment that marks a partition's index as packed.
    static let packedIndexComment = "packed by outletd once its day settled (fillfactor 100)"

    /// Rebuilds, packed full, the primary key index of every daily partition of `samples_stored` whose day ended
    /// a day or more before `now` (readings buffered by a device come at most a day late: `max_backfill`), once.
    /// Returns the partitions it packed.
    ///
    /// The writer inserts each batch's readings outlet by outlet, so every leaf page of a partition's index is
    /// split while it fills: the index of a day being written is about half empty (docs/CAPACITY.md). Rebuilt, it
    /// takes half the room. `REINDEX … CONCURRENTLY` lets the writer and the readers go on meanwhile; the comment
    /// set after it says the index is done, so a rebuild that failed is tried again on the next pass.
    func packSettledPartitions(now: Date) throws -> [String] {
        let indexes = try connection.execute(
            """
            SELECT format('%I.%I', n.nspname, ic.relname), p.partition_name
            FROM sample_partitions p
            JOIN pg_namespace pn ON pn.nspname = p.schema_name
            JOIN pg_class c ON c.relname = p.partition_name AND c.relnamespace = pn.oid
            JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            JOIN pg_class ic ON ic.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = ic.relnamespace
            WHERE p.starts_at + interval '2 days' <= $1
              AND obj_description(ic.oid, 'pg_class') IS DISTINCT FROM $2
            ORDER BY p.day
            """, [now, Self.packedIndexComment])
        var packed: [String] = []
        for row in 0..<indexes.rowCount {
            guard let index = indexes[row, 0], let partition = indexes[row, 1] else { continue }
            try connection.execute("ALTER INDEX \(index) SET (fillfactor = 100)")
            try connection.execute("REINDEX INDEX CONCURRENTLY \(index)")
            try connection.execute("COMMENT ON INDEX \(index) IS '\(Self.packedIndexComment)'")
            packed.append(partition)
        }
        return packed
    }
}
