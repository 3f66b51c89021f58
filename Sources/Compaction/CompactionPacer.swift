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
public struct CompactionPacer: Sendable {
    public var duty: Double
    public var yieldSeconds: Double
    public var recheckSeconds: Double

    public init(duty: Double, yieldSeconds: Double, recheckSeconds: Double = 0.25) {
        self.duty = min(1, max(0.01, duty))
        self.yieldSeconds = max(0, yieldSeconds)
        self.recheckSeconds = recheckSeconds
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
