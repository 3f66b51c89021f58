import Foundation
import Routing
import Runtime
import Telemetry

/// The bounded hand-off from the MQTT network thread (and the NOTIFY listener) to the ``CommandRelay``.
///
/// Set requests, state and availability reports do not wait for a telemetry batch: they come here, so a switch
/// request is handled within milliseconds even while the writer is busy. A set request's MQTT callback waits
/// (up to ``commitWaitSeconds``) until the relay has committed the command, so its PUBACK leaves only once the
/// request is stored: a crash of outletd cannot lose an acknowledged request.
///
/// All state sits behind one ``Guarded`` lock with its condition.
public final class CommandInbox: Sendable {
    /// What the relay is told.
    public enum Event: Sendable {
        /// A message from `<prefix>/+/set`, `/state` or `/availability` (or a Tasmota or Shelly state, reply or
        /// announcement) with the route the MQTT callback decided; `done` is signalled once it is handled.
        case message(RawMessage, route: MessageRoute, done: Completion?)
        /// Another session changed `commands` (a NOTIFY on `outletd_commands`).
        case databaseChanged
    }

    /// A one-shot signal a callback can wait on.
    public final class Completion: Sendable {
        private let done = Guarded(false)

        init() {}

        /// Marks it done and wakes the waiter.
        public func signal() {
            done.update { $0 = true }
        }

        /// Waits until signalled or `seconds` passed; returns whether it was signalled.
        @discardableResult
        func wait(seconds: Double) -> Bool {
            done.wait(until: Date(timeIntervalSinceNow: seconds), for: { $0 }, then: { _, ready in ready })
        }
    }

    /// How long a set request's callback waits for the relay's commit. Beyond it (database down) it returns and
    /// the request stays in the inbox; keep it well below the MQTT keep-alive.
    public static let commitWaitSeconds = 5.0

    private struct State: Sendable {
        var events: [Event] = []
        var closed = false
        var wakePending = false
    }
    private let state = Guarded(State())
    /// Events the inbox holds before `append` waits.
    public let maxEvents: Int

    public init(maxEvents: Int) {
        precondition(maxEvents > 0, "CommandInbox bound must be positive")
        self.maxEvents = maxEvents
    }

    /// Adds a message (waiting while the inbox is full); for set requests (`waitForCommit`) also waits until the
    /// relay handled it. Returns false when the inbox is closed.
    @discardableResult
    public func append(_ message: RawMessage, route: MessageRoute, waitForCommit: Bool) -> Bool {
        let completion = waitForCommit ? Completion() : nil
        let maxEvents = self.maxEvents
        let added = state.wait(until: nil, for: { $0.closed || $0.events.count < maxEvents }) { state, _ in
            guard !state.closed else { return false }
            state.events.append(.message(message, route: route, done: completion))
            return true
        }
        guard added else { return false }
        completion?.wait(seconds: Self.commitWaitSeconds)
        return true
    }

    /// Tells the relay the database changed (coalesced: at most one such event waits).
    public func databaseChanged() {
        state.update { state in
            guard !state.closed && !state.wakePending else { return }
            state.wakePending = true
            state.events.append(.databaseChanged)
        }
    }

    /// Takes everything waiting; waits until something is there, the inbox is closed, or `deadline` passes.
    public func take(waitingUntil deadline: Date) -> [Event] {
        state.wait(until: deadline, for: { !$0.events.isEmpty || $0.closed }) { state, _ in
            defer {
                state.events.removeAll(keepingCapacity: true)
                state.wakePending = false
            }
            return state.events
        }
    }

    /// Puts events taken but not handled (the database failed meanwhile) back at the front, in their order.
    public func putBack(_ events: [Event]) {
        guard !events.isEmpty else { return }
        state.update { $0.events.insert(contentsOf: events, at: 0) }
    }

    /// Gives up what is left: wakes the callbacks waiting on it. For a stop while the database is away.
    public func abandon() -> Int {
        let left = state.update { state in
            defer { state.events.removeAll() }
            return state.events
        }
        for case .message(_, _, let done?) in left { done.signal() }
        return left.count
    }

    /// No more events are accepted; the relay handles what is left and stops.
    public func close() {
        state.update { $0.closed = true }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool {
        state.withLock { $0.closed }
    }

    /// Whether ``close()`` was called and every event was taken.
    public var isClosedAndDrained: Bool {
        state.withLock { $0.closed && $0.events.isEmpty }
    }
}
