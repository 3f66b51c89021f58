import Foundation
import Logging
import Postgres
import Telemetry

/// The writer thread: takes messages from the ``IntakeQueue``, classifies them, and writes them in
/// batches (at `batchMaxRows` rows or after `batchMaxDelay`), one transaction each.
///
/// libpq blocks, so this runs on a thread of its own, never on Swift's cooperative pool. When the
/// database is unreachable the batch is kept and retried with capped backoff over a new
/// connection (its session state — staging table, prepared statements — is created again);
/// meanwhile the queue fills and then holds the broker back.
public final class BatchWriter: Sendable {
    /// How the writer batches and retries.
    public struct Settings: Sendable {
        public var batchMaxRows: Int
        public var batchMaxDelay: Double
        public var reconnectDelayMax: Double
        public var shutdownFlushTimeout: Double
        public var rejectionLogInterval: Double
        public var maxStoredRejectionsPerBatch: Int
        public var payloadExcerptBytes: Int

        public init(_ configuration: OutletdConfiguration) {
            batchMaxRows = configuration.ingest.batchMaxRows
            batchMaxDelay = Double(configuration.ingest.batchMaxDelayMilliseconds) / 1_000
            reconnectDelayMax = configuration.database.reconnectDelayMaxSeconds
            shutdownFlushTimeout = configuration.ingest.shutdownFlushTimeoutSeconds
            rejectionLogInterval = configuration.rejections.logIntervalSeconds
            maxStoredRejectionsPerBatch = configuration.rejections.maxStoredPerBatch
            payloadExcerptBytes = configuration.rejections.payloadExcerptBytes
        }
    }

    private let queue: IntakeQueue
    private let registry: DeviceRegistry
    private let classifier: MessageClassifier
    private let store: BatchStore
    private let settings: Settings
    private let connectionString: String
    private let metrics: IngestMetrics
    private let logger: Logger
    private let completion = ThreadCompletion()
    private let outcome = OutcomeBox()
    /// Beats on every turn of the writer's loop, also while it waits for the database; the
    /// systemd watchdog is fed only while it is recent.
    public let heartbeat = Heartbeat()

    public init(
        queue: IntakeQueue, registry: DeviceRegistry, classifier: MessageClassifier, store: BatchStore,
        settings: Settings, connectionString: String, metrics: IngestMetrics, logger: Logger
    ) {
        self.queue = queue
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

    /// Waits until the thread ended (after ``IntakeQueue/close()`` it drains the queue first).
    /// Returns the number of messages it could not write (0 after a clean drain).
    public func finish() async -> Int {
        await completion.wait()
        return outcome.unwritten
    }

    /// The writer's mutable state, owned by its thread.
    private struct Loop {
        let writer: BatchWriter
        var connection: PostgresConnection?
        var limiter: RejectionLogLimiter
        var shutdownDeadline: Date?
        var misses = RegistryMissPolicy(lookupsPerSecond: 50, negativeSeconds: 2)

        init(writer: BatchWriter) {
            self.writer = writer
            self.limiter = RejectionLogLimiter(interval: writer.settings.rejectionLogInterval)
        }

        var settings: Settings { writer.settings }

        mutating func run() {
            defer { connection?.close() }
            var batch = newBatch()
            var batchStartedAt: Date?
            while true {
                writer.heartbeat.beat()
                noteShutdown()
                guard waitForRegistry() else {
                    writer.outcome.add(unwritten: batch.messageCount + writer.queue.depth)
                    return
                }
                let now = Date()
                let deadline =
                    batchStartedAt.map { $0.addingTimeInterval(settings.batchMaxDelay) }
                    ?? now.addingTimeInterval(0.5)
                let room = max(1, settings.batchMaxRows - batch.rowCount)
                let messages = writer.queue.take(upTo: room, waitingUntil: deadline)
                writer.metrics.setBacklog(messages: writer.queue.depth, bytes: writer.queue.depthBytes)
                for message in messages {
                    let classified = writer.classifier.classify(message) { lookup($0) }
                    logRejections(classified, message)
                    batch.add(classified, of: message)
                }
                if batchStartedAt == nil && !batch.isEmpty { batchStartedAt = Date() }
                let drained = writer.queue.isClosedAndDrained
                let due = batchStartedAt.map { Date().timeIntervalSince($0) >= settings.batchMaxDelay } ?? false
                if !batch.isEmpty && (batch.rowCount >= settings.batchMaxRows || due || drained) {
                    guard flush(batch) else {
                        writer.outcome.add(unwritten: batch.messageCount + writer.queue.depth)
                        return
                    }
                    batch = newBatch()
                    batchStartedAt = nil
                }
                if drained && batch.isEmpty { return }
            }
        }

        func newBatch() -> Batch {
            Batch(
                maxStoredRejections: settings.maxStoredRejectionsPerBatch,
                payloadExcerptBytes: settings.payloadExcerptBytes)
        }

        mutating func noteShutdown() {
            if shutdownDeadline == nil && writer.queue.isClosed {
                shutdownDeadline = Date().addingTimeInterval(settings.shutdownFlushTimeout)
            }
        }

        var pastShutdownDeadline: Bool {
            if let shutdownDeadline { return Date() >= shutdownDeadline }
            return false
        }

        /// The registry, asked first; on a miss the database itself (rate limited), so an outlet
        /// registered a moment ago is accepted even before its NOTIFY arrived.
        mutating func lookup(_ code: String) -> RegisteredDevice? {
            if let device = writer.registry.lookup(code) { return device }
            guard let connection, misses.shouldLookUp(code, at: Date()) else { return nil }
            guard let device = try? DeviceStore(connection: connection).registryEntry(code) else { return nil }
            writer.registry.update(code, device)
            return device
        }

        /// Classifying before the registry is loaded would reject every code as unknown.
        mutating func waitForRegistry() -> Bool {
            while !writer.registry.isLoaded {
                writer.heartbeat.beat()
                noteShutdown()
                if pastShutdownDeadline { return false }
                if writer.queue.isClosedAndDrained { return true }
                Thread.sleep(forTimeInterval: 0.05)
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

        /// Writes the batch, retrying until it is committed. Returns false only when shutting down
        /// and the flush timeout passed.
        mutating func flush(_ batch: Batch) -> Bool {
            var backoff = Backoff(initial: 0.2, maximum: settings.reconnectDelayMax)
            while true {
                noteShutdown()
                do {
                    let connection = try currentConnection()
                    let started = ContinuousClock.now
                    let outcome = try writer.store.write(batch, to: connection)
                    let elapsed = ContinuousClock.now - started
                    let seconds =
                        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    writer.metrics.batchCommitted(
                        stored: outcome.inserted, duplicates: outcome.duplicates, rejected: batch.rejectionCounts,
                        seconds: seconds)
                    if backoff.attempts > 0 {
                        writer.logger.info("database write recovered", metadata: ["attempts": "\(backoff.attempts)"])
                    }
                    return true
                } catch {
                    writer.metrics.databaseError()
                    let connectionProblem = (error as? PostgresError)?.isConnectionError ?? false
                    if connectionProblem || connection?.isHealthy == false {
                        connection?.close()
                        connection = nil
                    }
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

/// The writer's result, set on its thread and read after it ended. Lock-guarded.
private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func add(unwritten: Int) {
        lock.lock()
        count += unwritten
        lock.unlock()
    }

    var unwritten: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
