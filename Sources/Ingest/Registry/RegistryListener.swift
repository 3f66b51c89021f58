import Foundation
import Logging
import Postgres

/// Keeps a ``DeviceRegistry`` equal to the `devices` table, on a thread of its own with its own
/// connection: a full load, then LISTEN `outletd_devices` (a trigger announces every change with
/// the code), reloading just that code on each notification; a full reload every
/// `refreshInterval` and after every reconnect (notifications sent while disconnected are lost).
public final class RegistryListener: Sendable {
    /// The NOTIFY channel the `devices` trigger uses.
    public static let channel = "outletd_devices"

    private let registry: DeviceRegistry
    private let connectionString: String
    private let refreshInterval: Double
    private let reconnectDelayMax: Double
    private let logger: Logger
    private let metrics: IngestMetrics?
    private let worker = WorkerThread(name: "outletd-registry")
    private var stopFlag: StopFlag { worker.stopFlag }

    public init(
        registry: DeviceRegistry, connectionString: String, refreshInterval: Double, reconnectDelayMax: Double,
        logger: Logger, metrics: IngestMetrics? = nil
    ) {
        self.metrics = metrics
        self.registry = registry
        self.connectionString = connectionString
        self.refreshInterval = refreshInterval
        self.reconnectDelayMax = reconnectDelayMax
        self.logger = logger
    }

    /// Starts the thread.
    public func start() {
        worker.start { [self] in self.loop() }
    }

    /// Asks the thread to stop and waits for it.
    public func stop() async {
        await worker.stop()
    }

    private func loop() {
        var backoff = Backoff(initial: 0.5, maximum: reconnectDelayMax)
        while !stopFlag.isSet {
            do {
                let connection = try PostgresConnection(
                    connectionString: connectionString, applicationName: "outletd-registry")
                defer { connection.close() }
                try connection.listen(Self.channel)
                let store = DeviceStore(connection: connection)
                var lastFullLoad = Date()
                registry.replaceAll(try store.registryEntries())
                if backoff.attempts > 0 {
                    logger.info("registry reconnected", metadata: ["devices": "\(registry.count)"])
                } else {
                    logger.debug("registry loaded", metadata: ["devices": "\(registry.count)"])
                }
                backoff.reset()
                metrics?.setDatabaseConnected(true)
                while !stopFlag.isSet {
                    let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
                    for code in Set(notifications.map(\.payload)) {
                        registry.update(code, try store.registryEntry(code))
                        logger.debug("registry refreshed", metadata: ["code": "\(code)"])
                    }
                    if Date().timeIntervalSince(lastFullLoad) >= refreshInterval {
                        registry.replaceAll(try store.registryEntries())
                        lastFullLoad = Date()
                    }
                }
            } catch {
                metrics?.setDatabaseConnected(false)
                let delay = backoff.nextDelay()
                logger.warning(
                    "registry connection failed; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                stopFlag.sleep(seconds: delay)
            }
        }
    }
}
