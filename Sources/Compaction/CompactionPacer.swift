/// How a compaction pass shares the machine with ingest, between its chunks (docs/COMPACTION.md, "Sharing the machine
/// with ingest"):
///
/// 1. it rests so that it keeps its thread busy `duty` of the time (a chunk of 1 s at duty 0.5: 1 s of rest);
/// 2. then, with `yieldSeconds` above 0, it waits while ingest is behind: while a batch that some instance
///    committed in the last seconds had waited longer than `yieldSeconds` (`ingest_checkpoints.batch_wait_seconds`),
///    looking again every `recheckSeconds`.
///
/// On a machine that ingest keeps busy, the fixed duty alone takes CPU from ingest's writer, mosquitto and
/// PostgreSQL's backends, and their batches wait; with the second step compaction takes the machine's slack, and a
/// day compacts more slowly while ingest is heavy instead of ingest falling behind.
///
/// A chunk under way cannot be paused (it is one statement in PostgreSQL), and while it runs ingest has less of the
/// machine: how long a chunk keeps busy is how far it can hold ingest up. So chunks read by index are sized to a
/// busy spell of about `spellSeconds` (``nextChunk(outlets:busy:maxOutlets:)``), up to the configured outlets.
public struct CompactionPacer: Sendable {
    public var duty: Double
    public var yieldSeconds: Double
    /// The busy spell a chunk is sized to; 0: every chunk takes the configured outlets.
    public var spellSeconds: Double
    public var recheckSeconds: Double

    public init(duty: Double, yieldSeconds: Double, spellSeconds: Double = 0, recheckSeconds: Double = 0.25) {
        self.duty = min(1, max(0.01, duty))
        self.yieldSeconds = max(0, yieldSeconds)
        self.spellSeconds = max(0, spellSeconds)
        self.recheckSeconds = recheckSeconds
    }

    /// Whether chunks are sized to the spell: with `spellSeconds` above 0, for chunks read by index (at most
    /// ``CompactionStore/indexScanOutlets``); a chunk read in the day's physical order costs a scan of the whole day
    /// whatever its outlets.
    public func sizesChunks(maxOutlets: Int) -> Bool {
        spellSeconds > 0 && Int64(maxOutlets) <= CompactionStore.indexScanOutlets
    }

    /// The first chunk's outlet ids: 1 when chunks are sized to the spell (it grows from there), else `maxOutlets`.
    public func firstChunk(maxOutlets: Int) -> Int {
        sizesChunks(maxOutlets: maxOutlets) ? 1 : maxOutlets
    }

    /// The next chunk's outlet ids after one of `outlets` that kept the thread busy `busy` seconds: as many as take
    /// about `spellSeconds` at the same pace, at least 1, growing at most twofold a chunk, at most `maxOutlets`.
    public func nextChunk(outlets: Int, busy: Double, maxOutlets: Int) -> Int {
        guard sizesChunks(maxOutlets: maxOutlets) else { return maxOutlets }
        let paced = busy > 0 ? Int((Double(outlets) * spellSeconds / busy).rounded(.down)) : maxOutlets
        return max(1, min(paced, outlets * 2, maxOutlets))
    }

    /// The rest after a chunk that kept the thread busy for `busy` seconds, for the duty.
    public func dutyRest(afterBusy busy: Double) -> Double {
        duty >= 1 ? 0 : max(0, busy) * (1 - duty) / duty
    }

    /// Rests after a chunk of `busy` seconds: `sleep` (which returns true when the pass should stop) for the duty's
    /// share, then for as long as `ingestWait` (how long ingest's recent batches waited, seconds) is above
    /// `yieldSeconds`. Returns how long it waited for ingest (beyond the duty's rest).
    public func rest(
        afterBusy busy: Double, ingestWait: () throws -> Double, sleep: (Double) -> Bool
    ) rethrows -> Double {
        let duty = dutyRest(afterBusy: busy)
        if duty > 0, sleep(duty) { return 0 }
        guard yieldSeconds > 0 else { return 0 }
        var waited = 0.0
        while try ingestWait() > yieldSeconds {
            if sleep(recheckSeconds) { break }
            waited += recheckSeconds
        }
        return waited
    }
}
