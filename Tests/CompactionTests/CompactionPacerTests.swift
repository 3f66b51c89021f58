import Testing

@testable import Compaction

/// The rest between two chunks, without a database: the duty's share, then waiting while ingest's batches wait.
@Suite struct CompactionPacerTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var duty: Double
        var yieldSeconds: Double
        var busy: Double
        /// What `ingestWait` answers, call by call (the last one repeats).
        var waits: [Double]
        /// After how many sleeps the pass is told to stop (nil: never).
        var stopAfter: Int?
        /// The sleeps expected, in order, and the time reported as waited for ingest.
        var sleeps: [Double]
        var waited: Double
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "duty 1, ingest on time: no rest", duty: 1, yieldSeconds: 0.25, busy: 2, waits: [0.02],
            sleeps: [], waited: 0),
        Case(
            name: "duty 0.5: as long as the chunk", duty: 0.5, yieldSeconds: 0.25, busy: 1.2, waits: [0.1],
            sleeps: [1.2], waited: 0),
        Case(
            name: "duty 0.25: three times the chunk", duty: 0.25, yieldSeconds: 0.25, busy: 0.4, waits: [0],
            sleeps: [1.2], waited: 0),
        Case(
            name: "ingest behind: waits until its batches are on time again", duty: 0.5, yieldSeconds: 0.25,
            busy: 1, waits: [0.9, 0.6, 0.3, 0.25], sleeps: [1, 0.25, 0.25, 0.25], waited: 0.75),
        Case(
            name: "ingest behind, duty 1: waits at once", duty: 1, yieldSeconds: 0.25, busy: 3, waits: [2, 0.1],
            sleeps: [0.25], waited: 0.25),
        Case(
            name: "yield off: ingest's wait is not read", duty: 0.5, yieldSeconds: 0, busy: 0.5, waits: [60],
            sleeps: [0.5], waited: 0),
        Case(
            name: "stopped during the duty's rest: no wait for ingest", duty: 0.5, yieldSeconds: 0.25, busy: 1,
            waits: [5], stopAfter: 1, sleeps: [1], waited: 0),
        Case(
            name: "stopped while waiting for ingest", duty: 0.5, yieldSeconds: 0.25, busy: 1, waits: [5],
            stopAfter: 3, sleeps: [1, 0.25, 0.25], waited: 0.25),
        Case(
            name: "a duty out of range is clamped to 0.01", duty: 0, yieldSeconds: 0, busy: 0.01, waits: [0],
            sleeps: [0.99], waited: 0),
    ]

    @Test(arguments: cases) func restsBetweenChunks(_ c: Case) throws {
        let pacer = CompactionPacer(duty: c.duty, yieldSeconds: c.yieldSeconds)
        var asked = 0
        var sleeps: [Double] = []
        let waited = pacer.rest(
            afterBusy: c.busy,
            ingestWait: {
                defer { asked += 1 }
                return c.waits[min(asked, c.waits.count - 1)]
            },
            sleep: { seconds in
                sleeps.append(seconds)
                return c.stopAfter.map { sleeps.count >= $0 } ?? false
            })
        #expect(sleeps.count == c.sleeps.count)
        for (slept, expected) in zip(sleeps, c.sleeps) { #expect(abs(slept - expected) < 1e-9) }
        #expect(abs(waited - c.waited) < 1e-9)
        if c.yieldSeconds == 0 { #expect(asked == 0) }
    }

    /// Chunks read by index are sized to the spell: from 1 outlet, at most doubling, down at once when a chunk ran
    /// long, never under 1 nor over the configured outlets; chunks read in physical order (over 32) and a spell of 0
    /// keep the configured outlets.
    @Test(arguments: [
        // spell, max, outlets, busy → next
        (0.25, 32, 1, 0.05, 2), (0.25, 32, 2, 0.05, 4), (0.25, 32, 8, 0.05, 16), (0.25, 32, 16, 0.05, 32),
        (0.25, 32, 32, 0.05, 32), (0.25, 32, 16, 0.5, 8), (0.25, 32, 16, 4, 1), (0.25, 32, 3, 0.25, 3),
        (0.25, 32, 4, 0, 8), (0.25, 8, 8, 0.01, 8), (0, 32, 1, 5, 32), (0.25, 500, 500, 60, 500),
    ])
    func sizesChunksToTheSpell(_ c: (Double, Int, Int, Double, Int)) {
        let pacer = CompactionPacer(duty: 0.5, yieldSeconds: 0.25, spellSeconds: c.0)
        #expect(pacer.nextChunk(outlets: c.2, busy: c.3, maxOutlets: c.1) == c.4)
    }

    @Test func theFirstChunkIsOneOutletWhenSized() {
        #expect(CompactionPacer(duty: 1, yieldSeconds: 0, spellSeconds: 0.25).firstChunk(maxOutlets: 32) == 1)
        #expect(CompactionPacer(duty: 1, yieldSeconds: 0, spellSeconds: 0).firstChunk(maxOutlets: 32) == 32)
        #expect(CompactionPacer(duty: 1, yieldSeconds: 0, spellSeconds: 0.25).firstChunk(maxOutlets: 500) == 500)
    }
}
