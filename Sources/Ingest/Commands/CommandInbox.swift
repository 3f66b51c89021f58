import Foundation

/// The bounded hand-off from the MQTT network thread (and the NOTIFY listener) to the ``CommandRelay``.
///
/// Set requests, state and availability reports do not wait for a telemetry batch: they come here, so a switch
/// request is handled within milliseconds even while the writer is busy. A set request's MQTT callback waits
/// (up to ``commitWaitSeconds``) until the relay has committed the command, so its PUBACK leaves only once the
/// request is stored: a crash of outletd cannot lose an acknowledged request.
///
/// All state sits behind one `NSCondition`, hence `@unchecked Sendable`.
public final class CommandInbox: @unchecked Sendable {
    /// What the relay is told.
    public enum Event: Sendable {
        /// A message from `<prefix>/+/set`, `/state` or `/availability`; `done` is signalled once it is handled.
        case message(RawMessage, done: Completion?)
        /// Another session changed `commands` (a NOTIFY on `outletd_commands`).
        case databaseChanged
    }

    /// A one-shot signal a callback can wait on.
    public final class Completion: @unchecked Sendable {
        private let condition = NSCondition()
        private var done = false

        init() {}

        /// Marks it done and wakes the waiter.
        public func signal() {
            condition.lock()
            done = true
            condition.broadcast()
            condition.unlock()
        }

        /// Waits until signalled or `seconds` passed; returns whether it was signalled.
        @discardableResult
        func wait(seconds: Double) -> Bool {
            let deadline = Date(timeIntervalSinceNow: seconds)
            condition.lock()
            defer { condition.unlock() }
            while !done {
                if !condition.wait(until: deadline) { break }
            }
            return done
        }
    }

    /// How long a set request's callback waits for the relay's commit. Beyond it (database down) it returns and
    /// the request stays in the inbox; keep it well below the MQTT keep-alive.
    public static let commitWaitSeconds = 5.0

    private let condition = NSCondition()
    private var events: [Event] = []
    private var closed = false
    private var wakePending = false
    /// Events the inbox holds before `append` waits.
    public let maxEvents: Int

    public init(maxEvents: Int) {
        precondition(maxEvents > 0, "CommandInbox bound must be positive")
        self.maxEvents = maxEvents
    }

    /// Adds a message (waiting while the inbox is full); for set requests (`waitForCommit`) also waits until the
    /// relay handled it. Returns false when the inbox is closed.
    @discardableResult
    public func append(_ message: RawMessage, waitForCommit: Bool) -> Bool {
        let completion = waitForCommit ? Completion() : nil
        condition.lock()
        while !closed && events.count >= maxEvents {
            condition.wait()
        }
        guard !closed else {
            condition.unlock()
            return false
        }
        events.append(.message(message, done: completion))
        condition.broadcast()
        condition.unlock()
        completion?.wait(seconds: Self.commitWaitSeconds)
        return true
    }

    /// Tells the relay the database changed (coalesced: at most one such event waits).
    public func databaseChanged() {
        condition.lock()
        defer { condition.unlock() }
        guard !closed && !wakePending else { return }
        wakePending = true
        events.append(.databaseChanged)
        condition.broadcast()
    }

    /// Takes everything waiting; waits until something is there, the inbox is closed, or `deadline` passes.
    public func take(waitingUntil deadline: Date) -> [Event] {
        condition.lock()
        defer { condition.unlock() }
        while events.isEmpty && !closed {
            if !condition.wait(until: deadline) { break }
        }
        let taken = events
        events.removeAll(keepingCapacity: true)
        wakePending = false
        condition.broadcast()
        return taken
    }

    /// No more events are accepted; the relay handles what is left and stops.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// Whether ``close()`` was called and every event was taken.
    public var isClosedAndDrained: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed && events.isEmpty
    }
}
