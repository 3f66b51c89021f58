import Foundation
import Runtime

/// The marker a stopping instance publishes to itself (``TopicPolicy/drainTopic``) and waits for: set by
/// the MQTT callback when it arrives, awaited by the shutdown path.
final class DrainMarker: Sendable {
    private struct State: Sendable {
        var expected: [UInt8]?
        var seen = false
    }
    private let state = Guarded(State())

    /// The payload the next ``wait(seconds:)`` waits for.
    func expect(_ token: String) {
        state.update { $0 = State(expected: Array(token.utf8), seen: false) }
    }

    /// A message arrived on the drain topic (only the expected marker counts).
    func arrived(_ payload: [UInt8]) {
        state.update { state in
            if payload == state.expected { state.seen = true }
        }
    }

    /// Waits until the expected marker arrived; false after `seconds`. Blocking.
    func wait(seconds: Double) -> Bool {
        state.wait(until: Date(timeIntervalSinceNow: seconds), for: \.seen) { _, ready in ready }
    }
}
