import Config
import Foundation
import Logging
import Postgres
import Runtime

/// Compacts settled days in the background (run by a ``DatabaseWorker``, its own thread and connection): every
/// `retention.maintenance_interval_seconds`, each day whose partition ended `retention.compact_after_hours` ago and
/// has readings in row form, oldest first. Its chunks are sized to busy spells of `retention.compact_spell_ms`, and
/// between them it rests (``CompactionPacer``): for `retention.compact_duty`'s share, then while ingest's batches wait
/// longer than `retention.compact_yield_ms`.
/// Compaction yields the machine to ingest. Off when compact_after_hours is 0.
public struct CompactionTask: DatabaseJob {
    public var name: String { "outletd-compaction" }
    private let retention: OutletdConfiguration.RetentionSettings

    public init(retention: OutletdConfiguration.RetentionSettings) {
        self.retention = retention
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        let store = CompactionStore(connection: connection)
        let pacer = CompactionPacer(
            duty: retention.compactDuty, yieldSeconds: Double(retention.compactYieldMilliseconds) / 1_000,
            spellSeconds: Double(retention.compactSpellMilliseconds) / 1_000)
        let outlets = retention.compactChunkOutlets
        while !context.stop.isSet {
            for day in try store.daysDue(afterHours: retention.compactAfterHours) {
                guard !context.stop.isSet else { return }
                var yielded = 0.0
                let outcome = try store.compact(
                    day: day, chunkOutlets: pacer.firstChunk(maxOutlets: outlets),
                    pause: { busy in
                        yielded += try pacer.rest(
                            afterBusy: busy, ingestWait: { try store.ingestWait() },
                            sleep: { context.stop.sleep(seconds: $0) })
                    },
                    resize: { pacer.nextChunk(outlets: $0, busy: $1, maxOutlets: outlets) })
                Self.log(outcome, yielded: yielded, context.logger)
            }
            context.stop.sleep(seconds: retention.maintenanceIntervalSeconds)
        }
    }

    static func log(_ outcome: CompactionStore.Outcome, yielded: Double, _ logger: Logger) {
        if outcome.skipped {
            logger.debug("compaction: another instance is compacting \(outcome.day)")
            return
        }
        logger.info(
            "compaction",
            metadata: [
                "day": "\(outcome.day)", "outlets": "\(outcome.outlets)", "readings": "\(outcome.readings)",
                "left_in_rows": "\(outcome.leftInRows)", "seconds": "\(Int(outcome.seconds.rounded()))",
                "waited_for_ingest_seconds": "\(Int(yielded.rounded()))",
            ])
    }
}
