import Foundation
import Logging
import Observability
import Runtime
import ServiceLifecycle

/// The `ingest in the last 60 s` log line, as a `Service` of the daemon's group: counters since the last
/// line, and the spool's backlog (also when nothing arrived while a backlog waits).
struct StatisticsLog: Service {
    let metrics: IngestMetrics
    let logger: Logger
    var everySeconds = 60

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var previous = metrics.snapshot()
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(everySeconds)) } catch { return }
                let now = metrics.snapshot()
                guard now.messagesReceived != previous.messagesReceived || now.spoolRecordsPending > 0 else {
                    continue
                }
                var metadata: Logger.Metadata = [
                    "received": "\(now.messagesReceived - previous.messagesReceived)",
                    "stored": "\(now.readingsStored - previous.readingsStored)",
                    "duplicates": "\(now.readingsDuplicate - previous.readingsDuplicate)",
                    "rejected": "\(now.rejectedTotal - previous.rejectedTotal)",
                    "batches": "\(now.batchesCommitted - previous.batchesCommitted)",
                    "spool_bytes": "\(now.spoolBytes)", "spool_records": "\(now.spoolRecordsPending)",
                    "spool_oldest_age_s": "\(String(format: "%.1f", now.spoolOldestRecordAgeSeconds))",
                ]
                for (reason, count) in now.rejected where count != previous.rejected[reason] {
                    metadata["rejected_\(reason.rawValue)"] = "\(count - (previous.rejected[reason] ?? 0))"
                }
                logger.info("ingest in the last \(everySeconds) s", metadata: metadata)
                previous = now
            }
        }
    }
}

/// Feeds systemd's watchdog (`WatchdogSec=`) as a `Service`: at half its interval, while the writer thread
/// shows progress. A writer stuck for longer than that stops the pings, and systemd restarts outletd.
struct Watchdog: Service {
    let notifier: SystemdNotifier
    let writer: Heartbeat
    let logger: Logger

    func run() async throws {
        guard notifier.watchdogInterval != nil else {
            // No watchdog configured: nothing to feed, but a service of the group runs until its shutdown.
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown { await Self.feed(notifier, writer: writer, logger: logger) }
    }

    /// Pings while `writer` beats, until cancelled; returns at once without a watchdog.
    static func feed(_ notifier: SystemdNotifier, writer: Heartbeat, logger: Logger) async {
        guard let interval = notifier.watchdogInterval else { return }
        let half = interval / 2
        var stalledLogged = false
        while !Task.isCancelled {
            let age = writer.age
            if age < half {
                notifier.notify("WATCHDOG=1")
                stalledLogged = false
            } else if !stalledLogged {
                logger.error(
                    "writer shows no progress; not feeding the systemd watchdog", metadata: ["stalled": "\(age)"])
                stalledLogged = true
            }
            do { try await Task.sleep(for: half) } catch { return }
        }
    }
}
