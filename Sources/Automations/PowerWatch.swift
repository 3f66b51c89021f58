import Foundation
import Telemetry

/// A reading as power rules see it: when it was measured and the power.
public struct PowerReading: Sendable, Equatable {
    public var at: Date
    public var watts: Double

    public init(at: Date, watts: Double) {
        self.at = at
        self.watts = watts
    }
}

/// How an over-power or idle rule follows one outlet's readings (docs/AUTOMATIONS.md, "Power rules").
///
/// A *run* starts at the first reading that meets the condition (power ≥ W for over-power, ≤ W for idle) after one
/// that did not, and ends at the next reading that does not. The rule is met at the first reading of a run measured
/// at least `holdSeconds` after the run's start: that reading is "the reading that met it". A run fires once, however
/// long it lasts; the next run can fire again. The power between two readings is taken to be the earlier one's, so
/// the rule needs a reading at or after the hold to be met: a silent outlet never meets a rule.
///
/// Pure and persisted as three instants, the rule's `watch_run_start`, `watch_seen_until` and `watch_fired_run` in
/// `automations`, so any instance can continue where another stopped.
public struct PowerWatch: Sendable, Equatable {
    /// The condition a reading meets.
    public enum Condition: Sendable, Equatable {
        case atLeast(Double)
        case atMost(Double)

        public func isMet(by watts: Double) -> Bool {
            switch self {
            case .atLeast(let limit): watts >= limit
            case .atMost(let limit): watts <= limit
            }
        }
    }

    /// The first reading of the current run (nil: the last reading did not meet the condition).
    public var runStart: Date?
    /// The newest reading followed.
    public var seenUntil: Date?
    /// The start of the run that fired last: a run fires once.
    public var firedRun: Date?

    public init(runStart: Date? = nil, seenUntil: Date? = nil, firedRun: Date? = nil) {
        self.runStart = runStart
        self.seenUntil = seenUntil
        self.firedRun = firedRun
    }

    /// Follows `readings` (measured after ``seenUntil``, in time order; older ones are passed over) and returns the
    /// reading that met the rule, if one did. `reportsOn` false (an idle rule whose outlet reports itself off) ends
    /// any run first: the condition includes "while it reports itself on".
    public mutating func follow(
        _ readings: [PowerReading], condition: Condition, holdSeconds: Int, reportsOn: Bool = true
    ) -> PowerReading? {
        if !reportsOn { runStart = nil }
        var met: PowerReading?
        for reading in readings {
            if let seenUntil, reading.at <= seenUntil { continue }
            seenUntil = reading.at
            guard reportsOn, condition.isMet(by: reading.watts) else {
                runStart = nil
                continue
            }
            let start = runStart ?? reading.at
            runStart = start
            if met == nil, firedRun != start, reading.at.timeIntervalSince(start) >= Double(holdSeconds) {
                firedRun = start
                met = reading
            }
        }
        return met
    }
}
