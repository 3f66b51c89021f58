import CMosquitto
import Foundation
import Synchronization

/// Everything about one ``MQTTClient`` that changes while it runs: lifecycle phase, connection flag,
/// subscriptions, waiters, counters and event subscribers. It is also the object libmosquitto's callbacks
/// receive as `obj` (see `MQTTClient+Callbacks.swift`).
///
/// `@unchecked Sendable` because every mutable stored property lives in ``State`` and is only touched
/// inside ``withLock(_:)`` (or the condition waits), which hold `condition`'s mutex, or is an atomic counter.
/// Continuations are resumed and callbacks called *after* the lock is released, so user code never runs under it.
final class ClientState: @unchecked Sendable {
    enum Phase: Equatable {
        case idle
        case running
        case stopping
        case stopped
    }

    struct State {
        var phase: Phase = .idle
        var isConnected = false
        /// Successful connections so far (the network loop's reconnect backoff starts over after one).
        var connections: UInt64 = 0
        var subscriptions: [(filter: String, qos: Int)] = []
        /// Filters removed while disconnected; unsubscribed on the next connect (the broker's stored
        /// session still has them).
        var pendingUnsubscribes: Set<String> = []
        var nextID: UInt64 = 0
        var eventContinuations: [UInt64: AsyncStream<MQTTConnectionEvent>.Continuation] = [:]
        var connectWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// Waiter ids whose timeout or cancellation came before they were registered.
        var abandonedConnectWaiters: Set<UInt64> = []
        var acknowledgementWaiters: [Int32: CheckedContinuation<Result<Void, MQTTError>, Never>] = [:]
        /// Acknowledgements (mid → reason code) that arrived while a `publishAcknowledged` call had not yet
        /// learnt its mid from `mosquitto_publish`; only recorded while such calls are in progress.
        var earlyAcknowledgements: [Int32: Int32] = [:]
        var publishesAwaitingMid = 0
        var acknowledgedCount: UInt64 = 0
        /// While a thread waits in ``waitUntilAcknowledged(atLeast:deadline:)``: the count it waits for (the
        /// acknowledgement that reaches it wakes the waiters; no other acknowledgement pays for a wake-up).
        var acknowledgementTarget: UInt64 = .max
        var onAcknowledged: (@Sendable (Int32) -> Void)?
        var lastConnectionError: MQTTError?
        /// Set when `on_connect` reported a refused CONNACK, so the `on_disconnect` that follows does not
        /// report the same failed attempt again.
        var attemptFailureReported = false
    }

    let configuration: MQTTConfiguration
    let onMessage: @Sendable (MQTTMessage) -> Void
    /// Called on the network thread after each read of the socket, before anything is written.
    let onReadEnd: (@Sendable () -> Void)?
    /// Serialises `start()` and `stop()`; held across libmosquitto calls that may block (connect, join),
    /// never taken by the network thread.
    let lifecycleLock = NSLock()
    /// Messages handed to `onMessage`. Counted by the network thread for every message, so without the lock.
    let receivedCount = Atomic<UInt64>(0)
    /// Messages delivered plus publishes acknowledged: how the network loop tells whether a read handled a packet.
    let packetsHandled = Atomic<UInt64>(0)
    private let condition = NSCondition()
    private var state = State()

    init(
        configuration: MQTTConfiguration, onMessage: @escaping @Sendable (MQTTMessage) -> Void,
        onReadEnd: (@Sendable () -> Void)? = nil
    ) {
        self.configuration = configuration
        self.onMessage = onMessage
        self.onReadEnd = onReadEnd
    }

