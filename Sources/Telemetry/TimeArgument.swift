import Foundation

/// A point in time as the CLI takes it (`--since`): a duration back from now (`90m`, `24h`, `7d`,
/// `45s`) or an RFC 3339 timestamp (`2026-11-21T00:00:00-03:00`).
public enum TimeArgument {
    /// The time `text` names, relative to `now`; nil when it is neither form.
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800]
        if let unit = text.last, let seconds = units[unit], let amount = Double(text.dropLast()), amount >= 0,
            amount.isFinite
        {
            return now.addingTimeInterval(-amount * seconds)
        }
        return RFC3339.date(from: text)
    }
}
