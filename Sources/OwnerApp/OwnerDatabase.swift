import Foundation
import Hummingbird
import Logging
import Postgres
import Runtime
import Storage

/// The app's way to PostgreSQL: a few ``DatabaseWorker``s (threads with a connection each, reconnecting with backoff,
/// the hot reads prepared on each: ``OwnerStore/prepareStatements(_:)``) that take queries from one queue. A route
/// awaits ``run(_:)``; the query, and bcrypt, run on a worker's thread, never on Swift's cooperative pool (two threads
/// here).
public final class OwnerDatabase: Sendable {
    /// A query waiting for a worker.
    struct Query: Sendable {
        let enqueuedAt: Date
        /// Runs the query with a connection (or fails it with the error given), resuming its caller once.
        let execute: @Sendable (Result<PostgresConnection, any Error>) -> Void
    }

    struct State: Sendable {
        var queries: [Query] = []
        var closed = false
    }

    /// Why a query did not run: the app answers 503.
    public struct Unavailable: Error, CustomStringConvertible, HTTPResponseError {
        public var description: String
        public var status: HTTPResponse.Status { .serviceUnavailable }

        public func response(from request: Request, context: some RequestContext) throws -> Response {
            try HTTPError(.serviceUnavailable, headers: [.retryAfter: "5"], message: description)
                .response(from: request, context: context)
        }
    }

    /// A query not taken by a worker within this is failed (the database is down), seconds.
    static let queueTimeoutSeconds = 10.0

    private let state = Guarded(State())
    let workers: [DatabaseWorker]

    /// - Parameter workerCount: connections, and threads, serving the app.
    public init(connectionString: String, workerCount: Int = 2, reconnectDelayMax: Double, logger: Logger) {
        let state = self.state
        workers = (0..<max(1, workerCount)).map { index in
            DatabaseWorker(
                OwnerQueryJob(name: "outletd-app-\(index + 1)", state: state), connectionString: connectionString,
                reconnectDelayMax: reconnectDelayMax, logger: logger)
        }
    }

    /// Starts the workers' threads.
    func start() {
        state.update { $0.closed = false }
        for worker in workers { worker.start() }
    }

    /// Fails what waits, stops the workers and waits for their threads.
    func stop() async {
        let abandoned = state.update { state in
            state.closed = true
            defer { state.queries = [] }
            return state.queries
        }
        for query in abandoned { query.execute(.failure(Unavailable(description: "the app is stopping"))) }
        for worker in workers { await worker.stop() }
    }

    /// Runs `body` with an ``OwnerStore`` on a worker's connection and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable (OwnerStore) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let query = Query(enqueuedAt: Date()) { connection in
                continuation.resume(with: Result { try body(OwnerStore(connection: connection.get(), prepared: true)) })
            }
            // One worker is woken for one query (waking both cost each query two thread switches).
            let accepted = state.update(waking: .one) { state in
                guard !state.closed else { return false }
                state.queries.append(query)
                return true
            }
            if !accepted { query.execute(.failure(Unavailable(description: "the app is stopping"))) }
        }
    }

    /// Takes the next query, waiting up to `seconds`; queries waiting longer than the queue time-out are failed.
    fileprivate static func take(from state: Guarded<State>, waiting seconds: Double) -> Query? {
        let (query, expired) = state.wait(
            until: Date(timeIntervalSinceNow: seconds), for: { !$0.queries.isEmpty }, waking: .none
        ) { state, ready -> (Query?, [Query]) in
            guard ready else { return (nil, []) }
            let limit = Date(timeIntervalSinceNow: -queueTimeoutSeconds)
            let expired = state.queries.filter { $0.enqueuedAt < limit }
            state.queries.removeAll { $0.enqueuedAt < limit }
            return (state.queries.isEmpty ? nil : state.queries.removeFirst(), expired)
        }
        for query in expired {
            query.execute(.failure(Unavailable(description: "the database did not answer in time")))
        }
        return query
    }
}

/// One worker's loop: take a query, run it, until asked to stop. A query that leaves the connection broken ends
/// the loop with an error, so the worker reconnects.
struct OwnerQueryJob: DatabaseJob {
    let name: String
    let state: Guarded<OwnerDatabase.State>

    struct ConnectionBroken: Error, CustomStringConvertible {
        var description: String { "the connection broke during a query" }
    }

    func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try OwnerStore.prepareStatements(connection)
        while !context.stop.isSet {
            guard let query = OwnerDatabase.take(from: state, waiting: 0.2) else { continue }
            query.execute(.success(connection))
            if !connection.isHealthy { throw ConnectionBroken() }
        }
    }
}
