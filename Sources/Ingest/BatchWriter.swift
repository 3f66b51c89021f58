import Config
import Foundation
import Logging
import MessageSpool
import Observability
import Postgres
import Protocols
import Routing
import Runtime
import ServiceLifecycle
import Storage
import Telemetry
import WritePath

/// The writer thread: reads records from the ``Spool``, classifies them, and writes them in
/// batches (when ``FlushPolicy`` says: at `batchMaxRows` rows, or after `batchMaxDelay`, longer for a
/// small batch), one transaction each, which also
/// stores the spool position just after the batch (`ingest_checkpoints`). After the commit the
/// spool may delete what is now stored.
///
/// On start it reads the stored position and resumes there, so a record is processed again only
/// if its transaction did not commit: samples, totals, rejection counts and pending codes are
/// each written exactly once.
///
/// libpq blocks, so this runs on a thread of its own, never on Swift's cooperative pool. When the
/// database is unreachable the batch is kept and retried with capped backoff over a new
/// connection (its session state — staging table, prepared statements — is created again);
/// meanwhile the spool grows, and when it is full it holds the broker back.
public final class BatchWriter: Service, Sendable {
    /// How the writer batches and retries.
    public struct Settings: Sendable {
        public var batchMaxRows: Int
        public var batchMaxDelay: Double
        public var batchMinRows: Int
        public var smallBatchMaxDelay: Double
        public var reconnectDelayMax: Double
        public var shutdownFlushTimeout: Double
        public var rejectionLogInterval: Double
        public var maxStoredRejectionsPerBatch: Int
        public var payloadExcerptBytes: Int
        /// Names this instance's row of `ingest_checkpoints`.
        public var instanceID: String
        /// `database.durability: replicated`: the spool keeps a batch's records until a standby has its commit,
        /// and a new connection's server is checked for commits it lacks.
        public var replicated = false

        /// When batches end (``FlushPolicy``).
        public var flushPolicy: FlushPolicy {
            FlushPolicy(
                maxRows: batchMaxRows, maxDelay: batchMaxDelay, minRows: batchMinRows,
                smallBatchDelay: smallBatchMaxDelay, holdWindow: ShellyGen1Polls<Int>.window)
        }

        public init(_ configuration: OutletdConfiguration) {
            instanceID = configuration.instanceID
            batchMaxRows = configuration.ingest.batchMaxRows
            batchMaxDelay = Double(configuration.ingest.batchMaxDelayMilliseconds) / 1_000
            batchMinRows = configuration.ingest.batchMinRows
            smallBatchMaxDelay = Double(configuration.ingest.smallBatchMaxDelayMilliseconds) / 1_000
            reconnectDelayMax = configuration.database.reconnectDelayMaxSeconds
            shutdownFlushTimeout = configuration.ingest.shutdownFlushTimeoutSeconds
            rejectionLogInterval = configuration.rejections.logIntervalSeconds
            maxStoredRejectionsPerBatch = configuration.rejections.maxStoredPerBatch
            payloadExcerptBytes = configuration.rejections.payloadExcerptBytes
            replicated = configuration.database.durability == .replicated
        }
    }

    private let spool: Spool
    private let registry: DeviceRegistry
    private let classifier: MessageClassifier
    private let settings: Settings
    private let logger: Logger
    private let metrics: IngestMetrics
    private let committer: BatchCommitter
    private let shutdown: ShutdownDeadline
    private let completion = ThreadCompletion()
    /// Beats on every turn of the writer's loop while no batch is being written, also while it waits for the
    /// database, and when a batch starts and ends: the systemd watchdog is fed only while it is recent, so a
    /// transaction that hangs stops it.
    public let heartbeat = Heartbeat()

    public init(
        spool: Spool, registry: DeviceRegistry, classifier: MessageClassifier, store: BatchStore,
        settings: Settings, connectionString: String, metrics: IngestMetrics, logger: Logger
    ) {
        self.spool = spool
        self.registry = registry
        self.classifier = classifier
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        shutdown = ShutdownDeadline(spool: spool, timeout: settings.shutdownFlushTimeout)
        committer = BatchCommitter(
            spool: spool, store: store, settings: settings, connectionString: connectionString, metrics: metrics,
            logger: logger, heartbeat: heartbeat, shutdown: shutdown)
    }

    /// Starts the thread.
    public func start() {
        let thread = Thread { [self] in
            committer.start()
            var loop = Loop(writer: self)
            loop.run()
            committer.close()
            self.completion.markFinished()
        }
        thread.name = "outletd-writer"
        thread.start()
    }

