import Foundation
import Telemetry

/// Decides which rejections are logged: the first of each reason at once, then at most one line
/// per reason every `interval`, which says how many were suppressed meanwhile. A flood of bad
/// messages cannot flood the log; every rejection is still counted (metrics, `rejection_counts`).
public struct RejectionLogLimiter: Sendable {
    public let interval: Double
    private var lastLogged: [RejectionReason: Date] = [:]
    private var suppressed: [RejectionReason: Int] = [:]

    public init(interval: Double) {
        self.interval = interval
    }

    /// Returns nil when this rejection must not be logged now, else the number of rejections of
    /// the same reason suppressed since the last line.
    public mutating func shouldLog(_ reason: RejectionReason, at now: Date) -> Int? {
        if let last = lastLogged[reason], now.timeIntervalSince(last) < interval {
            suppressed[reason, default: 0] += 1
            return nil
        }
        lastLogged[reason] = now
        return suppressed.removeValue(forKey: reason) ?? 0
    }
}
