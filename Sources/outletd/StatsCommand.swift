import ArgumentParser
import Config
import Daemon
import Foundation
import Observability
import Runtime
import Storage
import Telemetry

/// `outletd stats [CODE] [--since 24h]`: one outlet's power from the hourly rollups (average,
/// peak and when, energy, samples, a bar chart by hour), or every outlet from
/// `device_power_summary`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Power of one outlet over a period, or the summary of all of them.")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "An outlet's code; all outlets when omitted.") var code: String?
    @Option(help: "With CODE: the period, back from now (30m, 24h, 7d) or from an RFC 3339 time.")
    var since = "24h"
    @Option(help: "Print again every SECONDS until interrupted.") var watch: Double?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard TimeArgument.parse(since) != nil else {
            throw ValidationError("--since: expected a duration like 24h or an RFC 3339 time, got \"\(since)\"")
        }
    }

    func run() throws {
        let configuration = try options.loadConfiguration()
        let connection = try options.connect(configuration)
        defer { connection.close() }
        let timeZoneName = configuration.rollups.timeZone
        let timeZone = TimeZone(identifier: timeZoneName) ?? .gmt
        repeat {
            let text = try reportingErrors {
                switch (code, output.format) {
                case (let code?, .text):
                    return try renderOutlet(code, PowerStatsQuery(connection: connection), timeZone, timeZoneName)
                case (let code?, .json):
                    return try JSONOutput.render(try outletObject(code, PowerStatsQuery(connection: connection)))
                case (nil, .text):
                    return try renderAll(PowerSummaryQuery(connection: connection))
                case (nil, .json):
                    return try JSONOutput.render(try allObject(PowerSummaryQuery(connection: connection)))
                }
            }
            // JSON under --watch: one document per line, for a pipe.
            if watch != nil && output.format == .text { print("\u{1B}[H\u{1B}[2J", terminator: "") }
            print(text)
            if let watch { Thread.sleep(forTimeInterval: max(0.2, watch)) }
        } while watch != nil
    }

    func renderOutlet(_ code: String, _ query: PowerStatsQuery, _ timeZone: TimeZone, _ timeZoneName: String) throws
        -> String
    {
        let start = TimeArgument.parse(since) ?? Date()
        guard let stats = try query.stats(code: code, since: start) else {
            throw ValidationError("no device \(code) is registered")
        }
        let hourFormat = DateFormatter()
        hourFormat.timeZone = timeZone
        hourFormat.dateFormat = "yyyy-MM-dd HH:mm"
        let peak = Format.watts(stats.peakPowerWatts) + (stats.peakAt.map { " at \(Format.timestamp($0))" } ?? "")
        return """
            outlet:        \(stats.code)\(stats.name.isEmpty ? "" : " (\(OwnerText.inert(stats.name)))")
            period:        the hours since \(Format.timestamp(start)) (hours shown in \(timeZoneName))
            samples:       \(stats.sampleCount)
            average power: \(Format.watts(stats.averagePowerWatts))
            peak power:    \(peak)
            energy:        \(String(format: "%.3f Wh", stats.energyWattHours))
            cost:          \(Self.describe(try query.cost(code: code, since: start)))
            last reading:  \(stats.lastReadingAt.map(Format.timestamp) ?? "none in this period")

            average power by hour:
            \(PowerBarChart.render(stats.hours) { hourFormat.string(from: $0) })
            """
    }

    /// `--format json` with CODE: the figures of ``renderOutlet(_:_:_:_:)``, unrounded, with the hours.
    func outletObject(_ code: String, _ query: PowerStatsQuery) throws -> [String: Any] {
        let start = TimeArgument.parse(since) ?? Date()
        guard let stats = try query.stats(code: code, since: start) else {
            throw ValidationError("no device \(code) is registered")
        }
        return [
            "code": stats.code, "name": stats.name, "since": Format.timestamp(start), "samples": stats.sampleCount,
            "average_power_watts": JSONOutput.value(stats.averagePowerWatts),
            "peak_power_watts": JSONOutput.value(stats.peakPowerWatts), "peak_at": JSONOutput.value(stats.peakAt),
            "energy_watt_hours": stats.energyWattHours, "last_reading_at": JSONOutput.value(stats.lastReadingAt),
            "cost": Self.object(try query.cost(code: code, since: start)),
            "hours": stats.hours.map { hour -> [String: Any] in
                [
                    "starts_at": Format.timestamp(hour.startsAt), "average_power_watts": hour.averagePowerWatts,
                    "peak_power_watts": hour.peakPowerWatts, "energy_watt_hours": hour.energyWattHours,
                ]
            },
        ]
    }

    /// `--format json` without CODE: every outlet's summary and the rejection counts.
    func allObject(_ query: PowerSummaryQuery) throws -> [String: Any] {
        let outlets = try query.all().map { summary -> [String: Any] in
            [
                "code": summary.code, "name": summary.name, "enabled": summary.enabled, "samples": summary.sampleCount,
                "average_power_watts": JSONOutput.value(summary.averagePowerWatts),
                "peak_power_watts": JSONOutput.value(summary.peakPowerWatts),
                "peak_at": JSONOutput.value(summary.peakAt), "last_reading_at": JSONOutput.value(summary.lastReadingAt),
            ]
        }
        var rejections: [String: Int64] = [:]
        for rejection in try query.rejectionCounts() { rejections[rejection.reason] = rejection.count }
        return ["outlets": outlets, "rejected": rejections]
    }

    func renderAll(_ query: PowerSummaryQuery) throws -> String {
        let summaries = try query.all()
        let rows = summaries.map {
            [
                $0.code, $0.name, String($0.sampleCount), Format.watts($0.averagePowerWatts),
                Format.watts($0.peakPowerWatts), $0.peakAt.map(Format.timestamp) ?? "-",
                $0.lastReadingAt.map(Format.timestamp) ?? "never",
            ]
        }
        var text = TextTable.render(
            header: ["CODE", "NAME", "SAMPLES", "AVERAGE", "PEAK", "PEAK AT", "LAST READING"], rows: rows)
        let total = summaries.reduce(Int64(0)) { $0 + $1.sampleCount }
        text += "\n\(summaries.count) outlets, \(total) samples"
        let rejections = try query.rejectionCounts()
        if !rejections.isEmpty {
            text += "; rejected: " + rejections.map { "\($0.reason) \($0.count)" }.joined(separator: ", ")
        }
        return text
    }

    /// `5.24 BRL (ponta 2.10, intermediario 0.91, outside bands 2.24)`, rounded to the currency's minor unit, or
    /// why there is no cost.
    static func describe(_ cost: PeriodCost) -> String {
        guard let currency = cost.currency else { return "no tariff (outletd tariff assign)" }
        guard let total = cost.cost else { return "no price for this period (before the tariff's first version)" }
        let bands = cost.bands.filter { $0.cost != nil }
        var text = "\(Money.rounded(total, currency)) \(currency)"
        if bands.count > 1 || bands.first?.band != nil {
            text +=
                " ("
                + bands.map {
                    "\(OwnerText.inert($0.band ?? "outside bands")) \(Money.rounded($0.cost ?? "0", currency))"
                }
                .joined(separator: ", ") + ")"
        }
        return text
    }

    /// `--format json`: the exact cost (six decimals, a JSON number), the currency and the bands.
    static func object(_ cost: PeriodCost) -> [String: Any] {
        [
            "cost": cost.cost.flatMap { Decimal(string: $0) }.map { $0 as Any } ?? NSNull(),
            "currency": JSONOutput.value(cost.currency),
            "bands": cost.bands.map { band -> [String: Any] in
                [
                    "band": JSONOutput.value(band.band), "energy_watt_hours": band.energyWattHours,
                    "cost": band.cost.flatMap { Decimal(string: $0) }.map { $0 as Any } ?? NSNull(),
                ]
            },
        ]
    }
}

/// Money for people: rounded once, half away from zero, to the currency's minor unit (2 for BRL, EUR, USD; 0 for
/// JPY; 3 for KWD, ISO 4217).
enum Money {
    static func rounded(_ amount: String, _ currency: String) -> String {
        guard var value = Decimal(string: amount) else { return amount }
        let formatter = NumberFormatter()
        formatter.numberStyle = .currency
        formatter.currencyCode = currency
        let digits = formatter.maximumFractionDigits
        var result = Decimal()
        NSDecimalRound(&result, &value, digits, .plain)
        let plain = NumberFormatter()
        plain.locale = Locale(identifier: "en_US_POSIX")
        plain.minimumFractionDigits = digits
        plain.maximumFractionDigits = digits
        plain.minimumIntegerDigits = 1
        return plain.string(from: result as NSDecimalNumber) ?? "\(result)"
    }
}
