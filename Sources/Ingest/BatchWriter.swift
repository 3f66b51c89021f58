import Config
import Foundation
import Logging
import MessageSpool
import Observability
import Postgres
import Routing
import Runtime
import ServiceLifecycle
import Storage
import Telemetry

/// The writer thread: reads records from the ``Spool``, classifies them, and writes them in
/// batches (at `batchMaxRows` rows or after `batchMaxDelay`), one transaction each, which also
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
        public var reconnectDelayMax: Double
        public var shutdownFlushTimeout: Double
        public var rejectionLogInterval: Double
        public var maxStoredRejectionsPerBatch: Int
        public var payloadExcerptBytes: Int
        /// Names this instance's row of `ingest_checkpoints`.
        public var instanceID: String

        /// When batches end (``FlushPolicy``).
        public var flushPolicy: FlushPolicy {
            FlushPolicy(maxRows: batchMaxRows, maxDelay: batchMaxDelay, holdWindow: ShellyGen1Polls<Int>.window)
        }

        public init(_ configuration: OutletdConfiguration) {
            instanceID = configuration.instanceID
            batchMaxRows = configuration.ingest.batchMaxRows
            batchMaxDelay = Double(configuration.ingest.batchMaxDelayMilliseconds) / 1_000
            reconnectDelayMax = configuration.database.reconnectDelayMaxSeconds
            shutdownFlushTimeout = configuration.ingest.shutdownFlushTimeoutSeconds
            rejectionLogInterval = configuration.rejections.logIntervalSeconds
            maxStoredRejectionsPerBatch = configuration.rejections.maxStoredPerBatch
            payloadExcerptBytes = configuration.rejections.payloadExcerptBytes
        }
    }

    private let spool: Spool
    private let registry: DeviceRegistry
    private let classifier: MessageClassifier
    private let store: BatchStore
    private let settings: Settings
    private let connectionString: String
    private let metrics: IngestMetrics
    private let logger: Logger
    private let completion = ThreadCompletion()
    /// Beats on every turn of the writer's loop, also while it waits for the database; the
    /// systemd watchdog is fed only while it is recent.
    public let heartbeat = Heartbeat()

    public init(
        spool: Spool, registry: DeviceRegistry, classifier: MessageClassifier, store: BatchStore,
        settings: Settings, connectionString: String, metrics: IngestMetrics, logger: Logger
    ) {
        self.spool = spool
        self.registry = registry
        self.classifier = classifier
        self.store = store
        self.settings = settings
        self.connectionString = connectionString
        self.metrics = metrics
        self.logger = logger
    }

    /// Starts the thread.
    public func start() {
        let thread = Thread { [self] in
            var loop = Loop(writer: self)
            loop.run()
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
        var connection: PostgresConnection?
        var limiter: RejectionLogLimiter
        var shutdownDeadline: Date?
        var positioned = false
        /// Where the current batch ends in the spool, and how many records it holds.
        var batchEnd: SpoolPosition?
        var batchRecords = 0
        /// When the batch's messages were received, for `outletd_ingest_latency_seconds`.
        var batchReceivedAt: [Date] = []

        init(writer: BatchWriter) {
            self.writer = writer
            self.limiter = RejectionLogLimiter(interval: writer.settings.rejectionLogInterval)
        }

        var settings: Settings { writer.settings }

        mutating func run() {
            defer { connection?.close() }
            let policy = writer.settings.flushPolicy
            var batch = newBatch()
            var state = FlushPolicy.State()
            while true {
                writer.heartbeat.beat()
                noteShutdown()
                guard waitForRegistry(), positionSpool() else { return }
                let holding = state.holdingSince != nil
                let (room, deadline) = policy.nextRead(state, now: Date())
                let records: [SpoolRecord]
                do {
                    records = try writer.spool.read(upTo: room, waitingUntil: deadline)
                } catch {
                    writer.logger.error("cannot read the spool; retrying", metadata: ["error": "\(error)"])
                    if pastShutdownDeadline { return }
                    sleepBeating(seconds: 1)
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
                if let end = batchEnd, policy.shouldFlush(state, now: now) {
                    guard flush(batch, end: end) else { return }
                    writer.spool.commit(through: end, records: batchRecords)
                    writer.metrics.batchLatencies(receivedAt: batchReceivedAt, committedAt: Date())
                    batchReceivedAt.removeAll(keepingCapacity: true)
                    batch = newBatch()
                    state = FlushPolicy.State()
                    batchEnd = nil
                    batchRecords = 0
                }
                if drained && batchEnd == nil { return }
            }
        }

        func newBatch() -> Batch {
            Batch(
                maxStoredRejections: settings.maxStoredRejectionsPerBatch,
                payloadExcerptBytes: settings.payloadExcerptBytes)
        }

        mutating func noteShutdown() {
            if shutdownDeadline == nil && writer.spool.isIntakeStopped {
                shutdownDeadline = Date().addingTimeInterval(settings.shutdownFlushTimeout)
            }
        }

        var pastShutdownDeadline: Bool {
            if let shutdownDeadline { return Date() >= shutdownDeadline }
            return false
        }

        /// Classifying before the registry is loaded would reject every code as unknown: waits for its first
        /// load (an event), beating the heartbeat and watching for the shutdown every half second.
        mutating func waitForRegistry() -> Bool {
            while !writer.registry.waitUntilLoaded(until: Date().addingTimeInterval(0.5)) {
                writer.heartbeat.beat()
                noteShutdown()
                if pastShutdownDeadline { return false }
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
                noteShutdown()
                do {
                    let checkpoint = try BatchStore.loadCheckpoint(of: settings.instanceID, try currentConnection())
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
                    dropConnectionIfBroken(after: error)
                    let delay = backoff.nextDelay()
                    writer.logger.warning(
                        "cannot read the spool checkpoint; retrying",
                        metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                    if pastShutdownDeadline { return false }
                    sleepBeating(seconds: delay)
                }
            }
        }

        /// When the database may be asked about a code the registry does not know.
        var misses = RegistryMissPolicy(lookupsPerSecond: 50, negativeSeconds: 2)

        /// The registry's entry; for a code it does not know, the database's (rate limited by
        /// ``RegistryMissPolicy``). An outlet registered a moment before its first reading then counts
        /// as known even if the NOTIFY has not reached the registry listener yet.
        mutating func lookUp(_ code: String) -> RegisteredDevice? {
            if let device = writer.registry.lookup(code) { return device }
            guard let connection, misses.shouldLookUp(code, at: Date()) else { return nil }
            guard let device = try? DeviceStore(connection: connection).registryEntry(code) else { return nil }
            writer.registry.update(code, device)
            return device
        }

        /// Closes the connection when `error` says it is broken; returns whether it did.
        @discardableResult
        mutating func dropConnectionIfBroken(after error: any Error) -> Bool {
            let connectionProblem = (error as? PostgresError)?.isConnectionError ?? false
            guard connectionProblem || connection?.isHealthy == false else { return false }
            connection?.close()
            connection = nil
            return true
        }

        /// Whether the batch ending at `end` is committed already: its transaction stored that
        /// position in `ingest_checkpoints`, and only this writer moves this instance's row forward.
        func isCommitted(through end: SpoolPosition, _ connection: PostgresConnection) throws -> Bool {
            guard let stored = try BatchStore.loadCheckpoint(of: settings.instanceID, connection) else { return false }
            return stored.spoolID == writer.spool.identity && stored.position >= end
        }

        /// Writes the batch and the spool position `end` in one transaction, retrying until it is
        /// committed. Returns false only when shutting down and the flush timeout passed.
        ///
        /// A connection lost while the transaction ran leaves its outcome unknown: the `COMMIT` may have
        /// reached the server and its answer been lost. Before writing the batch again the writer then
        /// reads the checkpoint the transaction would have stored, and a batch found committed is not
        /// written twice (rejection counts, stored rejections and pending codes are not idempotent).
        mutating func flush(_ batch: Batch, end: SpoolPosition) -> Bool {
            let checkpoint = SpoolCheckpoint(spoolID: writer.spool.identity, position: end)
            var backoff = Backoff(initial: 0.2, maximum: settings.reconnectDelayMax)
            var outcomeUnknown = false
            let firstAttempt = ContinuousClock.now
            while true {
                noteShutdown()
                do {
                    let connection = try currentConnection()
                    if outcomeUnknown {
                        if try isCommitted(through: end, connection) {
                            // What the lost answer would have said is gone; the samples count as stored.
                            writer.metrics.batchCommitted(
                                stored: batch.samples.count, duplicates: 0, rejected: batch.rejectionCounts,
                                seconds: Self.seconds(ContinuousClock.now - firstAttempt))
                            writer.logger.notice(
                                "the batch was committed before the database connection broke; not writing it again",
                                metadata: ["messages": "\(batch.messageCount)", "checkpoint": "\(end)"])
                            return true
                        }
                        outcomeUnknown = false
                    }
                    let started = ContinuousClock.now
                    let outcome = try writer.store.write(
                        batch, to: connection, checkpoint: (settings.instanceID, checkpoint))
                    let seconds = Self.seconds(ContinuousClock.now - started)
                    writer.metrics.batchCommitted(
                        stored: outcome.inserted, duplicates: outcome.duplicates, rejected: batch.rejectionCounts,
                        seconds: seconds)
                    if outcome.rewrittenAfterMinuteConflict {
                        writer.metrics.databaseError()
                        writer.logger.warning(
                            "a minute the rollups closed already had a stored row; batch written again, merging it",
                            metadata: ["messages": "\(batch.messageCount)"])
                    }
                    if backoff.attempts > 0 {
                        writer.logger.info("database write recovered", metadata: ["attempts": "\(backoff.attempts)"])
                    }
                    return true
                } catch {
                    writer.metrics.databaseError()
                    let connectionProblem = (error as? PostgresError)?.isConnectionError ?? false
                    if dropConnectionIfBroken(after: error) { outcomeUnknown = true }
                    let delay = backoff.nextDelay()
                    writer.logger.warning(
                        connectionProblem
                            ? "database unavailable; batch kept, retrying" : "batch write failed; retrying",
                        metadata: [
                            "error": "\(error)", "messages": "\(batch.messageCount)",
                            "retry_in_s": "\(String(format: "%.1f", delay))",
                        ])
                    if pastShutdownDeadline { return false }
                    sleepBeating(seconds: delay)
                }
            }
        }

        static func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }

        /// Sleeps in short slices, beating the heartbeat: waiting for the database is not a stall.
        func sleepBeating(seconds: Double) {
            let until = Date().addingTimeInterval(seconds)
            while Date() < until {
                writer.heartbeat.beat()
                Thread.sleep(forTimeInterval: min(0.5, max(0, until.timeIntervalSinceNow)))
            }
        }

        mutating func currentConnection() throws -> PostgresConnection {
            if let connection { return connection }
            let fresh = try PostgresConnection(
                connectionString: writer.connectionString, applicationName: "outletd-writer")
            do {
                try writer.store.prepareSession(fresh)
            } catch {
                fresh.close()
                throw error
            }
            connection = fresh
            writer.metrics.setDatabaseConnected(true)
            return fresh
        }
    }
}
