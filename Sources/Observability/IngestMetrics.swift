import CoreMetrics
import Foundation
import Prometheus
import Synchronization
import Telemetry

/// The daemon's metrics: counters of the ingest path and of switching, the spool's gauges and latency histograms.
///
/// Two views of the same events, updated together by each method:
/// - a ``Snapshot`` behind one `Mutex`, which readiness, the `ingest in the last 60 s` log line and the tests read;
/// - swift-metrics handles (`Counter`, `Recorder`, `Timer`) made by a `PrometheusMetricsFactory` over this
///   instance's own `PrometheusCollectorRegistry` (``registry``), which `/metrics` emits (``PrometheusExposition``).
///
/// Every metric is named `outletd_…` with its unit in the name. The counters that move once per message (received,
/// ignored, duplicate) cost the hot path only the snapshot's lock: they are carried to their swift-metrics counters
/// by difference when `/metrics` is read (``synchronize()``), not per message (a swift-metrics increment per message
/// cost about five times the lock). The writer's other counters move once per batch.
public final class IngestMetrics: Sendable {
    /// A consistent copy of the counters.
    public struct Snapshot: Sendable, Equatable {
        public var messagesReceived: UInt64 = 0
        public var readingsStored: UInt64 = 0
        /// Valid readings already in the database (a replay or a repeated message).
        public var readingsDuplicate: UInt64 = 0
        public var rejected: [RejectionReason: UInt64] = [:]
        /// Messages that carried nothing to store and nothing wrong, by kind (see ``IgnoredKind``).
        public var ignored: [IgnoredKind: UInt64] = [:]
        public var batchesCommitted: UInt64 = 0
        public var lastCommitSeconds: Double = 0
        public var databaseErrors: UInt64 = 0
        /// Whether the MQTT client is connected to the broker.
        public var brokerConnected = false
        /// Whether the writer's last attempt to reach PostgreSQL succeeded.
        public var databaseConnected = false
        /// Bytes of the spool's segment files.
        public var spoolBytes: Int64 = 0
        /// Records received and not yet committed to PostgreSQL.
        public var spoolRecordsPending: Int = 0
        /// How long the oldest of them has waited, seconds (0 when none).
        public var spoolOldestRecordAgeSeconds: Double = 0
        /// Bytes of records committed and kept until a standby has them (`database.durability: replicated`).
        public var spoolUnconfirmedBytes: Int64 = 0
        /// With `database.durability: replicated`, what the writer last saw of the standbys (nil otherwise).
        public var replication: ReplicationGauges?
        /// Commands published to outlets (the command relay).
        public var commandsPublished: UInt64 = 0
        /// Results published on `set/result`, by result (accepted, sent, confirmed, timed_out, …).
        public var commandResults: [String: UInt64] = [:]

        public init() {}

        public var rejectedTotal: UInt64 { rejected.values.reduce(0, +) }
    }

    /// What the spool holds, as its gauges show it.
    public struct BacklogGauges: Sendable {
        public var bytes: Int64
        public var records: Int
        public var oldestReceivedAt: Date?
        public var unconfirmedBytes: Int64

        public init(bytes: Int64, records: Int, oldestReceivedAt: Date?, unconfirmedBytes: Int64 = 0) {
            self.bytes = bytes
            self.records = records
            self.oldestReceivedAt = oldestReceivedAt
            self.unconfirmedBytes = unconfirmedBytes
        }
    }

    /// The standbys as the writer saw them (`database.durability: replicated`).
    public struct ReplicationGauges: Sendable, Equatable {
        /// Physical standbys connected to the primary.
        public var standbys: Int
        /// WAL bytes the most advanced standby has not flushed; nil when none reports a position.
        public var lagBytes: UInt64?
        /// Why readings stay in the spool, for `/readyz` and the log (nil while a standby keeps up).
        public var problem: String?

        public init(standbys: Int, lagBytes: UInt64?, problem: String?) {
            self.standbys = standbys
            self.lagBytes = lagBytes
            self.problem = problem
        }
    }

    /// The registry `/metrics` emits: this instance's metrics, then the process's and the build's.
    public let registry: PrometheusCollectorRegistry
    /// Makes swift-metrics handles in ``registry``, for libraries that record through swift-metrics.
    public let factory: PrometheusMetricsFactory
    let exported: Exported

    private struct State: Sendable {
        var counters = Snapshot()
        var backlog: (@Sendable () -> BacklogGauges)?
        /// What the per-message counters had when they were last carried to swift-metrics.
        var exportedReceived: UInt64 = 0
        var exportedDuplicates: UInt64 = 0
        var exportedIgnored: [IgnoredKind: UInt64] = [:]
    }
    private let state = Mutex(State())

