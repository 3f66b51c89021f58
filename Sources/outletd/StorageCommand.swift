import ArgumentParser
import Compaction
import Foundation

/// `outletd storage status|compact DAY|expand DAY`: the forms days of readings are kept in (docs/COMPACTION.md).
struct StorageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage", abstract: "See and change how days of readings are stored.",
        subcommands: [Status.self, Compact.self, Expand.self])

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the days of readings with their form, readings and bytes on disk.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            try options.withDatabase { connection in
                let days = try CompactionStore(connection: connection).status()
                let rows = days.map { day -> [String] in
                    let readings = day.rowReadings + day.compactReadings
                    let bytes = day.rowBytes + day.compactBytes
                    return [
                        day.day, day.form, String(day.rowReadings), String(day.compactReadings),
                        Self.size(bytes), readings > 0 ? String(format: "%.1f", Double(bytes) / Double(readings)) : "-",
                        day.compactedAt.map(Format.timestamp) ?? "-",
                    ]
                }
                print(
                    TextTable.render(
                        header: ["day", "form", "row readings", "compact readings", "bytes", "B/reading", "compacted"],
                        rows: rows))
            }
        }

        static func size(_ bytes: Int64) -> String {
            let units = ["B", "kB", "MB", "GB", "TB"]
            var value = Double(bytes)
            var unit = 0
            while value >= 1_000, unit < units.count - 1 {
                value /= 1_000
                unit += 1
            }
            return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
        }
    }

    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compact one day now (safe while outletd runs; late readings of it are folded in).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The UTC day, YYYY-MM-DD.") var day: String
        @Option(help: "The share of the time to work, 0.01 to 1 (the background task: retention.compact_duty).")
        var duty: Double = 1
        @Option(
            name: .customLong("yield-ms"),
            help: "Wait between chunks while ingest's batches wait longer, ms; 0: never (retention.compact_yield_ms).")
        var yieldMilliseconds: Int = 0
        @Option(
            name: .customLong("spell-ms"),
            help: "Size chunks read by index to busy spells of this, ms; 0: all of compact_chunk_outlets.")
        var spellMilliseconds: Int = 0

        func validate() throws {
            try StorageCommand.validate(day)
            guard (0.01...1).contains(duty) else { throw ValidationError("--duty: expected 0.01 to 1, got \(duty)") }
            guard (0...600_000).contains(yieldMilliseconds) else {
                throw ValidationError("--yield-ms: expected 0 to 600000, got \(yieldMilliseconds)")
            }
            guard (0...600_000).contains(spellMilliseconds) else {
                throw ValidationError("--spell-ms: expected 0 to 600000, got \(spellMilliseconds)")
            }
        }

        func run() throws {
            let configuration = try options.loadConfiguration()
            let pacer = CompactionPacer(
                duty: duty, yieldSeconds: Double(yieldMilliseconds) / 1_000,
                spellSeconds: Double(spellMilliseconds) / 1_000)
            let outlets = configuration.retention.compactChunkOutlets
            var yielded = 0.0
            try options.withDatabase { connection in
                let store = CompactionStore(connection: connection)
                let outcome = try store.compact(
                    day: day, chunkOutlets: pacer.firstChunk(maxOutlets: outlets),
                    pause: { busy in
                        yielded += try pacer.rest(
                            afterBusy: busy, ingestWait: { try store.ingestWait() },
                            sleep: { seconds in
                                Thread.sleep(forTimeInterval: seconds)
                                return false
                            })
                    },
                    resize: { pacer.nextChunk(outlets: $0, busy: $1, maxOutlets: outlets) },
                    progress: { progress in
                        if isatty(STDOUT_FILENO) == 1 {
                            print(
                                "\r\u{1B}[2K\(progress.outlets) outlets, \(progress.readings) readings", terminator: "")
                            fflush(nil)
                        }
                    })
                if isatty(STDOUT_FILENO) == 1 { print() }
                if outcome.skipped {
                    throw ValidationError("another outletd is compacting \(day) now; try again when it is done")
                }
                let rate = outcome.seconds > 0 ? Int(Double(outcome.readings) / outcome.seconds) : 0
                print(
                    "compacted \(day): \(outcome.readings) readings of \(outcome.outlets) outlets in "
                        + String(format: "%.1f", outcome.seconds) + " s (\(rate) readings/s)"
                        + (outcome.leftInRows > 0 ? "; \(outcome.leftInRows) outlet-days left in row form" : "")
                        + (yielded > 0 ? String(format: "; waited %.1f s for ingest", yielded) : ""))
            }
        }
    }

    struct Expand: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take one day back to row form (to edit its rows); the next compaction packs it again.",
            discussion: "Set retention.compact_after_hours: 0 first to keep it in row form.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The UTC day, YYYY-MM-DD.") var day: String

        func validate() throws { try StorageCommand.validate(day) }

        func run() throws {
            try options.withDatabase { connection in
                let readings = try CompactionStore(connection: connection).expand(day: day)
                print("expanded \(day): \(readings) readings back in row form")
            }
        }
    }

    static func validate(_ day: String) throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        guard day.utf8.count == 10, let date = formatter.date(from: day), formatter.string(from: date) == day else {
            throw ValidationError("DAY: expected YYYY-MM-DD, got \"\(day)\"")
        }
    }
}
