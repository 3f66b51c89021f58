import Foundation
import Logging
import MessageSpool
import Observability
import Postgres
import Runtime
import Storage
import Synchronization
import WritePath

/// The writer's database side, on a thread of its own: it owns the writer's connection and writes the
/// batches ``BatchWriter``'s loop hands it, one at a time and in the spool's order, each in one transaction
/// with the spool position just after it; after the commit it tells the spool.
///
/// While it writes one batch, the loop reads and classifies the next: outletd's work on a batch and
/// PostgreSQL's on the one before overlap. At most one batch is in flight; the next is handed over only once
/// it is committed, so the commits, and the checkpoints they store, keep the spool's order, and a crash
/// loses nothing: what is not committed is read from the spool again at the next start.
///
/// The connection never leaves this thread (libpq's connections are used by one thread at a time): the loop's
/// few other questions to the database (the checkpoint to start from, a code the registry does not know) are
/// asked through the same hand-off, once no batch is in flight, and answered here.
final class BatchCommitter: Sendable {
    /// A batch handed over for writing.
    struct Job: Sendable {
        var batch: Batch
        /// The spool position just after the batch's last record, and how many records it holds.
        var end: SpoolPosition
        var records: Int
        /// When the batch's messages were received, for `outletd_ingest_latency_seconds`.
        var receivedAt: [Date]
    }

    private enum Request: Sendable {
        case write(Job)
        case loadCheckpoint
        case registryEntry(String)
    }

    private enum Answer: Sendable {
        case checkpoint(Result<SpoolCheckpoint?, any Error>)
        case registryEntry(RegisteredDevice?)
    }

    private struct State: Sendable {
        /// Asked and not yet taken by the thread.
        var request: Request?
        /// A request asked and not yet done (a batch not yet committed or given up).
        var busy = false
        var answer: Answer?
        /// A write gave up: the shutdown deadline passed before the database took it.
        var gaveUp = false
        /// The database lacks commits the spool still holds (a failover): the loop reloads the checkpoint and
        /// reads again from there (``takeReposition()``).
        var reposition = false
        var closed = false
        var finished = false
    }

    private let state = Guarded(State())
    private let spool: Spool
    private let store: BatchStore
    private let settings: BatchWriter.Settings
    private let connectionString: String
    private let metrics: IngestMetrics
    private let logger: Logger
    private let heartbeat: Heartbeat
    private let shutdown: ShutdownDeadline

    init(
        spool: Spool, store: BatchStore, settings: BatchWriter.Settings, connectionString: String,
        metrics: IngestMetrics, logger: Logger, heartbeat: Heartbeat, shutdown: ShutdownDeadline
    ) {
        self.spool = spool
        self.store = store
        self.settings = settings
        self.connectionString = connectionString
        self.metrics = metrics
        self.logger = logger
        self.heartbeat = heartbeat
        self.shutdown = shutdown
    }

