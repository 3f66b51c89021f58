import Foundation
import Logging
import MQTT
import Postgres
import Runtime
import Storage
import Telemetry

/// Publishes Home Assistant discovery (``HomeAssistantDiscovery``) for the registered outlets and keeps it equal
/// to the `devices` table (run by a ``DatabaseWorker``, when `homeassistant.discovery` is on).
///
/// Like ``RegistryListener``: a full load at start, after every reconnect and every `refreshInterval`, and
/// LISTEN `outletd_devices` for single changes. An enabled native outlet is announced (or announced again when its
/// name changes); a disabled one, a removed one or one that is no longer native is cleared with empty retained
/// configs. At start every disabled native outlet is cleared too, since outletd cannot know what an earlier run
/// announced. A failed publish is tried again on the next pass.
public struct DiscoveryPublisher: DatabaseJob {
    public var name: String { "outletd-discovery" }
    let discovery: HomeAssistantDiscovery
    let client: MQTTClient
    let refreshInterval: Double
    let logger: Logger

    public init(discovery: HomeAssistantDiscovery, client: MQTTClient, refreshInterval: Double, logger: Logger) {
        self.discovery = discovery
        self.client = client
        self.refreshInterval = refreshInterval
        self.logger = logger
    }

    /// What Home Assistant should show of one outlet: its name when announced, nil when cleared.
    typealias Wanted = String?

    /// What this run has published per code (survives reconnects of the worker: same instance).
    private let published = Guarded([String: Wanted]())

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try connection.listen(RegistryListener.channel)
        let store = DeviceStore(connection: connection)
        var wanted: [String: Wanted] = [:]
        func want(_ record: DeviceRecord) -> Wanted {
            record.enabled && record.protocolName == OutletProtocol.native.rawValue ? record.name : nil
        }
        func loadAll() throws {
            var next: [String: Wanted] = [:]
            for record in try store.list() { next[record.code] = want(record) }
            // Codes announced earlier and gone from the table now: cleared.
            for (code, name) in published.withLock({ $0 }) where next[code] == nil && name != nil {
                next[code] = .some(nil)
            }
            wanted = next
        }
        try loadAll()
        var lastFullLoad = Date()
        while !context.stop.isSet {
            reconcile(wanted)
            let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
            for code in Set(notifications.map(\.payload)) {
                wanted[code] = .some(try store.find(code).flatMap(want))
            }
            if Date().timeIntervalSince(lastFullLoad) >= refreshInterval {
                try loadAll()
                lastFullLoad = Date()
            }
        }
    }

    /// Publishes what differs between `wanted` and what was published.
    func reconcile(_ wanted: [String: Wanted]) {
        let published = self.published.withLock { $0 }
        var done: [String: Wanted] = [:]
        for (code, name) in wanted {
            if let previous = published[code], previous == name { continue }
            guard let deviceCode = DeviceCode(code) else { continue }
            do {
                let messages =
                    if let name { try discovery.announce(code: deviceCode, name: name) } else {
                        discovery.clear(code: deviceCode)
                    }
                for message in messages { try client.publish(message.topic, payload: message.payload, retain: true) }
                done[code] = name
                logger.debug(
                    name == nil ? "home assistant discovery cleared" : "home assistant discovery announced",
                    metadata: ["code": "\(code)"])
            } catch {
                logger.warning(
                    "publishing home assistant discovery failed; retrying",
                    metadata: ["code": "\(code)", "error": "\(error)"])
            }
        }
        if !done.isEmpty { self.published.withLock { $0.merge(done) { $1 } } }
    }
}
