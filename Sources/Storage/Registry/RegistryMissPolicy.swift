import Foundation

/// When the writer or the command relay may ask the database about a code the in-memory registry does not know.
///
/// LISTEN/NOTIFY brings a newly registered outlet into the registry within a second; a direct
/// look-up closes that gap. It is bounded, so a flood of unknown codes cannot turn into a flood
/// of queries: at most `lookupsPerSecond` (a token bucket), and the same code at most once per
/// `negativeSeconds`.
public struct RegistryMissPolicy: Sendable {
    public let lookupsPerSecond: Double
    public let negativeSeconds: Double
    private var tokens: Double
    private var refilledAt: Date?
    private var recent: [String: Date] = [:]

    public init(lookupsPerSecond: Double, negativeSeconds: Double) {
        self.lookupsPerSecond = lookupsPerSecond
        self.negativeSeconds = negativeSeconds
        self.tokens = lookupsPerSecond
    }

    public mutating func shouldLookUp(_ code: String, at now: Date) -> Bool {
        if let refilledAt {
            tokens = min(lookupsPerSecond, tokens + now.timeIntervalSince(refilledAt) * lookupsPerSecond)
        }
        refilledAt = now
        if let last = recent[code], now.timeIntervalSince(last) < negativeSeconds { return false }
        guard tokens >= 1 else { return false }
        tokens -= 1
        if recent.count > 10_000 { recent = recent.filter { now.timeIntervalSince($0.value) < negativeSeconds } }
        recent[code] = now
        return true
    }
}