    /// Waits until the thread ended (after ``Spool/stopIntake()`` it writes what the spool holds
    /// first, within `shutdownFlushTimeout`). Returns the number of records left in the spool for
    /// the next start (0 after a clean drain).
    public func finish() async -> Int {
        await completion.wait()
        return spool.status().recordsPending
    }

    /// As a `Service` of the daemon's group: writes until its graceful shutdown, which comes after the intake
    /// stopped (the group stops its services in reverse order); then writes what the spool holds (within
    /// `ingest.shutdown_flush_timeout_seconds`) and closes the spool.
    public func run() async throws {
        start()
        try? await gracefulShutdown()
        let unwritten = await finish()
        spool.close()
        if unwritten > 0 {
            logger.notice(
                "records left in the spool for the next start (the database did not take them in time)",
                metadata: ["records": "\(unwritten)"])
        }
    }

    /// The writer's mutable state, owned by its thread.
    private struct Loop {
        let writer: BatchWriter
        var limiter: RejectionLogLimiter
        var positioned = false
        /// Where the current batch ends in the spool, and how many records it holds.
        var batchEnd: SpoolPosition?
        var batchRecords = 0
        /// When the batch's messages were received, for `outletd_ingest_latency_seconds`.
        var batchReceivedAt: [Date] = []
        /// When the registry may be asked about a code it does not know.
        var misses = RegistryMissPolicy(lookupsPerSecond: 50, negativeSeconds: 2)

        init(writer: BatchWriter) {
            self.writer = writer
            self.limiter = RejectionLogLimiter(interval: writer.settings.rejectionLogInterval)
            batchReceivedAt.reserveCapacity(writer.settings.batchMaxRows)
        }

        var settings: Settings { writer.settings }
        var committer: BatchCommitter { writer.committer }

        /// Reads and classifies; hands each batch to the committer. A batch the policy would end while the
        /// committer still writes the one before keeps growing meanwhile (up to `batchMaxRows`), reading
        /// what arrived every 2 ms, and is handed over within 2 ms of the committer being free: under load the
        /// batches are as large as one transaction's time lets them grow, as without the overlap.
        mutating func run() {
            let policy = writer.settings.flushPolicy
            var batch = newBatch()
            var state = FlushPolicy.State()
            var growing = false
            while true {
                if !committer.isBusy { writer.heartbeat.beat() }
                writer.shutdown.note()
                if committer.takeReposition() {
                    batch = newBatch()
                    state = FlushPolicy.State()
                    growing = false
                    dropBatch()
                }
                guard waitForRegistry(), positionSpool() else { return }
                let holding = state.holdingSince != nil
                var (room, deadline) = policy.nextRead(state, now: Date())
                if growing {
                    // The batch grows while the committer writes the one before: what arrived in 2 ms is read at
                    // once, not each few records as they arrive (live traffic comes a few messages at a time:
                    // waking for each was a third of the writer's CPU at 20,000 readings/s).
                    Thread.sleep(forTimeInterval: 0.002)
                    deadline = Date()
                }
                let records: [SpoolRecord]
                do {
                    records = try writer.spool.read(upTo: room, waitingUntil: deadline)
                } catch {
                    writer.logger.error("cannot read the spool; retrying", metadata: ["error": "\(error)"])
                    if writer.shutdown.isPast { return }
                    writer.heartbeat.sleepBeating(seconds: 1)
                    continue
                }
                for record in records {
                    // Routed when it arrived (the record's tag); records of the first spool format carry no route.
                    let route =
                        MessageRoute(tag: record.tag) ?? writer.classifier.route(record.message.topic)
                    let classified = writer.classifier.classify(record.message, route: route) { lookUp($0) }
                    logRejections(classified, record.message)
                    for kind in classified.ignored { writer.metrics.messageIgnored(kind) }
                    if classified.duplicates > 0 { writer.metrics.duplicatesDropped(classified.duplicates) }
                    batch.add(classified, of: record.message)
                    batchEnd = record.end
                    batchRecords += 1
                    batchReceivedAt.append(record.message.receivedAt)
                }
                let now = Date()
                if state.oldestReceivedAt == nil && !batch.isEmpty {
                    // The delay counts from when the batch's oldest message was received, not from when it
                    // was read: messages that arrived during the previous transaction have waited that long.
                    state.oldestReceivedAt = min(records.first?.message.receivedAt ?? now, now)
                }
                state.rows = batch.rowCount
                state.hasMessages = batchEnd != nil
                state.lastReadWasFull = !holding && records.count == room
                state.drained = writer.spool.isIntakeStoppedAndRead
                // The record of a poll's first half is committed only with the poll's sample: no batch ends
                // while a poll is open. A poll ends when its other half comes or, in the spool's order, once
                // a message received a window later is read; the policy ends the rest.
                if writer.classifier.isHolding {
                    state.holdingSince = state.holdingSince ?? now
                    if policy.shouldGiveUpHeldPolls(state, now: now) {
                        let released = writer.classifier.releaseHeld()
                        for kind in released.ignored { writer.metrics.messageIgnored(kind) }
                        batch.addReleased(released)
                        state.rows = batch.rowCount
                    }
                }
                if !writer.classifier.isHolding { state.holdingSince = nil }
                let drained = state.drained
                growing = false
                if let end = batchEnd, policy.shouldFlush(state, now: now) {
                    if committer.isBusy && state.rows < policy.maxRows && !drained {
                        growing = true
                    } else {
                        guard committer.waitUntilIdle() else { return }
                        if committer.takeReposition() {
                            batch = newBatch()
                            state = FlushPolicy.State()
                            dropBatch()
                            continue
                        }
                        committer.submit(
                            BatchCommitter.Job(
                                batch: batch, end: end, records: batchRecords, receivedAt: batchReceivedAt))
                        batchReceivedAt = []
                        batchReceivedAt.reserveCapacity(settings.batchMaxRows)
                        batch = newBatch()
                        state = FlushPolicy.State()
                        batchEnd = nil
                        batchRecords = 0
                    }
                }
                if drained && batchEnd == nil { return }
            }
        }

