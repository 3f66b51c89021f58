import Postgres

/// A batch's ``RollupDeltas``, made before the rollups need them: the writer makes them while
/// PostgreSQL adds the batch to the outlets' running totals (pure computation, no connection).
///
/// Their chains are encoded for COPY only as the COPY takes them, 1,000 rows at a time: encoded
/// beforehand, a batch's chains of 10,000 outlets were 3 to 5 MB held through a statement beside
/// the next batch filling up, and paired drains showed no time gained by it (docs/PERFORMANCE.md).
struct StagedRollups {
    let deltas: RollupDeltas
    /// Whether the chains carry their first and last minute: when one spans minutes (the short way
    /// reads them instead of staged minutes; NULL for a chain of one minute, whose total is that
    /// minute). At a steady rate no chain does, and the columns are left out.
    let withEnds: Bool
    let maxGapSeconds: Double

    init(_ batch: Batch, order: SampleOrder, maxGapSeconds: Double) {
        deltas = RollupDeltas(batch.samples, order: order, maxGapSeconds: maxGapSeconds)
        withEnds = deltas.chains.contains { $0.minuteCount > 1 }
        self.maxGapSeconds = maxGapSeconds
    }

    /// The COPY data of the chains, in pieces.
    func chainRows() -> CopyBinaryChunks<RollupDeltas.Chain> {
        CopyBinaryChunks(deltas.chains[...]) { [deltas, withEnds] in deltas.encode($0, withEnds: withEnds, &$1) }
    }
}

/// The rollup step of the write path (docs/ROLLUPS.md, "How the write path maintains them"); the
/// statements are sql/write/*.sql.
///
/// After a batch's samples are inserted, with, per outlet, how many were really inserted
/// (`outletd_inserted_devices`), and the outlets' rollup locks taken (before their totals), the writer
/// stages its ``RollupDeltas`` (one row per outlet; its first and last minute when they differ; the
/// minutes between them; the other minutes only once the short ways leave outlets for the merge), and merges:
/// an outlet whose samples were all inserted and all come after its tail gets the staged deltas
/// plus the segment from its tail added to its open minute, hour and day (kept in its
/// `rollup_tails` row; a bucket goes to its table once the outlet's data has moved past it). Of
/// those, an outlet whose samples all fall in its open hour (the usual case), or all in one
/// minute of a later hour, takes a shorter way to the same result, first: one update of its
/// `rollup_tails` row, and the buckets it closes (`short_way.sql`, `short_way_across_hours.sql`);
/// the rest go through `merge_rollups.sql`. Every other outlet (a replayed reading, a late
/// reading, two readings at one time) is recomputed from the raw samples by
/// `outletd_rollups_after_insert`, which first closes the outlet's open buckets.
extension BatchStore {
    /// `shortWays`: whether the short ways may take outlets (not when a first attempt found a closed
    /// minute already stored, see sql/write/short_way.sql: the merge then merges into that row).
    /// `stagingSamples` puts the batch's samples into the staging table, unless they are there already: the
    /// recomputation of outlets from the raw samples reads them there.
    func updateRollups(
        _ staged: StagedRollups, shortWays: Bool, stagingSamples: () throws -> Void, _ connection: PostgresConnection
    ) throws {
        let deltas = staged.deltas
        let maxGapSeconds = staged.maxGapSeconds
        if !deltas.chains.isEmpty {
            var chunks = staged.chainRows()
            try connection.copyIn(staged.withEnds ? WriteSQL.copyChainsWithEnds : WriteSQL.copyChains) {
                chunks.next()
            }
            // Only the minutes between a chain's first and last are staged as minutes.
            try stageMinutes(deltas.middleMinutes, connection)
        }
        if shortWays {
            var remaining = try connection.executePrepared(name: Statement.shortWay, [maxGapSeconds])
            guard try remaining.int64(row: 0, column: 0) != 0 else { return }
            remaining = try connection.executePrepared(name: Statement.shortWayAcrossHours, [maxGapSeconds])
            guard try remaining.int64(row: 0, column: 0) != 0 else { return }
        }
        // The merge reads all minutes of the outlets left.
        try stageMinutes(deltas.endMinutes, connection)
        let merged = try connection.executePrepared(name: Statement.mergeRollups, [maxGapSeconds])
        let recompute = merged[0, 0] ?? "{}"
        if recompute != "{}" {
            try stagingSamples()
            try connection.executePrepared(name: Statement.recomputeRollups, [recompute])
            try connection.executePrepared(name: Statement.refreshTails, [recompute])
        }
    }

    private func stageMinutes(_ minutes: [RollupDeltas.Minute], _ connection: PostgresConnection) throws {
        guard !minutes.isEmpty else { return }
        var rows = CopyBinaryChunks(minutes[...], encode: RollupDeltas.encode)
        try connection.copyIn(WriteSQL.copyMinutes) { rows.next() }
    }
}
