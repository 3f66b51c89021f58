import Foundation
import Protocols

/// When the writer ends a batch and how much it reads next: a pure value, consulted by ``BatchWriter``'s
/// loop after every read. The loop only does what it says (reads the spool, writes a batch), so the policy
/// is tested with tables, without a spool or a database.
///
/// A batch is written when it holds `maxRows` rows; when its oldest message has waited `maxDelay`, it
/// holds at least `minRows` rows and no more is waiting; when its oldest has waited `smallBatchDelay`
/// (a slow fleet's batch, fewer rows) and no more is waiting; or when the spool is drained at shutdown;
/// never while a reading spread over several messages (a Shelly Gen1 poll) waits for its other half,
/// except that such polls are given up after `holdWindow` of wall-clock time.
///
/// Why small batches wait longer: a transaction costs PostgreSQL and outletd a few milliseconds of CPU
/// whatever it holds, so a fleet sending 100 readings/s, written every `maxDelay` (10 ms), spent half a
/// core on a couple of rows a batch (docs/PERFORMANCE.md, "Design decisions the figures led to"). A
/// batch of `minRows` comes every `maxDelay` only at 10,000 readings/s and more, where the latency
/// from receipt to commit stays what `maxDelay` makes it.
public struct FlushPolicy: Sendable, Equatable {
    /// `ingest.batch_max_rows`.
    public var maxRows: Int
    /// `ingest.batch_max_delay_ms`, in seconds.
    public var maxDelay: Double
    /// `ingest.batch_min_rows`: a batch with fewer rows waits up to `smallBatchDelay` instead.
    public var minRows: Int
    /// `ingest.small_batch_max_delay_ms`, in seconds (at least `maxDelay` in effect).
    public var smallBatchDelay: Double
    /// Records taken from the spool per read: a batch of many thousand rows never holds its raw messages
    /// at once.
    public var recordsPerRead: Int
    /// How long open polls may hold a batch back, seconds (`ShellyGen1Polls.window`).
    public var holdWindow: Double

    public init(
        maxRows: Int, maxDelay: Double, minRows: Int = 1, smallBatchDelay: Double = 0, recordsPerRead: Int = 1_000,
        holdWindow: Double = 1
    ) {
        self.maxRows = maxRows
        self.maxDelay = maxDelay
        self.minRows = minRows
        self.smallBatchDelay = smallBatchDelay
        self.recordsPerRead = recordsPerRead
        self.holdWindow = holdWindow
    }

    /// What the loop knows after a read.
    public struct State: Sendable, Equatable {
        /// Rows the batch writes or counts.
        public var rows = 0
        /// Whether the batch holds any message.
        public var hasMessages = false
        /// When the batch's oldest message was received (the delay counts from there).
        public var oldestReceivedAt: Date?
        /// Whether the last read filled the room it was given: more is waiting in the spool.
        public var lastReadWasFull = false
        /// Whether the spool's intake stopped and everything in it has been read.
        public var drained = false
        /// Since when polls have been open without a break; nil while none is.
        public var holdingSince: Date?

        public init(
            rows: Int = 0, hasMessages: Bool = false, oldestReceivedAt: Date? = nil, lastReadWasFull: Bool = false,
            drained: Bool = false, holdingSince: Date? = nil
        ) {
            self.rows = rows
            self.hasMessages = hasMessages
            self.oldestReceivedAt = oldestReceivedAt
            self.lastReadWasFull = lastReadWasFull
            self.drained = drained
            self.holdingSince = holdingSince
        }
    }

    /// The next read: how many records at most, and until when to wait for the first of them.
    public func nextRead(_ state: State, now: Date) -> (records: Int, waitUntil: Date) {
        var deadline =
            state.oldestReceivedAt.map { $0.addingTimeInterval(delay(forRows: state.rows)) }
            ?? now.addingTimeInterval(0.5)
        if let holdingSince = state.holdingSince {
            // Held open by a poll: one record at a time, to end at the first moment no poll is open.
            deadline = max(deadline, holdingSince.addingTimeInterval(holdWindow))
            return (1, deadline)
        }
        return (min(recordsPerRead, max(1, maxRows - state.rows)), deadline)
    }

    /// Whether open polls have held the batch long enough (or the spool is drained): complete them now.
    public func shouldGiveUpHeldPolls(_ state: State, now: Date) -> Bool {
        guard let holdingSince = state.holdingSince else { return false }
        return state.drained || now.timeIntervalSince(holdingSince) >= holdWindow
    }

    /// Whether to write the batch now.
    public func shouldFlush(_ state: State, now: Date) -> Bool {
        guard state.hasMessages, state.holdingSince == nil else { return false }
        if state.rows >= maxRows || state.drained { return true }
        // A full read means more is waiting: take it into this batch (up to maxRows) before the delay flushes
        // it, or a backlog would be written a slice per batch.
        guard !state.lastReadWasFull, let oldest = state.oldestReceivedAt else { return false }
        return now.timeIntervalSince(oldest) >= delay(forRows: state.rows)
    }

    /// How long a batch of `rows` rows waits for more, counted from its oldest message.
    func delay(forRows rows: Int) -> Double {
        rows >= minRows ? maxDelay : max(maxDelay, smallBatchDelay)
    }
}