        /// After a failover the database lacks batches the spool holds: drops what the loop read (the batch it
        /// grows, the classifier's held messages); the next turn reloads the checkpoint and reads from there.
        mutating func dropBatch() {
            batchEnd = nil
            batchRecords = 0
            batchReceivedAt = []
            writer.classifier.reset()
            positioned = false
        }

        func newBatch() -> Batch {
            Batch(
                maxStoredRejections: settings.maxStoredRejectionsPerBatch,
                payloadExcerptBytes: settings.payloadExcerptBytes, expectedRows: settings.batchMaxRows)
        }

        /// Classifying before the registry is loaded would reject every code as unknown: waits for its first
        /// load (an event), beating the heartbeat and watching for the shutdown every half second.
        func waitForRegistry() -> Bool {
            while !writer.registry.waitUntilLoaded(until: Date().addingTimeInterval(0.5)) {
                writer.heartbeat.beat()
                if writer.shutdown.isPast { return false }
                if writer.spool.isIntakeStoppedAndRead { return true }
            }
            return true
        }

        mutating func logRejections(_ classified: ClassifiedMessage, _ message: RawMessage) {
            for rejection in classified.rejections {
                guard let suppressed = limiter.shouldLog(rejection.reason, at: message.receivedAt) else { continue }
                var metadata: Logger.Metadata = [
                    "reason": "\(rejection.reason.rawValue)", "topic": "\(message.topic)",
                    "detail": "\(rejection.detail)",
                ]
                if let index = rejection.index { metadata["index"] = "\(index)" }
                if suppressed > 0 { metadata["suppressed_since_last"] = "\(suppressed)" }
                writer.logger.notice("message rejected", metadata: metadata)
            }
        }

        /// Before the first read: resume just after the position stored by the last committed batch.
        /// Retries while the database is unreachable; false only when shutting down meanwhile.
        mutating func positionSpool() -> Bool {
            guard !positioned else { return true }
            var backoff = Backoff(initial: 0.2, maximum: settings.reconnectDelayMax)
            while true {
                writer.shutdown.note()
                do {
                    let checkpoint = try committer.loadCheckpoint()
                    try writer.spool.seek(to: checkpoint)
                    positioned = true
                    let status = writer.spool.status()
                    writer.logger.info(
                        "resuming from the spool checkpoint",
                        metadata: [
                            "checkpoint": "\(checkpoint.map { "\($0.position)" } ?? "none")",
                            "records_pending": "\(status.recordsPending)", "spool_bytes": "\(status.bytes)",
                        ])
                    return true
                } catch {
                    let delay = backoff.nextDelay()
                    writer.logger.warning(
                        "cannot read the spool checkpoint; retrying",
                        metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                    if writer.shutdown.isPast { return false }
                    writer.heartbeat.sleepBeating(seconds: delay)
                }
            }
        }

        /// The registry's entry; for a code it does not know, the database's (rate limited by
        /// ``RegistryMissPolicy``; it waits for the batch in flight). An outlet registered a moment before its
        /// first reading then counts as known even if the NOTIFY has not reached the registry listener yet.
        mutating func lookUp(_ code: String) -> RegisteredDevice? {
            if let device = writer.registry.lookup(code) { return device }
            guard misses.shouldLookUp(code, at: Date()), let device = committer.registryEntry(code) else { return nil }
            writer.registry.update(code, device)
            return device
        }
    }
}
