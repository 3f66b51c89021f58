/// A day of the week as files, flags and the API name it: `mon` … `sun`.
public enum Weekday: String, Sendable, CaseIterable, Comparable, Codable {
    case mon, tue, wed, thu, fri, sat, sun

    /// 1 (Monday) … 7 (Sunday), ISO 8601 and PostgreSQL's `isodow`.
    public var isoNumber: Int { (Self.allCases.firstIndex(of: self) ?? 0) + 1 }

    /// The day of ISO number `number` (1 = Monday … 7 = Sunday).
    public init?(isoNumber number: Int) {
        guard (1...7).contains(number) else { return nil }
        self = Self.allCases[number - 1]
    }

    public static func < (lhs: Weekday, rhs: Weekday) -> Bool { lhs.isoNumber < rhs.isoNumber }

    /// Days as people type them: one day (`sat`), a list (`sat,sun`), a range (`mon-fri`; `fri-mon` wraps over the
    /// weekend), or lists of those (`mon-wed,fri`); `daily` is every day. Any case; full names (`monday`) too.
    /// Sorted, without repeats; nil for anything else or an empty list.
    public static func parseList(_ text: String) -> [Weekday]? {
        let trimmed = text.lowercased().filter { $0 != " " }
        if trimmed == "daily" || trimmed == "all" { return allCases }
        var days = Set<Weekday>()
        for item in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false)
            switch ends.count {
            case 1:
                guard let day = named(ends[0]) else { return nil }
                days.insert(day)
            case 2:
                guard let first = named(ends[0]), let last = named(ends[1]) else { return nil }
                var number = first.isoNumber
                while true {
                    days.insert(allCases[number - 1])
                    if number == last.isoNumber { break }
                    number = number % 7 + 1
                }
            default:
                return nil
            }
        }
        return days.isEmpty ? nil : days.sorted()
    }

    private static func named(_ text: Substring) -> Weekday? {
        guard text.count >= 3 else { return nil }
        let short = String(text.prefix(3))
        guard let day = Weekday(rawValue: short) else { return nil }
        let full = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"][day.isoNumber - 1]
        return text.count == 3 || full == String(text) ? day : nil
    }

    /// `days` as the shortest text ``parseList(_:)`` reads back: `daily`, `mon-fri`, `sat,sun`, `mon,wed-fri`.
    public static func describe(_ days: [Weekday]) -> String {
        let set = Set(days)
        if set.count == 7 { return "daily" }
        var runs: [[Weekday]] = []
        for day in allCases where set.contains(day) {
            if let last = runs.last?.last, last.isoNumber + 1 == day.isoNumber {
                runs[runs.count - 1].append(day)
            } else {
                runs.append([day])
            }
        }
        return runs.map { run in
            run.count >= 3
                ? "\(run[0].rawValue)-\(run[run.count - 1].rawValue)" : run.map(\.rawValue).joined(separator: ",")
        }.joined(separator: ",")
    }
}
