import ArgumentParser
import Config
import Daemon
import Foundation
import Observability
import Runtime
import Telemetry
import WritePath

/// `outletd rollup rebuild [--device CODE] --since TIME`: recomputes the rollups from the raw
/// samples, with the same SQL the write path uses, one transaction per outlet and day.
struct RollupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollup", abstract: "Maintain the power rollups.", subcommands: [Rebuild.self])

    struct Rebuild: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recompute the rollups from the raw samples (after a settings change or to repair).",
            discussion: """
                Raw samples older than the oldest partition (retention.raw_days) are gone: the rollups before \
                it are left as they are. Safe while outletd runs (outlets are locked one at a time).
                """)
        @OptionGroup var options: GlobalOptions
        @Option(help: "Only this outlet.") var device: String?
        @Option(help: "From this time: a duration back from now (36h, 7d) or an RFC 3339 time.") var since: String

        func validate() throws {
            guard TimeArgument.parse(since) != nil else {
                throw ValidationError("--since: expected a duration like 7d or an RFC 3339 time, got \"\(since)\"")
            }
        }

        func run() throws {
            let start = TimeArgument.parse(since) ?? Date()
            let configuration = try options.loadConfiguration()
            try options.withDatabase { connection in
                let store = RollupStore(connection: connection)
                if let previous = try store.store(RollupStore.Settings(configuration)) {
                    print(
                        "rollup settings changed from time zone \(previous.timeZone), max gap "
                            + "\(previous.maxGapSeconds) s to \(configuration.rollups.timeZone), "
                            + "\(configuration.rollups.maxGapSeconds) s")
                }
                let targets = try store.rebuildTargets(since: start, code: device)
                // Progress in seconds of samples: a bar with the time left on a terminal, a line every 10 s
                // otherwise (a log, a pipe, the journal).
                let spans = targets.map { max(0, $0.until.timeIntervalSince($0.from)) }
                var progress = ProgressEstimate(total: spans.reduce(0, +), startedAt: Date())
                let terminal = isatty(STDOUT_FILENO) == 1
                var total = 0
                var before = 0.0
                for (index, target) in targets.enumerated() {
                    let written = try store.rebuild(target) { reached, written in
                        progress.advance(to: before + max(0, reached.timeIntervalSince(target.from)))
                        let now = Date()
                        let position = "\(index + 1)/\(targets.count) \(target.code), \(total + written) minutes"
                        if terminal {
                            print("\r\u{1B}[2K\(progress.bar(at: now))  \(position)", terminator: "")
                            fflush(nil)  // every stream: the line has no newline to flush it
                        } else if progress.shouldLog(at: now) {
                            print("rollup rebuild: \(progress.line(at: now)) (\(position))")
                        }
                    }
                    before += spans[index]
                    total += written
                }
                if terminal && !targets.isEmpty { print() }
                print("rebuilt \(total) minute buckets of \(targets.count) outlets, and their hours and days")
                if device == nil, let missing = try store.unmaintainedSince() {
                    if try store.rebuilt(since: start) {
                        print(
                            "the samples stored without rollup maintenance (from \(Format.timestamp(missing))) "
                                + "are in the rollups now")
                    } else {
                        print(
                            "the rollups still miss samples stored without rollup maintenance: rebuild with "
                                + "--since \(Format.timestamp(missing)) or earlier")
                    }
                }
            }
        }
    }
}
