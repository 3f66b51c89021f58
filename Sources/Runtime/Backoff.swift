/// Capped exponential backoff with jitter: 0.5 s, 1 s, 2 s, … up to `maximum` seconds.
public struct Backoff: Sendable {
    public let initial: Double
    public let maximum: Double
    private var attempt = 0

    public init(initial: Double = 0.5, maximum: Double = 30) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The delay before the next attempt, seconds; each call doubles it up to the cap.
    public mutating func nextDelay() -> Double {
        let base = min(maximum, initial * Double(1 << min(attempt, 30)))
        attempt += 1
        // ±20 % jitter so many instances do not reconnect in lockstep.
        return min(maximum, base * Double.random(in: 0.8...1.2))
    }

    /// After a success: start again from `initial`.
    public mutating func reset() { attempt = 0 }

    /// Failed attempts since the last reset.
    public var attempts: Int { attempt }
}
