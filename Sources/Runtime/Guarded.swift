import Foundation

/// State shared between threads, guarded by one mutex with a condition variable (`NSCondition`, a thin wrapper
/// of pthread's): every read and write of the state happens inside ``withLock(_:)``, and a thread can wait,
/// under the same lock, until the state is as it needs.
///
/// Where no thread ever waits, `Synchronization.Mutex` serves; this type exists for the hand-offs that wait
/// (the spool, the command inbox, stop flags). It is the one place in outletd's own code that vouches for
/// thread safety by hand (`@unchecked Sendable`): safe because `state` is private and only touched while
/// `condition` is locked, and `State` is `Sendable`, so nothing handed in or out escapes the lock unsafely.
public final class Guarded<State: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var state: State

    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the state, under the lock.
    public func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }

    /// Whom a change wakes.
    public enum Waking: Sendable {
        /// Every waiter: the default, always correct.
        case all
        /// One waiter: where every waiter waits for the same thing and one change serves one of them (a queue's
        /// item; each item added wakes one).
        case one
        /// None: the change serves no waiter (taking an item from a queue).
        case none
    }

    /// Runs `body` under the lock, then wakes the waiters (the state changed). The lock is let go first, so a
    /// woken waiter finds it free instead of sleeping again on it (waiters check their condition in a loop).
    public func update<Result, Failure: Error>(
        waking: Waking = .all, _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        condition.lock()
        defer {
            condition.unlock()
            wake(waking)
        }
        return try body(&state)
    }

    private func wake(_ waking: Waking) {
        switch waking {
        case .all: condition.broadcast()
        case .one: condition.signal()
        case .none: break
        }
    }

    /// Waits, under the lock, until `isReady` holds for the state or `deadline` passes (nil: no deadline), then
    /// runs `body` with the state (also on a time-out: `body` receives whether it is ready). Wakes other waiters
    /// when `body` may have changed the state, after letting go of the lock.
    public func wait<Result, Failure: Error>(
        until deadline: Date?, for isReady: (State) -> Bool, waking: Waking = .all,
        then body: (inout State, _ ready: Bool) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        condition.lock()
        defer {
            condition.unlock()
            wake(waking)
        }
        while !isReady(state) {
            if let deadline {
                if !condition.wait(until: deadline) { break }
            } else {
                condition.wait()
            }
        }
        return try body(&state, isReady(state))
    }
}
