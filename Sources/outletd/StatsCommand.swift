import ArgumentParser
import Foundation
import Ingest

/// `outletd stats [CODE]`: average and peak power per outlet, from `device_power_summary`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Average and peak power of one outlet, or of all of them.")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "An outlet's code; all outlets when omitted.") var code: String?
    @Option(help: "Print again every SECONDS until interrupted.") var watch: Double?

    func run() throws {
        let configuration = try options.loadConfiguration()
        let connection = try options.connect(configuration)
        defer { connection.close() }
        let query = PowerSummaryQuery(connection: connection)
        repeat {
            let text = try reportingErrors { try render(query) }
            if watch != nil { print("\u{1B}[H\u{1B}[2J", terminator: "") }
            print(text)
            if let watch { Thread.sleep(forTimeInterval: max(0.2, watch)) }
        } while watch != nil
    }

    func render(_ query: PowerSummaryQuery) throws -> String {
        if let code {
            guard let summary = try query.summary(code: code) else {
                throw ValidationError("no device \(code) is registered")
            }
            return """
                outlet:        \(summary.code)\(summary.name.isEmpty ? "" : " (\(summary.name))")\(summary.enabled ? "" : " [disabled]")
                samples:       \(summary.sampleCount)
                average power: \(Format.watts(summary.averagePowerWatts))
                peak power:    \(Format.watts(summary.peakPowerWatts))\(summary.peakAt.map { " at \(Format.timestamp($0))" } ?? "")
                last reading:  \(summary.lastReadingAt.map(Format.timestamp) ?? "never")
                """
        }
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
}
