import Foundation
import Logging
import Observability
import Postgres
import Runtime

/// Keeps a ``DeviceRegistry`` equal to the `devices` table (run by a ``DatabaseWorker``): a full load,
/// then LISTEN `outletd_devices` (a trigger announces every change with the code), reloading just that code
/// on each notification; a full reload every `refreshInterval` and after every reconnect (notifications sent
/// while disconnected are lost).
public struct RegistryListener: DatabaseJob {
    /// The NOTIFY channel the `devices` trigger uses.
    public static let channel = "outletd_devices"

    public var name: String { "outletd-registry" }
    private let registry: DeviceRegistry
    private let refreshInterval: Double
    private let metrics: IngestMetrics?

    public init(registry: DeviceRegistry, refreshInterval: Double, metrics: IngestMetrics? = nil) {
        self.registry = registry
        self.refreshInterval = refreshInterval
        self.metrics = metrics
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try connection.listen(Self.channel)
        let store = DeviceStore(connection: connection)
        var lastFullLoad = Date()
        registry.replaceAll(try store.registryEntries())
        context.logger.log(
            level: context.reconnected ? .info : .debug, "registry loaded", metadata: ["devices": "\(registry.count)"])
        metrics?.setDatabaseConnected(true)
        while !context.stop.isSet {
            let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
            for code in Set(notifications.map(\.payload)) {
                registry.update(code, try store.registryEntry(code))
                context.logger.debug("registry refreshed", metadata: ["code": "\(code)"])
            }
            if Date().timeIntervalSince(lastFullLoad) >= refreshInterval {
                registry.replaceAll(try store.registryEntries())
                lastFullLoad = Date()
            }
        }
    }

    public func connectionFailed(_ error: any Error) {
        metrics?.setDatabaseConnected(false)
    }
}
