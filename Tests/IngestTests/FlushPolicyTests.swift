import Foundation
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

/// When the writer ends a batch and how much it reads next (``FlushPolicy``), as tables.
@Suite struct FlushPolicyTests {
    static let policy = FlushPolicy(maxRows: 1_000, maxDelay: 0.01, recordsPerRead: 100, holdWindow: 1)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// (case, state, flush?)
    static let flushCases: [(String, FlushPolicy.State, Bool)] = [
        ("empty batch", .init(), false),
        ("empty batch at the end of the spool", .init(drained: true), false),
        ("young batch", .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.005)), false),
        ("delay passed", .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.02)), true),
        (
            "delay passed but more is waiting: take it in first",
            .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-1), lastReadWasFull: true),
            false
        ),
        (
            "full, more waiting", .init(rows: 1_000, hasMessages: true, oldestReceivedAt: now, lastReadWasFull: true),
            true
        ),
        ("drained at shutdown", .init(rows: 1, hasMessages: true, oldestReceivedAt: now, drained: true), true),
        (
            "only rejections and ignored messages still end",
            .init(rows: 0, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-1)), true
        ),
        (
            "a poll open: not even when full",
            .init(rows: 2_000, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-5), holdingSince: now),
            false
        ),
        (
            "a poll open at the end of the spool",
            .init(rows: 2, hasMessages: true, oldestReceivedAt: now, drained: true, holdingSince: now), false
        ),
    ]

    @Test(arguments: flushCases)
    func decidesWhenToWrite(name: String, state: FlushPolicy.State, flush: Bool) {
        #expect(Self.policy.shouldFlush(state, now: Self.now) == flush, "\(name)")
    }

    /// (case, state, records, wait until seconds after now)
    static let readCases: [(String, FlushPolicy.State, Int, Double)] = [
        ("idle: a slice, half a second", .init(), 100, 0.5),
        ("a batch begun: until its delay", .init(rows: 3, hasMessages: true, oldestReceivedAt: now), 100, 0.01),
        ("near full: only the room left", .init(rows: 960, hasMessages: true, oldestReceivedAt: now), 40, 0.01),
        ("full: one at a time", .init(rows: 1_200, hasMessages: true, oldestReceivedAt: now), 1, 0.01),
        (
            "held by a poll: one at a time, up to the window",
            .init(rows: 3, hasMessages: true, oldestReceivedAt: now, holdingSince: now.addingTimeInterval(-0.25)),
            1, 0.75
        ),
    ]

    @Test(arguments: readCases)
    func decidesWhatToReadNext(name: String, state: FlushPolicy.State, records: Int, waitSeconds: Double) {
        let next = Self.policy.nextRead(state, now: Self.now)
        #expect(next.records == records, "\(name)")
        #expect(abs(next.waitUntil.timeIntervalSince(Self.now) - waitSeconds) < 1e-6, "\(name)")
    }

    /// (case, state, give up?)
    static let holdCases: [(String, FlushPolicy.State, Bool)] = [
        ("no poll", .init(), false),
        ("a poll for 0.5 s", .init(holdingSince: now.addingTimeInterval(-0.5)), false),
        ("polls for a whole window", .init(holdingSince: now.addingTimeInterval(-1)), true),
        ("the spool drained", .init(drained: true, holdingSince: now), true),
    ]

    @Test(arguments: holdCases)
    func givesUpHeldPollsAfterAWindow(name: String, state: FlushPolicy.State, giveUp: Bool) {
        #expect(Self.policy.shouldGiveUpHeldPolls(state, now: Self.now) == giveUp, "\(name)")
    }

    /// The defaults' shape: a batch of fewer than 100 rows waits up to 100 ms, a larger one 10 ms.
    static let slowFleet = FlushPolicy(
        maxRows: 1_000, maxDelay: 0.01, minRows: 100, smallBatchDelay: 0.1, recordsPerRead: 100, holdWindow: 1)

    /// (case, policy, state, flush?)
    static let smallBatchCases: [(String, FlushPolicy, FlushPolicy.State, Bool)] = [
        (
            "under batch_min_rows when batch_max_delay passed: waits for more", slowFleet,
            .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.02)), false
        ),
        (
            "under batch_min_rows when its own delay passed", slowFleet,
            .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.1)), true
        ),
        (
            "batch_min_rows reached: batch_max_delay", slowFleet,
            .init(rows: 100, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.011)), true
        ),
        (
            "batch_min_rows reached, batch_max_delay not passed", slowFleet,
            .init(rows: 400, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.005)), false
        ),
        (
            "only rejections wait as a small batch", slowFleet,
            .init(rows: 0, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.05)), false
        ),
        (
            "small, but more is waiting: take it in first", slowFleet,
            .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-1), lastReadWasFull: true),
            false
        ),
        (
            "small, drained at shutdown", slowFleet,
            .init(rows: 1, hasMessages: true, oldestReceivedAt: now, drained: true), true
        ),
        (
            "a small batch's delay under batch_max_delay: batch_max_delay holds",
            FlushPolicy(maxRows: 1_000, maxDelay: 0.01, minRows: 100, smallBatchDelay: 0.001),
            .init(rows: 5, hasMessages: true, oldestReceivedAt: now.addingTimeInterval(-0.005)), false
        ),
    ]

    @Test(arguments: smallBatchCases)
    func smallBatchesWaitLonger(name: String, policy: FlushPolicy, state: FlushPolicy.State, flush: Bool) {
        #expect(policy.shouldFlush(state, now: Self.now) == flush, "\(name)")
    }

    /// (case, state, wait until seconds after now)
    static let smallBatchReadCases: [(String, FlushPolicy.State, Double)] = [
        ("a small batch: until its own delay", .init(rows: 3, hasMessages: true, oldestReceivedAt: now), 0.1),
        (
            "batch_min_rows reached: until batch_max_delay", .init(rows: 150, hasMessages: true, oldestReceivedAt: now),
            0.01
        ),
        ("idle: half a second", .init(), 0.5),
    ]

    @Test(arguments: smallBatchReadCases)
    func aSmallBatchReadsUntilItsOwnDelay(name: String, state: FlushPolicy.State, waitSeconds: Double) {
        let next = Self.slowFleet.nextRead(state, now: Self.now)
        #expect(abs(next.waitUntil.timeIntervalSince(Self.now) - waitSeconds) < 1e-6, "\(name)")
    }
}