    /// Bucket bounds of the histograms, by metric name.
    static let valueBuckets: [String: [Double]] = [
        "outletd_batch_rows": [1, 10, 100, 500, 1_000, 5_000, 10_000, 50_000],
        "outletd_commit_seconds": [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    ]
    static let durationBuckets: [String: [Duration]] = [
        // Receipt (the message in the spool) to the commit that stored it: a batch's delay, its transaction,
        // and any backlog before it.
        "outletd_ingest_latency_seconds": [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30), .seconds(300),
        ],
        // A switch request stored to the outlet's state report confirming it.
        "outletd_command_confirm_seconds": [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
        ],
    ]

    /// - Parameter build: the `outletd_build_info` labels (version and commit).
    public init(build: BuildInfo = .current) {
        registry = PrometheusCollectorRegistry()
        factory = PrometheusMetricsFactory(registry: registry)
        exported = Exported(registry: registry, factory: factory)
        let buildInfo = registry.makeGauge(
            descriptor: .named(
                "outletd_build_info", help: "The version and git commit outletd was built from (always 1)."),
            labels: [("version", build.version), ("commit", build.commit)])
        buildInfo.set(to: 1)
    }

    /// The counters, and the spool's gauges as of now.
    public func snapshot() -> Snapshot {
        let (counters, backlog) = state.withLock { ($0.counters, $0.backlog) }
        var snapshot = counters
        if let gauges = backlog?() {
            snapshot.spoolBytes = gauges.bytes
            snapshot.spoolRecordsPending = gauges.records
            snapshot.spoolOldestRecordAgeSeconds =
                gauges.oldestReceivedAt.map { max(0, Date().timeIntervalSince($0)) } ?? 0
            snapshot.spoolUnconfirmedBytes = gauges.unconfirmedBytes
        }
        return snapshot
    }

    /// Carries the per-message counters to their swift-metrics counters (by their increase since the last call)
    /// and sets the gauges that are read, not counted (connections, the spool). Called before each exposition.
    public func synchronize() {
        let (received, duplicates, ignored) = state.withLock { state in
            let counters = state.counters
            let received = counters.messagesReceived - state.exportedReceived
            let duplicates = counters.readingsDuplicate - state.exportedDuplicates
            var ignored: [IgnoredKind: UInt64] = [:]
            for (kind, count) in counters.ignored { ignored[kind] = count - (state.exportedIgnored[kind] ?? 0) }
            state.exportedReceived = counters.messagesReceived
            state.exportedDuplicates = counters.readingsDuplicate
            state.exportedIgnored = counters.ignored
            return (received, duplicates, ignored)
        }
        if received > 0 { exported.messagesReceived.increment(by: received) }
        if duplicates > 0 { exported.readingsDuplicate.increment(by: duplicates) }
        for (kind, count) in ignored where count > 0 { exported.ignored[kind]?.increment(by: count) }
        let now = snapshot()
        exported.brokerConnected.record(now.brokerConnected ? 1 : 0)
        exported.databaseConnected.record(now.databaseConnected ? 1 : 0)
        exported.spoolRecordsPending.record(now.spoolRecordsPending)
        exported.spoolBytes.record(now.spoolBytes)
        exported.spoolOldestRecordAge.record(now.spoolOldestRecordAgeSeconds)
        if let replication = now.replication {
            // Registered at the first report: an instance with `durability: local` shows none of them.
            exported.gauge("outletd_spool_unconfirmed_bytes", Exported.unconfirmedHelp).record(
                now.spoolUnconfirmedBytes)
            exported.gauge("outletd_replication_standbys", Exported.standbysHelp).record(replication.standbys)
            exported.gauge("outletd_replication_lag_bytes", Exported.lagHelp).record(
                replication.lagBytes.map { Double($0) } ?? .nan)
        }
    }

    /// What the writer saw of the standbys (`database.durability: replicated`).
    public func setReplication(_ replication: ReplicationGauges) {
        count { $0.replication = replication }
    }

    /// What was last set by ``setReplication(_:)``, without the spool's gauges a ``snapshot()`` reads.
    public var replication: ReplicationGauges? {
        state.withLock { $0.counters.replication }
    }

    /// Where the spool gauges come from.
    public func observeBacklog(_ gauges: @escaping @Sendable () -> BacklogGauges) {
        state.withLock { $0.backlog = gauges }
    }

