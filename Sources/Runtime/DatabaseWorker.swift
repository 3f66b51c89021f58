import Foundation
import Logging
import Postgres
import ServiceLifecycle

/// What a ``DatabaseWorker`` runs: a job that works with a PostgreSQL connection of its own.
public protocol DatabaseJob: Sendable {
    /// Names the thread, the connection (`application_name`) and the job in log lines (`outletd-registry`).
    var name: String { get }

    /// Works with `connection` until the worker is asked to stop (then returns) or the connection fails (then
    /// throws: the worker reconnects, with capped exponential backoff, and calls it again with a fresh
    /// connection). Blocking: it runs on the worker's thread, never on Swift's cooperative pool.
    func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws

    /// Whether asking the worker to stop ends the job (default). The command relay ends by itself instead,
    /// once its inbox is closed and handled (``isFinished``).
    var stopsWhenAsked: Bool { get }

    /// Whether the job is done by itself. Checked before every connection attempt. Default: never.
    var isFinished: Bool { get }

    /// Called when connecting or ``run(on:_:)`` failed, before the backoff (metrics, hand-back of work).
    func connectionFailed(_ error: any Error)
}

extension DatabaseJob {
    public var stopsWhenAsked: Bool { true }
    public var isFinished: Bool { false }
    public func connectionFailed(_ error: any Error) {}
}

/// The one way outletd runs a background job against PostgreSQL: on a thread of its own (libpq blocks; Swift's
/// cooperative pool has two threads here), with a connection of its own, reconnecting with capped exponential
/// backoff, as a `Service` of the daemon's `ServiceGroup`: its graceful shutdown asks the job to stop and
/// waits until the thread has ended.
public final class DatabaseWorker: Service, Sendable {
    /// What a job sees of its worker while it runs.
    public struct Context: Sendable {
        /// Set when the worker is asked to stop; sleep on it to wake early.
        public let stop: StopFlag
        /// Whether this connection replaces one that failed.
        public let reconnected: Bool
        public let logger: Logger
    }

    private let job: any DatabaseJob
    private let connectionString: String
    private let reconnectDelayMax: Double
    private let logger: Logger
    private let thread: WorkerThread

    /// - Parameter reconnectDelayMax: `database.reconnect_delay_max_seconds`.
    public init(_ job: some DatabaseJob, connectionString: String, reconnectDelayMax: Double, logger: Logger) {
        self.job = job
        self.connectionString = connectionString
        self.reconnectDelayMax = reconnectDelayMax
        self.logger = logger
        self.thread = WorkerThread(name: job.name)
    }

    /// Runs the job until the graceful shutdown (or cancellation), then stops it and waits for its thread.
    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }

    /// Starts the thread (for use outside a `ServiceGroup`: tests, commands of the CLI).
    public func start() {
        thread.start { [self] in loop() }
    }

    /// Asks the job to stop and waits until its thread ended.
    public func stop() async {
        await thread.stop()
    }

    private func loop() {
        let stop = thread.stopFlag
        var backoff = Backoff(initial: 0.5, maximum: max(0.5, reconnectDelayMax))
        var failed = false
        while !job.isFinished && !(job.stopsWhenAsked && stop.isSet) {
            do {
                let connection = try PostgresConnection(connectionString: connectionString, applicationName: job.name)
                defer { connection.close() }
                if failed { logger.info("\(job.name): database connection recovered") }
                backoff.reset()
                try job.run(on: connection, Context(stop: stop, reconnected: failed, logger: logger))
                failed = false
            } catch {
                job.connectionFailed(error)
                failed = true
                let delay = backoff.nextDelay()
                logger.warning(
                    "\(job.name): database connection failed; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                if job.stopsWhenAsked {
                    stop.sleep(seconds: delay)
                } else {
                    Thread.sleep(forTimeInterval: delay)
                }
            }
        }
    }
}
