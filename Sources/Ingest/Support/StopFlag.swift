import Foundation

/// A flag a thread polls to know it should stop, with a sleep that wakes early when it is set.
/// Guarded by an `NSCondition`, hence `@unchecked Sendable`.
public final class StopFlag: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    public init() {}

    public func set() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    public var isSet: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Sleeps up to `seconds`; returns true when the flag is (or became) set.
    @discardableResult
    public func sleep(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            if !condition.wait(until: deadline) { break }
        }
        return stopped
    }
}

/// Completion of a background thread that async code can await. Lock-guarded.
public final class ThreadCompletion: @unchecked Sendable {
    private let lock = NSLock()
    private var finished = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    public func markFinished() {
        lock.lock()
        finished = true
        let toResume = waiters
        waiters = []
        lock.unlock()
        for waiter in toResume { waiter.resume() }
    }

    public var isFinished: Bool {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    /// Returns once ``markFinished()`` was called.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if finished {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
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
