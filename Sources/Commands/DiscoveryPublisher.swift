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
/// configs. At start every disabled native outlet is cleared too, and so is every outlet whose configs the broker
/// still keeps although it is no longer registered (removed while outletd was stopped): a short-lived client
/// reads the retained configs once. A failed publish is tried again on the next pass.
public struct DiscoveryPublisher: DatabaseJob {
    public var name: String { "outletd-discovery" }
    let discovery: HomeAssistantDiscovery
    let client: MQTTClient
    let refreshInterval: Double
    let logger: Logger

    /// The broker as a reader of the retained configs (a client id of its own, clean session), or nil to skip.
    let reader: MQTTConfiguration?

    public init(
        discovery: HomeAssistantDiscovery, client: MQTTClient, reader: MQTTConfiguration?, refreshInterval: Double,
        logger: Logger
    ) {
        self.discovery = discovery
        self.client = client
        self.reader = reader
        self.refreshInterval = refreshInterval
        self.logger = logger
    }

    /// The outlets whose configs the broker keeps (retained, not empty). Blocking: at most about 4 s.
    func announcedOutlets(_ reader: MQTTConfiguration) -> Set<String> {
        let seen = Guarded((codes: Set<String>(), lastAt: Date()))
        let discovery = self.discovery
        guard
            let client = try? MQTTClient(
                configuration: reader,
                onMessage: { message in
                    guard message.retain, !message.payload.isEmpty,
                        let code = discovery.code(ofTopic: message.topic)
                    else { return }
                    seen.withLock {
                        $0.codes.insert(code.rawValue)
                        $0.lastAt = Date()
                    }
                })
        else { return [] }
        client.setSubscriptions([(filter: discovery.configFilter, qos: 1)])
        defer { client.stop() }
        guard (try? client.start()) != nil, client.waitUntilConnectedBlocking(timeout: .seconds(3)) else {
            logger.warning("cannot read the retained home assistant configs; stale ones stay until cleared")
            return []
        }
        // The broker sends the retained messages right after the subscription: done when none came for 0.5 s.
        seen.withLock { $0.lastAt = Date() }
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, Date().timeIntervalSince(seen.withLock { $0.lastAt }) < 0.5 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        return seen.withLock { $0.codes }
    }

    /// What Home Assistant should show of one outlet: its name when announced, nil when cleared.
    typealias Wanted = String?

    /// What this run has published per code (survives reconnects of the worker: same instance).
    private let published = Guarded([String: Wanted]())
    /// Whether the retained configs were read (once per run of outletd).
    private let swept = Guarded(false)

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
        if let reader, !swept.withLock({ $0 }) {
            // Announced by an earlier run and no longer registered: cleared like a removed outlet.
            for code in announcedOutlets(reader) where wanted[code] == nil { wanted[code] = .some(nil) }
            swept.withLock { $0 = true }
        }
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