    /// Starts the thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "outletd-commit"
        thread.start()
    }

    /// Whether a batch is in flight.
    var isBusy: Bool { state.withLock { $0.busy } }

    /// Hands `job` over; only while no batch is in flight (after ``waitUntilIdle()``).
    func submit(_ job: Job) {
        state.update { state in
            precondition(!state.busy, "a batch handed over while another is in flight")
            state.request = .write(job)
            state.busy = true
        }
    }

    /// Waits until no batch is in flight. False when a write gave up at the shutdown deadline: the loop
    /// ends, and what was not committed stays in the spool for the next start.
    func waitUntilIdle() -> Bool {
        state.wait(until: nil, for: { !$0.busy }) { state, _ in !state.gaveUp }
    }

    /// Whether the database was found lacking commits the spool holds since the last call (a failover to a standby
    /// that had not received them, with `database.durability: replicated`). The batch in flight was not written;
    /// the loop drops what it holds, reloads the checkpoint and reads the spool again from it.
    func takeReposition() -> Bool {
        state.update { state in
            defer { state.reposition = false }
            return state.reposition
        }
    }

    /// Waits for the batch in flight, then ends the thread, which closes the connection.
    func close() {
        state.update { $0.closed = true }
        state.wait(until: nil, for: { $0.finished }) { _, _ in }
    }

    /// The stored spool position of this instance (the loop's start), over the connection, made now if
    /// there is none. Waits until no batch is in flight.
    func loadCheckpoint() throws -> SpoolCheckpoint? {
        guard case .checkpoint(let result) = ask(.loadCheckpoint) else { preconditionFailure("answer mismatch") }
        return try result.get()
    }

    /// The database's entry for a code the registry does not know, over the connection if there is one
    /// (nil without). Waits until no batch is in flight.
    func registryEntry(_ code: String) -> RegisteredDevice? {
        guard case .registryEntry(let device) = ask(.registryEntry(code)) else {
            preconditionFailure("answer mismatch")
        }
        return device
    }

    private func ask(_ request: Request) -> Answer {
        state.wait(until: nil, for: { !$0.busy }) { state, _ in
            state.request = request
            state.busy = true
            state.answer = nil
        }
        return state.wait(until: nil, for: { !$0.busy }) { state, _ in
            defer { state.answer = nil }
            guard let answer = state.answer else { preconditionFailure("a question left unanswered") }
            return answer
        }
    }

    private func run() {
        var connection: PostgresConnection?
        var replication = ReplicationTracker()
        defer { connection?.close() }
        while true {
            // With `durability: replicated`, a look at the standbys every second while no batch comes.
            let deadline = settings.replicated ? Date().addingTimeInterval(1) : nil
            let (request, closed) = state.wait(until: deadline, for: { $0.request != nil || $0.closed }) {
                state, _ in
                defer { state.request = nil }
                return (state.request, state.closed)
            }
            guard let request else {
                if closed { break }
                if let current = connection { followStandbys(current, &connection, &replication) }
                continue
            }
            switch request {
            case .write(let job):
                heartbeat.beat()
                let outcome = write(job, &connection, &replication)
                if outcome == .committed {
                    spool.commit(through: job.end, records: job.records)
                    metrics.batchLatencies(receivedAt: job.receivedAt, committedAt: Date())
                    if settings.replicated, let current = connection {
                        followStandbys(current, &connection, &replication, committed: job.end)
                    }
                    heartbeat.beat()
                }
                state.update { state in
                    state.busy = false
                    if outcome == .gaveUp { state.gaveUp = true }
                    if outcome == .reposition { state.reposition = true }
                }
            case .loadCheckpoint:
                let result = Result<SpoolCheckpoint?, any Error> {
                    do {
                        let current = try connect(&connection)
                        let checkpoint = try BatchStore.loadCheckpoint(of: settings.instanceID, current)
                        if settings.replicated {
                            // What the spool holds before the checkpoint goes once a standby has today's WAL.
                            let ours = checkpoint.flatMap { $0.spoolID == spool.identity ? $0.position : nil }
                            let status = try ReplicationStatus.read(current)
                            replication.restart(committedBefore: ours, lsn: status.currentLSN)
                        }
                        return checkpoint
                    } catch {
                        dropIfBroken(&connection, after: error)
                        throw error
                    }
                }
                state.update { state in
                    state.answer = .checkpoint(result)
                    state.busy = false
                }
            case .registryEntry(let code):
                let device = connection.flatMap { try? DeviceStore(connection: $0).registryEntry(code) }
                state.update { state in
                    state.answer = .registryEntry(device)
                    state.busy = false
                }
            }
        }
        state.update { $0.finished = true }
    }

    /// The connection, made now (with its session: staging tables, prepared statements) if there is none.
    private func connect(_ connection: inout PostgresConnection?) throws -> PostgresConnection {
        if let connection { return connection }
        let fresh = try PostgresConnection(connectionString: connectionString, applicationName: "outletd-writer")
        do {
            try store.prepareSession(fresh)
        } catch {
            fresh.close()
            throw error
        }
        connection = fresh
        metrics.setDatabaseConnected(true)
        return fresh
    }

    /// Closes the connection when `error` says it is broken; returns whether it did.
    @discardableResult
    private func dropIfBroken(_ connection: inout PostgresConnection?, after error: any Error) -> Bool {
        let connectionProblem = (error as? PostgresError)?.isConnectionError ?? false
        guard connectionProblem || connection?.isHealthy == false else { return false }
        connection?.close()
        connection = nil
        return true
    }

    /// Whether the batch ending at `end` is committed already: its transaction stored that
    /// position in `ingest_checkpoints`, and only this writer moves this instance's row forward.
    private func isCommitted(through end: SpoolPosition, _ connection: PostgresConnection) throws -> Bool {
        guard let stored = try BatchStore.loadCheckpoint(of: settings.instanceID, connection) else { return false }
        return stored.spoolID == spool.identity && stored.position >= end
    }

    /// With `durability: replicated`: after a batch ending at `committed` (nil: none) was committed, or every
    /// second while idle, reads where the standbys are, lets the spool release what one has, and tells the
    /// metrics (and the log, when it changes) whether one keeps up. A broken connection is dropped: the next write
    /// reconnects and checks what the server has.
    private func followStandbys(
        _ current: PostgresConnection, _ connection: inout PostgresConnection?, _ replication: inout ReplicationTracker,
        committed end: SpoolPosition? = nil
    ) {
        do {
            let status = try ReplicationStatus.read(current)
            if let end { replication.committed(through: end, before: status.currentLSN) }
            if let position = replication.confirmed(byFlushLSN: status.standbyFlushLSN) {
                spool.release(through: position)
            }
            let gauges = ReplicationTracker.gauges(status)
            let previous = metrics.replication
            if gauges.problem != previous?.problem {
                if let problem = gauges.problem {
                    logger.warning("\(problem)", metadata: ["standbys": "\(status.standbys)"])
                } else if previous != nil {
                    logger.notice("a standby has the readings again", metadata: ["standbys": "\(status.standbys)"])
                }
            }
            metrics.setReplication(gauges)
        } catch {
            // Not a batch's failure: what was committed stays in the spool until a later look confirms it.
            logger.warning("cannot read the standbys' positions", metadata: ["error": "\(error)"])
            dropIfBroken(&connection, after: error)
        }
    }

    /// With `durability: replicated`, on a new connection: whether the server lacks commits this instance made (its
    /// checkpoint is behind the spool's committed position): after a failover to a standby that had not received
    /// them. The spool still holds them; the loop reads them again.
    private func lacksCommits(_ connection: PostgresConnection) throws -> Bool {
        let stored = try BatchStore.loadCheckpoint(of: settings.instanceID, connection)
        let committed = spool.committedPosition
        guard let stored, stored.spoolID == spool.identity else {
            // No checkpoint of this spool there: lacking only if something of this spool was committed.
            return committed > spool.oldestPosition
        }
        guard stored.position < committed else { return false }
        logger.warning(
            """
            the database lacks batches this instance committed (a failover to a standby that had not received \
            them); writing them again from the spool
            """,
            metadata: ["database_checkpoint": "\(stored.position)", "spool_committed": "\(committed)"])
        return true
    }

    /// What became of a batch handed to ``write(_:_:_:)``.
    private enum Outcome: Equatable {
        case committed
        /// The shutdown deadline passed first.
        case gaveUp
        /// The database lacks earlier batches (``lacksCommits(_:)``): this one was not written.
        case reposition
    }

    /// Writes the batch and its spool position in one transaction, retrying until it is committed.
    /// Gives up only when shutting down and the flush timeout passed.
    ///
    /// A connection lost while the transaction ran leaves its outcome unknown: the `COMMIT` may have
    /// reached the server and its answer been lost. Before writing the batch again it then reads the
    /// checkpoint the transaction would have stored, and a batch found committed is not written twice
    /// (rejection counts, stored rejections and pending codes are not idempotent).
    private func write(_ job: Job, _ connection: inout PostgresConnection?, _ replication: inout ReplicationTracker)
        -> Outcome
    {
        let batch = job.batch
        let checkpoint = BatchStore.Checkpoint(
            instanceID: settings.instanceID, spool: SpoolCheckpoint(spoolID: spool.identity, position: job.end),
            oldestReceivedAt: job.receivedAt.min())
        var backoff = Backoff(initial: 0.2, maximum: settings.reconnectDelayMax)
        var outcomeUnknown = false
        let firstAttempt = ContinuousClock.now
        while true {
            do {
                let fresh = connection == nil
                let current = try connect(&connection)
                if fresh, settings.replicated, try lacksCommits(current) {
                    replication = ReplicationTracker()
                    return .reposition
                }
                if outcomeUnknown {
                    if try isCommitted(through: job.end, current) {
                        // What the lost answer would have said is gone; the samples count as stored.
                        metrics.batchCommitted(
                            stored: batch.samples.count, duplicates: 0, rejected: batch.rejectionCounts,
                            seconds: Self.seconds(ContinuousClock.now - firstAttempt))
                        logger.notice(
                            "the batch was committed before the database connection broke; not writing it again",
                            metadata: ["messages": "\(batch.messageCount)", "checkpoint": "\(job.end)"])
                        return .committed
                    }
                    outcomeUnknown = false
                }
                let started = ContinuousClock.now
                let outcome = try store.write(batch, to: current, checkpoint: checkpoint)
                metrics.batchCommitted(
                    stored: outcome.inserted, duplicates: outcome.duplicates, rejected: batch.rejectionCounts,
                    seconds: Self.seconds(ContinuousClock.now - started))
                if outcome.rewrittenAfterMinuteConflict {
                    metrics.databaseError()
                    logger.warning(
                        "a minute the rollups closed already had a stored row; batch written again, merging it",
                        metadata: ["messages": "\(batch.messageCount)"])
                }
                if backoff.attempts > 0 {
                    logger.info("database write recovered", metadata: ["attempts": "\(backoff.attempts)"])
                }
                return .committed
            } catch {
                metrics.databaseError()
                let connectionProblem = (error as? PostgresError)?.isConnectionError ?? false
                if dropIfBroken(&connection, after: error) { outcomeUnknown = true }
                let delay = backoff.nextDelay()
                logger.warning(
                    connectionProblem ? "database unavailable; batch kept, retrying" : "batch write failed; retrying",
                    metadata: [
                        "error": "\(error)", "messages": "\(batch.messageCount)",
                        "retry_in_s": "\(String(format: "%.1f", delay))",
                    ])
                if shutdown.isPast { return .gaveUp }
                heartbeat.sleepBeating(seconds: delay)
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

}

/// When the writer stops trying at shutdown: `ingest.shutdown_flush_timeout_seconds` after the spool's
/// intake stopped. Shared by the writer's loop and its committer.
final class ShutdownDeadline: Sendable {
    private let spool: Spool
    private let timeout: Double
    private let deadline = Mutex<Date?>(nil)

    init(spool: Spool, timeout: Double) {
        self.spool = spool
        self.timeout = timeout
    }

    /// Starts the clock once the intake stopped.
    func note() {
        guard spool.isIntakeStopped else { return }
        deadline.withLock { $0 = $0 ?? Date().addingTimeInterval(timeout) }
    }

    /// Whether the intake stopped longer than the timeout ago.
    var isPast: Bool {
        note()
        return deadline.withLock { deadline in deadline.map { Date() >= $0 } ?? false }
    }
}
