import Foundation

/// The progress of a long job (`outletd rollup rebuild`) and what to show of it: a bar with the time left on a
/// terminal, a line now and then otherwise (a log, a pipe, the journal). Pure: the caller passes the clock.
public struct ProgressEstimate: Sendable, Equatable {
    /// The work in total and done so far, in the job's own unit (seconds of samples for a rebuild).
    public let total: Double
    public private(set) var done: Double = 0
    public let startedAt: Date
    /// When ``shouldLog(at:)`` last said yes.
    public private(set) var loggedAt: Date?

    public init(total: Double, startedAt: Date) {
        self.total = max(0, total)
        self.startedAt = startedAt
    }

    public mutating func advance(to done: Double) {
        self.done = min(total, max(self.done, done))
    }

    /// 0…1; 1 for a job with nothing to do.
    public var fraction: Double { total > 0 ? done / total : 1 }

    /// Seconds left at the rate so far, or nil before there is a rate.
    public func secondsLeft(at now: Date) -> Double? {
        let elapsed = now.timeIntervalSince(startedAt)
        guard done > 0, elapsed > 0 else { return nil }
        return (total - done) / (done / elapsed)
    }

    /// `1h02m`, `3m05s`, `42s`.
    public static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        if whole >= 3_600 { return String(format: "%dh%02dm", whole / 3_600, whole % 3_600 / 60) }
        if whole >= 60 { return String(format: "%dm%02ds", whole / 60, whole % 60) }
        return "\(whole)s"
    }

    /// `[##########··········]  50%  ETA 42s`: the line a terminal redraws.
    public func bar(width: Int = 30, at now: Date) -> String {
        let filled = min(width, Int((fraction * Double(width)).rounded(.down)))
        let percent = Int((fraction * 100).rounded(.down))
        let eta = fraction >= 1 ? "done" : secondsLeft(at: now).map { "ETA \(Self.duration($0))" } ?? "ETA …"
        return "[" + String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled) + "] "
            + String(repeating: " ", count: max(0, 3 - String(percent).count)) + "\(percent)%  \(eta)"
    }

    /// `50% done, about 42s left`: the periodic line without a terminal.
    public func line(at now: Date) -> String {
        let percent = Int((fraction * 100).rounded(.down))
        guard fraction < 1 else { return "100% done in \(Self.duration(now.timeIntervalSince(startedAt)))" }
        return "\(percent)% done" + (secondsLeft(at: now).map { ", about \(Self.duration($0)) left" } ?? "")
    }

    /// Whether a line is due: every `interval` seconds, and at the end.
    public mutating func shouldLog(at now: Date, interval: Double = 10) -> Bool {
        if fraction >= 1 || now.timeIntervalSince(loggedAt ?? startedAt) >= interval {
            loggedAt = now
            return true
        }
        return false
    }
}
