import Alerts
import CoreMetrics
import Dispatch
import Foundation
import Logging
import Postgres
import Runtime
import WritePath

/// Drains the alerts' outbox (docs/ALERTS.md): claims the deliveries that are due (each leased, `FOR UPDATE SKIP
/// LOCKED`, so several instances share them and one killed mid-send leaves its claims to be tried again when the
/// lease ends), sends them all at once through their channels' senders, and records each outcome: sent, tried
/// again later with backoff (``AlertOutbox``), or failed for good. Sends run side by side, each within its sender's
/// timeout, so one failing channel never holds up another; a failing channel is marked on its row for its owner.
///
/// With `database.durability: replicated` a claim is sent only once a standby has flushed it (and so the round that
/// queued it): a failover to that standby then finds the delivery claimed, under the same id, instead of an alert the
/// old primary had opened and sent and the new one opens and sends again under another. A standby that has not
/// caught up within half the lease gets the claims back, uncounted, for the next try; with no standby connected the
/// loop sends at once (there is nowhere to fail over to, and waiting would silence alerts for as long).
public struct AlertDeliveryLoop: DatabaseJob {
    public var name: String { "outletd-alert-delivery" }
    private let senders: [AlertChannelKind: any AlertSender]
    private let makeStore: @Sendable (PostgresConnection) -> any AlertStore
    private let pollSeconds: Double
    private let leaseSeconds: Double
    private let replicated: Bool
    private let metricsFactory: any MetricsFactory
    private let logger: Logger

    public init(
        senders: [AlertChannelKind: any AlertSender],
        makeStore: @escaping @Sendable (PostgresConnection) -> any AlertStore,
        pollSeconds: Double = 1, leaseSeconds: Double = 120, replicated: Bool = false,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.senders = senders
        self.makeStore = makeStore
        self.pollSeconds = pollSeconds
        self.leaseSeconds = leaseSeconds
        self.replicated = replicated
        self.metricsFactory = metricsFactory
        self.logger = logger
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        let store = makeStore(connection)
        let wait = leaseSeconds / 2
        let replicated = self.replicated
        while !context.stop.isSet {
            let handled = try drainOnce(store) {
                try !replicated || Self.standbyHasClaims(connection, timeout: wait, stop: context.stop)
            }
            if handled == 0 { _ = context.stop.sleep(seconds: pollSeconds) }
        }
    }

    /// Claims, sends and records one batch; returns how many deliveries it handled. `maySend`, called after the
    /// claim committed, says whether to send now; when it does not, the claims go back.
    @discardableResult
    public func drainOnce(_ store: any AlertStore, limit: Int = 50, maySend: () throws -> Bool = { true }) throws
        -> Int
    {
        let claimed = try store.claimDeliveries(limit: limit, leaseSeconds: leaseSeconds)
        guard !claimed.isEmpty else { return 0 }
        guard try maySend() else {
            try store.returnClaims(claimed)
            logger.notice(
                "alert delivery waits for the standby", metadata: ["deliveries": "\(claimed.count)"])
            return 0
        }
        // A channel paused (its pending deliveries dropped) or removed since the claim: those go unsent.
        let jobs = try store.stillToSend(claimed)
        let outcomes = Self.sendAll(jobs, senders: senders)
        for (job, outcome) in zip(jobs, outcomes) {
            try store.finishDelivery(job, outcome: outcome)
            let result: String
            switch outcome {
            case .sent: result = "sent"
            case .retry(_, let error), .failed(let error):
                let retried = outcome != .failed(error: error)
                result = retried ? "retry" : "failed"
                // The error is the sender's reason, never a secret (senders do not put one in it).
                logger.notice(
                    "alert delivery failed",
                    metadata: [
                        "delivery": "\(job.id)", "channel": "\(job.channelID)", "kind": "\(job.channel.rawValue)",
                        "attempt": "\(job.attempts)", "error": "\(error)", "retry": "\(retried)",
                    ])
            }
            Counter(
                label: "outletd_alert_deliveries_total",
                dimensions: [("channel", job.channel.rawValue), ("result", result)], factory: metricsFactory
            ).increment()
        }
        return claimed.count
    }

    /// Whether a standby has flushed the WAL written so far (the claims just committed), waiting up to `timeout`;
    /// true at once when no standby is connected.
    static func standbyHasClaims(_ connection: PostgresConnection, timeout: Double, stop: StopFlag) throws -> Bool {
        let target = try ReplicationStatus.read(connection).currentLSN
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let status = try ReplicationStatus.read(connection)
            if status.standbys == 0 { return true }
            if let flushed = status.standbyFlushLSN, flushed >= target { return true }
            if Date() >= deadline || stop.isSet { return false }
            _ = stop.sleep(seconds: 0.02)
        }
    }

    /// Sends every job at once (from the worker's thread, which waits), each through its channel's sender.
    static func sendAll(_ jobs: [AlertDeliveryJob], senders: [AlertChannelKind: any AlertSender])
        -> [AlertDeliveryOutcome]
    {
        let results = Guarded([AlertDeliveryOutcome?](repeating: nil, count: jobs.count))
        let done = DispatchSemaphore(value: 0)
        Task {
            await withTaskGroup(of: Void.self) { group in
                for (index, job) in jobs.enumerated() {
                    group.addTask {
                        let outcome = await send(job, through: senders[job.channel])
                        results.withLock { $0[index] = outcome }
                    }
                }
            }
            done.signal()
        }
        done.wait()
        return results.withLock { $0 }.map { $0 ?? .retry(at: Date(), error: "not sent") }
    }

    static func send(_ job: AlertDeliveryJob, through sender: (any AlertSender)?) async -> AlertDeliveryOutcome {
        guard let sender else {
            return .failed(error: "\(job.channel.rawValue) is not configured on this server")
        }
        do {
            try await sender.send(job)
            return .sent
        } catch {
            let (retryable, reason): (Bool, String) =
                switch error {
                case .retryable(let reason): (true, reason)
                case .permanent(let reason): (false, reason)
                }
            if let at = AlertOutbox.afterFailure(attempts: job.attempts, retryable: retryable, now: Date()) {
                return .retry(at: at, error: reason)
            }
            return .failed(error: reason)
        }
    }
}
