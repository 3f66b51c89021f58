import Foundation

/// Runs blocking work (libpq, file I/O) on a thread of its own and awaits its result, so that
/// Swift's cooperative thread pool (two threads on a 2-core machine) is never blocked.
public enum Blocking {
    public static func run<T: Sendable>(_ name: String = "outletd-blocking", _ body: @escaping @Sendable () throws -> T)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