    /// Runs `body` with the state locked. `body` must not call out to user code or libmosquitto.
    func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    /// Like ``withLock(_:)`` and wakes blocking waiters afterwards (connection state changed).
    func withLockBroadcasting<Result>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&state)
    }

    /// Blocks the calling thread until connected, stopped or `deadline`; returns whether connected.
    func waitUntilConnected(deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !state.isConnected && state.phase != .stopped && state.phase != .stopping {
            if !condition.wait(until: deadline) { break }
        }
        return state.isConnected
    }

    /// Blocks the calling thread until at least `count` publishes were acknowledged, the client stops or
    /// `deadline`; returns the acknowledged count.
    func waitUntilAcknowledged(atLeast count: UInt64, deadline: Date) -> UInt64 {
        condition.lock()
        defer {
            state.acknowledgementTarget = .max
            condition.unlock()
        }
        while state.acknowledgedCount < count && state.phase != .stopped && state.phase != .stopping {
            state.acknowledgementTarget = count
            if !condition.wait(until: deadline) { break }
        }
        return state.acknowledgedCount
    }

    // MARK: Events

    /// Sends `event` to every current ``MQTTClient/events`` stream. Call without the lock held.
    func emit(_ event: MQTTConnectionEvent) {
        let continuations = withLock { Array($0.eventContinuations.values) }
        for continuation in continuations {
            continuation.yield(event)
        }
    }

    func makeEventStream() -> AsyncStream<MQTTConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: MQTTConnectionEvent.self, bufferingPolicy: .bufferingNewest(1_024))
        let registered: Bool = withLock { state in
            guard state.phase != .stopped else { return false }
            let id = state.nextID
            state.nextID += 1
            state.eventContinuations[id] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.withLock { _ = $0.eventContinuations.removeValue(forKey: id) }
            }
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    // MARK: Waiters

    /// Registers an async connection waiter, or resumes it at once when the outcome is already known.
    func addConnectWaiter(id: UInt64, _ continuation: CheckedContinuation<Bool, Never>) {
        let immediate: Bool? = withLock { state in
            if state.isConnected { return true }
            if state.phase == .stopping || state.phase == .stopped { return false }
            if state.abandonedConnectWaiters.remove(id) != nil { return false }
            state.connectWaiters[id] = continuation
            return nil
        }
        if let immediate { continuation.resume(returning: immediate) }
    }

    /// Gives up on a connection waiter (timeout or cancellation).
    func abandonConnectWaiter(id: UInt64) {
        let continuation: CheckedContinuation<Bool, Never>? = withLock { state in
            if let continuation = state.connectWaiters.removeValue(forKey: id) { return continuation }
            state.abandonedConnectWaiters.insert(id)
            return nil
        }
        continuation?.resume(returning: false)
    }

    func forgetAbandonedConnectWaiter(id: UInt64) {
        withLock { _ = $0.abandonedConnectWaiters.remove(id) }
    }

    /// Called after `mosquitto_publish` returned `mid` for a `publishAcknowledged` call.
    func addAcknowledgementWaiter(
        mid: Int32, _ continuation: CheckedContinuation<Result<Void, MQTTError>, Never>
    ) {
        let immediate: Result<Void, MQTTError>? = withLock { state in
            state.publishesAwaitingMid -= 1
            defer {
                if state.publishesAwaitingMid == 0 { state.earlyAcknowledgements.removeAll() }
            }
            if let reasonCode = state.earlyAcknowledgements.removeValue(forKey: mid) {
                return Self.acknowledgementResult(mid: mid, reasonCode: reasonCode)
            }
            if state.phase == .stopping || state.phase == .stopped {
                return .failure(
                    MQTTError(code: .stopped, message: "the client was stopped before message \(mid) was acknowledged"))
            }
            state.acknowledgementWaiters[mid] = continuation
            return nil
        }
        if let immediate { continuation.resume(returning: immediate) }
    }

    static func acknowledgementResult(mid: Int32, reasonCode: Int32) -> Result<Void, MQTTError> {
        guard reasonCode >= 0x80 else { return .success(()) }
        return .failure(
            MQTTError(reasonCode: reasonCode, context: "the broker rejected message \(mid)", code: .library))
    }

    // MARK: Stop

    /// Marks the client stopping and returns the phase it was in.
    func beginStopping() -> Phase {
        withLockBroadcasting { state in
            let previous = state.phase
            if previous != .stopped { state.phase = .stopping }
            return previous
        }
    }

    /// Final step of `stop()`, after the network thread has been joined: fails all waiters and ends all
    /// event streams.
    func finishStopping() {
        let (connectWaiters, acknowledgementWaiters, streams) = withLockBroadcasting { state in
            state.phase = .stopped
            state.isConnected = false
            let result = (
                Array(state.connectWaiters.values), Array(state.acknowledgementWaiters.values),
                Array(state.eventContinuations.values)
            )
            state.connectWaiters.removeAll()
            state.acknowledgementWaiters.removeAll()
            state.eventContinuations.removeAll()
            return result
        }
        for waiter in connectWaiters {
            waiter.resume(returning: false)
        }
        let stopped = MQTTError(code: .stopped, message: "the client was stopped before the broker acknowledged")
        for waiter in acknowledgementWaiters {
            waiter.resume(returning: .failure(stopped))
        }
        for stream in streams {
            stream.finish()
        }
    }
}
