import Foundation

/// The marker a stopping instance publishes to itself (``IngestService/drainTopic``) and waits for: set by
/// the MQTT callback when it arrives, awaited by the shutdown path. An `NSCondition` guards it, hence
/// `@unchecked Sendable`.
final class DrainMarker: @unchecked Sendable {
    private let condition = NSCondition()
    private var expected: [UInt8]?
    private var seen = false

    /// The payload the next ``wait(seconds:)`` waits for.
    func expect(_ token: String) {
        condition.withLock {
            expected = Array(token.utf8)
            seen = false
        }
    }

    /// A message arrived on the drain topic (only the expected marker counts).
    func arrived(_ payload: [UInt8]) {
        condition.withLock {
            guard payload == expected else { return }
            seen = true
            condition.broadcast()
        }
    }

    /// Waits until the expected marker arrived; false after `seconds`. Blocking.
    func wait(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !seen {
            if !condition.wait(until: deadline) { return seen }
        }
        return true
    }
}