    private func count(_ change: (inout Snapshot) -> Void) {
        state.withLock { change(&$0.counters) }
    }

    public func messageReceived() {
        count { $0.messagesReceived += 1 }
    }

    /// A message was ignored (nothing to store, nothing wrong).
    public func messageIgnored(_ kind: IgnoredKind) {
        count { $0.ignored[kind, default: 0] += 1 }
    }

    /// Readings left out of a message because an earlier one of it has the same time.
    public func duplicatesDropped(_ duplicates: Int) {
        count { $0.readingsDuplicate += UInt64(duplicates) }
    }

    /// A batch was committed.
    public func batchCommitted(stored: Int, duplicates: Int, rejected: [RejectionReason: Int], seconds: Double) {
        let rejectedRows = rejected.values.reduce(0, +)
        count { counters in
            counters.readingsStored += UInt64(stored)
            counters.readingsDuplicate += UInt64(duplicates)
            for (reason, count) in rejected { counters.rejected[reason, default: 0] += UInt64(count) }
            counters.batchesCommitted += 1
            counters.lastCommitSeconds = seconds
            counters.databaseConnected = true
        }
        exported.readingsStored.increment(by: stored)
        for (reason, count) in rejected { exported.rejected[reason]?.increment(by: count) }
        exported.batchesCommitted.increment()
        exported.batchRows.record(stored + duplicates + rejectedRows)
        exported.commitSeconds.record(seconds)
    }

    /// The messages of a committed batch, received at `receivedAt` (in the spool), observed in
    /// `outletd_ingest_latency_seconds` against `committedAt`.
    public func batchLatencies(receivedAt: [Date], committedAt: Date) {
        for received in receivedAt {
            let latency = max(0, committedAt.timeIntervalSince(received))
            exported.ingestLatency.recordNanoseconds(Int64(latency * 1e9))
        }
    }

    /// A set request, state or availability report was refused (counted with the readings' rejections).
    public func commandMessageRejected(_ reason: RejectionReason) {
        count { $0.rejected[reason, default: 0] += 1 }
        exported.rejected[reason]?.increment()
    }

    /// A result was published on `set/result`; a confirmation carries the seconds since its request was stored.
    public func commandResultPublished(_ result: String, secondsSinceRequest: Double? = nil) {
        count { $0.commandResults[result, default: 0] += 1 }
        exported.commandResult(result).increment()
        if result == "confirmed", let seconds = secondsSinceRequest {
            exported.commandConfirm.recordNanoseconds(Int64(max(0, seconds) * 1e9))
        }
    }

    public func commandPublished() {
        count { $0.commandsPublished += 1 }
        exported.commandsPublished.increment()
    }

    public func databaseError() {
        count {
            $0.databaseErrors += 1
            $0.databaseConnected = false
        }
        exported.databaseErrors.increment()
    }

    public func setDatabaseConnected(_ connected: Bool) {
        count { $0.databaseConnected = connected }
    }

    public func setBrokerConnected(_ connected: Bool) {
        count { $0.brokerConnected = connected }
    }
}

extension IngestMetrics {
    /// The swift-metrics handles. Each is registered in the registry with its help text (the factory's own
    /// `make…` would register it without one) and wrapped in the swift-metrics type the code records through.
    /// Those with a label value are made for every value up front, so that a series reads 0 before its first
    /// event instead of being absent.
    struct Exported: Sendable {
        let registry: PrometheusCollectorRegistry
        let factory: PrometheusMetricsFactory
        let messagesReceived: CoreMetrics.Counter
        let readingsStored: CoreMetrics.Counter
        let readingsDuplicate: CoreMetrics.Counter
        let rejected: [RejectionReason: CoreMetrics.Counter]
        let ignored: [IgnoredKind: CoreMetrics.Counter]
        let batchesCommitted: CoreMetrics.Counter
        let databaseErrors: CoreMetrics.Counter
        let commandsPublished: CoreMetrics.Counter
        let batchRows: Recorder
        let commitSeconds: Recorder
        let ingestLatency: CoreMetrics.Timer
        let commandConfirm: CoreMetrics.Timer
        let brokerConnected: Recorder
        let databaseConnected: Recorder
        let spoolRecordsPending: Recorder
        let spoolBytes: Recorder
        let spoolOldestRecordAge: Recorder

        static let commandResultsHelp = "Command results published on set/result, by result."
        static let unconfirmedHelp =
            "Bytes of spool records committed and kept until a standby has them (database.durability: replicated)."
        static let standbysHelp = "Physical standbys connected to the primary, as the writer last saw them."
        static let lagHelp =
            "WAL bytes the most advanced standby has not flushed (NaN when no standby reports a position)."

