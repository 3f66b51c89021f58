import Alerts
import Config
import CoreMetrics
import Foundation
import Logging
import Postgres
import Runtime

/// The alert runner (docs/ALERTS.md): every `alerts.interval_seconds` one round evaluates every rule of the fast
/// kinds (offline, on-too-long, command-failed), and every `alerts.slow_interval_seconds` the slow ones too
/// (standby, budget), with one set-based statement per kind; the pure ``AlertRound`` decides, the store writes.
///
/// Every instance may run it: a round is one transaction under an advisory lock that one instance takes at a time
/// (the others skip that round), so each incident opens, resolves and is queued for delivery once, across
/// instances, restarts, `kill -9` and failovers (a round cut short leaves nothing behind; the next does it again).
public struct AlertRunner: DatabaseJob {
    public struct Settings: Sendable {
        public var instanceID: String
        public var intervalSeconds: Double
        public var slowIntervalSeconds: Double

        public init(instanceID: String, intervalSeconds: Double, slowIntervalSeconds: Double) {
            self.instanceID = instanceID
            self.intervalSeconds = intervalSeconds
            self.slowIntervalSeconds = slowIntervalSeconds
        }

        public init(_ configuration: OutletdConfiguration) {
            self.init(
                instanceID: configuration.instanceID, intervalSeconds: configuration.alerts.intervalSeconds,
                slowIntervalSeconds: configuration.alerts.slowIntervalSeconds)
        }
    }

    public var name: String { "outletd-alerts" }
    private let settings: Settings
    private let makeStore: @Sendable (PostgresConnection) -> any AlertStore
    private let metricsFactory: any MetricsFactory
    private let logger: Logger

    /// - Parameter makeStore: the store on the job's connection (the composition root gives Storage's).
    public init(
        settings: Settings, makeStore: @escaping @Sendable (PostgresConnection) -> any AlertStore,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.settings = settings
        self.makeStore = makeStore
        self.metricsFactory = metricsFactory
        self.logger = logger
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        let store = makeStore(connection)
        if context.reconnected { logger.info("alert runner recovered") }
        var slowDoneAt: Date?
        while !context.stop.isSet {
            let now = Date()
            let slowDue = slowDoneAt.map { now.timeIntervalSince($0) >= settings.slowIntervalSeconds } ?? true
            if try round(store, slow: slowDue) != nil, slowDue { slowDoneAt = now }
            _ = context.stop.sleep(seconds: settings.intervalSeconds)
        }
    }

    /// One round (with the slow kinds when `slow`); nil when another instance held it.
    @discardableResult
    public func round(_ store: any AlertStore, slow: Bool) throws -> AlertRoundSummary? {
        let kinds = Set(AlertKind.allCases.filter { slow || !$0.isSlow })
        let started = ContinuousClock.now
        guard
            let summary = try store.evaluateRound(
                kinds: kinds, instanceID: settings.instanceID, decide: AlertRound.decide)
        else { return nil }
        let elapsed = ContinuousClock.now - started
        Timer(label: "outletd_alert_round_seconds", dimensions: [("slow", "\(slow)")], factory: metricsFactory)
            .recordNanoseconds(
                elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        for (result, count) in [("opened", summary.opened), ("resolved", summary.resolved)] where count > 0 {
            Counter(label: "outletd_alert_incidents_total", dimensions: [("result", result)], factory: metricsFactory)
                .increment(by: count)
        }
        if summary.opened + summary.resolved > 0 {
            logger.info(
                "alert round",
                metadata: [
                    "opened": "\(summary.opened)", "resolved": "\(summary.resolved)", "queued": "\(summary.queued)",
                    "observed": "\(summary.observed)",
                ])
        }
        return summary
    }
}
