import Config
import CoreMetrics
import Foundation
import Logging
import Postgres
import Runtime
import Telemetry

/// The automation runner (docs/AUTOMATIONS.md): every `automations.interval_ms` it fires the schedules and timers
/// that are due, follows the readings of over-power and idle rules and of group limits, and records what each did.
///
/// A ``DatabaseWorker`` runs it on a thread and a connection of its own. Every instance may run it: each
/// evaluation is a transaction that locks the rules it looks at (`FOR UPDATE SKIP LOCKED`), so a rule is
/// evaluated by one instance at a time and each firing happens once; the state a rule is in lives in its row, so
/// any instance goes on where another stopped. A firing is a command row (source `automation`); the command
/// relay of whichever instance hears of it publishes it. What a round decides is ``AutomationRound``'s; the store
/// on each connection comes from `makeStore` (the composition root passes `Storage`'s `AutomationStore`).
public struct AutomationRunner<Store: AutomationRuleStore>: DatabaseJob {
    public struct Settings: Sendable {
        public var instanceID: String
        public var catchUpSeconds: Double
        public var intervalSeconds: Double

        public init(_ configuration: OutletdConfiguration) {
            instanceID = configuration.instanceID
            catchUpSeconds = configuration.automations.catchUpSeconds
            intervalSeconds = Double(configuration.automations.intervalMilliseconds) / 1_000
        }
    }

    public var name: String { "outletd-automations" }
    private let settings: Settings
    private let makeStore: @Sendable (PostgresConnection) -> Store
    private let metricsFactory: any MetricsFactory
    private let logger: Logger

    public init(
        settings: Settings, store makeStore: @escaping @Sendable (PostgresConnection) -> Store,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.settings = settings
        self.makeStore = makeStore
        self.metricsFactory = metricsFactory
        self.logger = logger
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        let store = makeStore(connection)
        let round = AutomationRound(instanceID: settings.instanceID, catchUpSeconds: settings.catchUpSeconds)
        if context.reconnected { logger.info("automation runner recovered") }
        var memory = PowerWatchMemory()
        while !context.stop.isSet {
            for outcome in try round.run(store, memory: &memory) { report(outcome) }
            _ = context.stop.sleep(seconds: settings.intervalSeconds)
        }
    }

    private func report(_ outcome: AutomationOutcome) {
        Counter(
            label: "outletd_automation_firings_total",
            dimensions: [("kind", outcome.kind.rawValue), ("result", outcome.result.rawValue)], factory: metricsFactory
        ).increment()
        var metadata: Logger.Metadata = [
            "automation": "\(outcome.automationID)", "kind": "\(outcome.kind.rawValue)",
            "result": "\(outcome.result.rawValue)", "reason": "\(outcome.reason)",
        ]
        if let code = outcome.code { metadata["code"] = "\(code)" }
        if let command = outcome.commandID { metadata["command"] = "\(command)" }
        let level: Logger.Level = outcome.result == .fired ? .info : .notice
        logger.log(level: level, "automation \(outcome.result.rawValue)", metadata: metadata)
    }
}