        /// A gauge without labels (the registry returns the same one for the same name).
        func gauge(_ name: String, _ help: String) -> Recorder {
            let handler = registry.makeGauge(descriptor: .named(name, help: help), labels: [])
            return Recorder(label: name, dimensions: [], aggregate: false, handler: handler, factory: factory)
        }

        init(registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory) {
            self.registry = registry
            self.factory = factory
            func counter(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> CoreMetrics.Counter {
                let handler = registry.makeCounter(descriptor: .named(name, help: help), labels: labels)
                return CoreMetrics.Counter(label: name, dimensions: labels, handler: handler, factory: factory)
            }
            func gauge(_ name: String, _ help: String) -> Recorder {
                let handler = registry.makeGauge(descriptor: .named(name, help: help), labels: [])
                return Recorder(label: name, dimensions: [], aggregate: false, handler: handler, factory: factory)
            }
            func histogram(_ name: String, _ help: String) -> Recorder {
                let buckets = IngestMetrics.valueBuckets[name] ?? factory.defaultValueHistogramBuckets
                let handler = registry.makeValueHistogram(
                    descriptor: .named(name, help: help), labels: [], buckets: buckets)
                return Recorder(label: name, dimensions: [], aggregate: true, handler: handler, factory: factory)
            }
            func timer(_ name: String, _ help: String) -> CoreMetrics.Timer {
                let buckets = IngestMetrics.durationBuckets[name] ?? factory.defaultDurationHistogramBuckets
                let handler = registry.makeDurationHistogram(
                    descriptor: .named(name, help: help), labels: [], buckets: buckets)
                return CoreMetrics.Timer(label: name, dimensions: [], handler: handler, factory: factory)
            }
            messagesReceived = counter("outletd_messages_received_total", "MQTT messages received.")
            readingsStored = counter("outletd_readings_stored_total", "Readings inserted into samples.")
            readingsDuplicate = counter(
                "outletd_readings_duplicate_total", "Valid readings already stored (replays, repeats).")
            rejected = Dictionary(
                uniqueKeysWithValues: RejectionReason.allCases.map {
                    (
                        $0,
                        counter(
                            "outletd_rejected_total", "Messages or readings rejected, by reason.",
                            [("reason", $0.rawValue)])
                    )
                })
            ignored = Dictionary(
                uniqueKeysWithValues: IgnoredKind.allCases.map {
                    (
                        $0,
                        counter(
                            "outletd_messages_ignored_total",
                            "Messages a firmware sends in normal operation that carried no reading, by kind.",
                            [("kind", $0.rawValue)])
                    )
                })
            batchesCommitted = counter("outletd_batches_committed_total", "Write transactions committed.")
            databaseErrors = counter("outletd_database_errors_total", "Failed write attempts (each is retried).")
            commandsPublished = counter("outletd_commands_published_total", "Commands published to outlets.")
            batchRows = histogram("outletd_batch_rows", "Rows per committed batch.")
            commitSeconds = histogram("outletd_commit_seconds", "Seconds from BEGIN to COMMIT of a batch.")
            ingestLatency = timer(
                "outletd_ingest_latency_seconds",
                "Seconds from a message's receipt (written to the spool) to the commit that stored it.")
            commandConfirm = timer(
                "outletd_command_confirm_seconds",
                "Seconds from a switch request being stored to the outlet's report confirming it.")
            brokerConnected = gauge("outletd_broker_connected", "1 while connected to the MQTT broker.")
            databaseConnected = gauge("outletd_database_connected", "1 while the writer reaches PostgreSQL.")
            spoolRecordsPending = gauge(
                "outletd_spool_records_pending", "Messages in the spool not yet committed to PostgreSQL.")
            spoolBytes = gauge("outletd_spool_bytes", "Bytes of the spool's segment files.")
            spoolOldestRecordAge = gauge(
                "outletd_spool_oldest_record_age_seconds", "How long the oldest uncommitted message has waited.")
        }

        /// The counter of one result (the registry returns the same counter for the same label).
        func commandResult(_ result: String) -> CoreMetrics.Counter {
            let handler = registry.makeCounter(
                descriptor: .named("outletd_command_results_total", help: Self.commandResultsHelp),
                labels: [("result", result)])
            return CoreMetrics.Counter(
                label: "outletd_command_results_total", dimensions: [("result", result)], handler: handler,
                factory: factory)
        }
    }
}
