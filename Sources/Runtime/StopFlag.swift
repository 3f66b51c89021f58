import Foundation

/// A flag a thread polls to know it should stop, with a sleep that wakes early when it is set.
public final class StopFlag: Sendable {
    private let stopped = Guarded(false)

    public init() {}

    public func set() {
        stopped.update { $0 = true }
    }

    public var isSet: Bool {
        stopped.withLock { $0 }
    }

    /// Sleeps up to `seconds`; returns true when the flag is (or became) set.
    @discardableResult
    public func sleep(seconds: Double) -> Bool {
        stopped.wait(until: Date(timeIntervalSinceNow: seconds), for: { $0 }, then: { _, ready in ready })
    }
}

/// Completion of a background thread that async code can await.
public final class ThreadCompletion: Sendable {
    private struct State: Sendable {
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Guarded(State())

    public init() {}

    public func markFinished() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public var isFinished: Bool {
        state.withLock { $0.finished }
    }

    /// Returns once ``markFinished()`` was called.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state in
                if !state.finished { state.waiters.append(continuation) }
                return state.finished
            }
            if finished { continuation.resume() }
        }
    }
}

/// A named thread that runs a loop until asked to stop, and that async code can wait for: the
/// start/stop of every background worker with a connection of its own (registry listener, command
/// listener, maintenance).
public final class WorkerThread: Sendable {
    /// Set by ``stop()``; the loop polls it (and sleeps on it).
    public let stopFlag = StopFlag()
    private let completion = ThreadCompletion()
    private let name: String

    public init(name: String) {
        self.name = name
    }

    /// Starts the thread running `loop`.
    public func start(_ loop: @escaping @Sendable () -> Void) {
        let completion = self.completion
        let thread = Thread {
            loop()
            completion.markFinished()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the loop to stop and waits until it has returned.
    public func stop() async {
        stopFlag.set()
        await completion.wait()
    }
}
