import Foundation
import Telemetry

/// Plain column-aligned tables for the terminal. Every cell is printed inert (``OwnerText/inert(_:)``): text an
/// owner or an outlet stored cannot move the cursor, forge rows or retitle the terminal.
enum TextTable {
    static func render(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows.map { $0.map(OwnerText.inert) }
        var widths = Array(repeating: 0, count: header.count)
        for row in all {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// How the CLI writes values.
enum Format {
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// RFC 3339 with the offset of `zone` (`2026-11-27T23:00:00-03:00`): a schedule's time as its clock reads it.
    static func timestamp(_ date: Date, in zone: String?) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = zone.flatMap(TimeZone.init(identifier:)) ?? .gmt
        return formatter.string(from: date)
    }

    /// Power for people: one decimal (`1234.5 W`).
    static func watts(_ value: Double?) -> String {
        guard let value else { return "-" }
        return String(format: "%.1f W", value)
    }
}
