import Foundation
import Runtime

/// Failures counted per key over a sliding window, in memory: how the app limits claims per owner and per client
/// address, and remembers which logins PostgreSQL's count (`app_login_failures`) already refuses so that a flood
/// of them is answered without a query.
///
/// An attempt is reserved before it runs (``reserve(_:)``) and counted as a failure unless it is forgiven
/// (``forgive(_:)``) when it succeeded: attempts made at the same moment see each other, so together they cannot get
/// past the limit. The keys are bounded (``maxKeys``): past it, the keys whose newest failure is oldest go first,
/// so a stranger inventing keys costs memory only up to the bound.
final class FailureLimiter: Sendable {
    /// One limit: at most `maxFailures` under a key of this kind within the window.
    struct Limit: Sendable {
        var kind: String
        var maxFailures: Int
    }

    /// What ``reserve(_:)`` returned: the reservation to forgive on success, or how long to wait.
    enum Reservation: Sendable {
        case granted(Ticket)
        case refused(retryAfterSeconds: Int, kind: String)
    }

    /// A reserved attempt: the keys it counts under and when.
    struct Ticket: Sendable {
        let keys: [String]
        let at: Date
    }

    let windowSeconds: Double
    let maxKeys: Int
    private let failures = Guarded([String: [Date]]())

    init(windowSeconds: Double, maxKeys: Int = 100_000) {
        self.windowSeconds = windowSeconds
        self.maxKeys = maxKeys
    }

    /// Counts an attempt under each `(limit, key)`, unless one of them is already at its limit: then nothing is
    /// counted and the attempt is refused with the seconds until the oldest failure under that key leaves the
    /// window.
    func reserve(_ keys: [(Limit, String)], now: Date = Date()) -> Reservation {
        let horizon = now.addingTimeInterval(-windowSeconds)
        return failures.withLock { failures in
            for (limit, key) in keys {
                let recent = (failures[key] ?? []).filter { $0 > horizon }
                failures[key] = recent.isEmpty ? nil : recent
                if recent.count >= limit.maxFailures, let oldest = recent.first {
                    let wait = oldest.timeIntervalSince(horizon)
                    return .refused(retryAfterSeconds: max(1, Int(wait.rounded(.up))), kind: limit.kind)
                }
            }
            for (_, key) in keys { failures[key, default: []].append(now) }
            if failures.count > maxKeys { Self.evict(&failures, keeping: maxKeys * 9 / 10, horizon: horizon) }
            return .granted(Ticket(keys: keys.map(\.1), at: now))
        }
    }

    /// Takes back a reserved attempt: it succeeded, or it was refused for a reason that is not a failure.
    func forgive(_ ticket: Ticket) {
        failures.withLock { failures in
            for key in ticket.keys {
                guard var times = failures[key], let index = times.lastIndex(of: ticket.at) else { continue }
                times.remove(at: index)
                failures[key] = times.isEmpty ? nil : times
            }
        }
    }

    /// Forgets every failure under `key` (a login succeeded from there).
    func clear(_ key: String) {
        failures.withLock { $0[key] = nil }
    }

    /// Marks `key` as at its limit until `seconds` from now (PostgreSQL's count said so).
    func block(_ key: String, limit: Limit, forSeconds seconds: Int, now: Date = Date()) {
        let start = now.addingTimeInterval(Double(seconds) - windowSeconds)
        failures.withLock { failures in
            failures[key] = Array(repeating: start, count: limit.maxFailures)
        }
    }

    /// Failures under `key` within the window (for tests and metrics).
    func count(_ key: String, now: Date = Date()) -> Int {
        let horizon = now.addingTimeInterval(-windowSeconds)
        return failures.withLock { ($0[key] ?? []).filter { $0 > horizon }.count }
    }

    private static func evict(_ failures: inout [String: [Date]], keeping count: Int, horizon: Date) {
        failures = failures.filter { $0.value.last.map { $0 > horizon } ?? false }
        guard failures.count > count else { return }
        let newest = failures.sorted { ($0.value.last ?? .distantPast) > ($1.value.last ?? .distantPast) }
        failures = Dictionary(uniqueKeysWithValues: newest.prefix(count).map { ($0.key, $0.value) })
    }
}
