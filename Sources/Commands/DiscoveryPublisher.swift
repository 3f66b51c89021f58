import Foundation
import Logging
import MQTT
import Postgres
import Protocols
import Runtime
import Storage
import Telemetry

/// Publishes Home Assistant discovery (``HomeAssistantDiscovery``) for the registered outlets and keeps it equal
/// to the `devices` table (run by a ``DatabaseWorker``, when `homeassistant.discovery` is on).
///
/// Like ``RegistryListener``: a full load at start, after every reconnect and every `refreshInterval`, and
/// LISTEN `outletd_devices` for single changes. Every enabled outlet, of any protocol, is announced (or announced
/// again when anything its configs are made of changes: ``Wanted``); a disabled one or a removed one is cleared
/// with empty retained configs. At start every disabled outlet is cleared too, and so is every outlet whose configs the broker
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

    /// What Home Assistant should show of one outlet: what its configs are made of when announced, nil when
    /// cleared. Anything that changes the configs (name, protocol, topic, channel, FullTopic, ON/OFF words, the
    /// other relays of a Tasmota device) makes it differ, and the outlet is announced again.
    typealias Wanted = HomeAssistantDiscovery.Outlet?

    /// What this run has published per code (survives reconnects of the worker: same instance).
    private let published = Guarded([String: Wanted]())
    /// Whether the retained configs were read (once per run of outletd).
    private let swept = Guarded(false)
    /// Codes whose configs the broker kept at start although they are not registered: cleared.
    private let strays = Guarded(Set<String>())

    /// What every registered outlet should show: an enabled outlet of a protocol outletd knows is announced,
    /// any other registered one cleared.
    static func wanted(_ records: [String: DeviceRecord]) -> [String: Wanted] {
        // The relays of each Tasmota device that are enabled outlets (outletd's rule for one meter).
        var relays: [String: [Int]] = [:]
        for record in records.values
        where record.enabled && record.protocolName == OutletProtocol.tasmota.rawValue {
            if let topic = record.protocolTopic { relays[topic, default: []].append(record.channel) }
        }
        var wanted: [String: Wanted] = [:]
        for (code, record) in records {
            // Zigbee2MQTT and ESPHome announce their own entities to Home Assistant: outletd's would be duplicates.
            guard record.enabled, let outletProtocol = OutletProtocol(rawValue: record.protocolName),
                !outletProtocol.announcesItself
            else {
                wanted[code] = .some(nil)
                continue
            }
            let topic = record.protocolTopic ?? ""
            if outletProtocol != .native && topic.isEmpty {
                wanted[code] = .some(nil)
                continue
            }
            wanted[code] = HomeAssistantDiscovery.Outlet(
                name: record.name, outletProtocol: outletProtocol, deviceTopic: topic, channel: record.channel,
                fullTopic: record.fullTopic ?? TasmotaProtocol.defaultFullTopic,
                stateWords: TasmotaProtocol.StateWords(
                    on: record.stateOnWord ?? "ON", off: record.stateOffWord ?? "OFF"),
                relays: outletProtocol == .tasmota ? (relays[topic] ?? []).sorted() : [])
        }
        return wanted
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try connection.listen(RegistryListener.channel)
        let store = DeviceStore(connection: connection)
        var records: [String: DeviceRecord] = [:]
        func wanted() -> [String: Wanted] {
            var next = Self.wanted(records)
            // Codes announced earlier and gone from the table now, or left by an earlier run: cleared.
            for (code, outlet) in published.withLock({ $0 }) where next[code] == nil && outlet != nil {
                next[code] = .some(nil)
            }
            for code in strays.withLock({ $0 }) where next[code] == nil { next[code] = .some(nil) }
            return next
        }
        func loadAll() throws {
            records = Dictionary(try store.list().map { ($0.code, $0) }) { _, last in last }
        }
        try loadAll()
        if let reader, !swept.withLock({ $0 }) {
            // Announced by an earlier run and no longer registered: cleared like a removed outlet.
            let announced = announcedOutlets(reader)
            strays.withLock { $0 = announced.filter { records[$0] == nil } }
            swept.withLock { $0 = true }
        }
        var lastFullLoad = Date()
        var target = wanted()
        while !context.stop.isSet {
            reconcile(target)
            let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
            for code in Set(notifications.map(\.payload)) {
                records[code] = try store.find(code)
            }
            if Date().timeIntervalSince(lastFullLoad) >= refreshInterval {
                try loadAll()
                lastFullLoad = Date()
            } else if notifications.isEmpty {
                continue
            }
            target = wanted()
        }
    }

    /// Publishes what differs between `wanted` and what was published.
    func reconcile(_ wanted: [String: Wanted]) {
        let published = self.published.withLock { $0 }
        var done: [String: Wanted] = [:]
        for (code, outlet) in wanted {
            if let previous = published[code], previous == outlet { continue }
            guard let deviceCode = DeviceCode(code) else { continue }
            do {
                let messages =
                    if let outlet { try discovery.announce(code: deviceCode, outlet: outlet) } else {
                        discovery.clear(code: deviceCode)
                    }
                for message in messages { try client.publish(message.topic, payload: message.payload, retain: true) }
                done[code] = outlet
                logger.debug(
                    outlet == nil ? "home assistant discovery cleared" : "home assistant discovery announced",
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
