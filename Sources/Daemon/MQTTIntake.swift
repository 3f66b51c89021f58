import Commands
import Config
import Foundation
import Logging
import MQTT
import MessageSpool
import Observability
import Postgres
import Routing
import Runtime
import ServiceLifecycle
import Synchronization
import Telemetry

/// The MQTT side of the daemon, as a `Service`: one client with a fixed id and a persistent session, whose
/// callback hands every message to the spool (readings) or the command relay's inbox (requests, state,
/// availability), and whose graceful shutdown is the first step of the daemon's: hand the share over (when
/// another member of the share group runs), then stop intake so that the writer and the relay can drain.
public final class MQTTIntake: Service, Sendable {
    /// What the intake needs of the rest of the daemon.
    struct Parts: Sendable {
        var configuration: OutletdConfiguration
        var subscriptions: [String]
        var staleSubscriptions: [String]
        var statusTopic: String
        var drainTopic: String
        var router: ProtocolRouter
        var spool: Spool
        var inbox: CommandInbox
        var membership: ShareGroupMembership?
        var metrics: IngestMetrics
        var notifier: SystemdNotifier
    }

    let client: MQTTClient
    private let parts: Parts
    private let drain = DrainMarker()
    private let logger: Logger

    init(_ parts: Parts, logger: Logger) throws {
        self.parts = parts
        self.logger = logger
        var mqtt = try MQTTConfiguration(url: parts.configuration.mqtt.url, clientID: parts.configuration.instanceID)
        let settings = parts.configuration.mqtt
        mqtt.cleanStart = false
        mqtt.sessionExpiryInterval = UInt32(clamping: settings.sessionExpirySeconds)
        mqtt.keepAliveSeconds = settings.keepAliveSeconds
        mqtt.reconnectDelayMin = settings.reconnectDelayMinSeconds
        mqtt.reconnectDelayMax = settings.reconnectDelayMaxSeconds
        mqtt.receiveMaximum = settings.receiveMaximum
        mqtt.tls = Self.tls(settings, base: mqtt.tls)
        mqtt.will = MQTTMessage.Will(topic: parts.statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        let read = ReadBatch(spool: parts.spool)
        client = try MQTTClient(
            configuration: mqtt, onMessage: Self.callback(parts, drain: drain, read: read), onReadEnd: read.store)
        client.setSubscriptions(parts.subscriptions.map { (filter: $0, qos: 1) })
        client.forgetSubscriptions(parts.staleSubscriptions)
    }

    /// Runs on the MQTT network thread; the PUBACK leaves after it returns and the read's ``ReadBatch`` was
    /// stored. Readings go to the spool at the end of the read that delivered them, together (the append blocks
    /// while the spool is full or the disk refuses: the broker queues). Set requests, state and
    /// availability reports go to the command relay, which does not wait for a telemetry batch; a set request's
    /// callback waits until the relay stored the command, so an acknowledged request is never lost.
    private static func callback(_ parts: Parts, drain: DrainMarker, read: ReadBatch)
        -> @Sendable (MQTTMessage) -> Void
    {
        let (inbox, metrics, drainTopic) = (parts.inbox, parts.metrics, parts.drainTopic)
        let router = TopicRouter(nativePrefix: parts.configuration.mqtt.topicPrefix, protocols: parts.router)
        return { message in
            if message.topic == drainTopic {
                // Everything received before the marker is in the spool when the marker is seen.
                read.store()
                drain.arrived(message.payload)
                return
            }
            // Routed once, here; the route travels with the message (in the spool record, in the inbox).
            let route = router.route(message.topic)
            let raw = RawMessage(topic: message.topic, payload: message.payload, receivedAt: Date())
            if route.goesToRelay {
                // A set request's callback waits until the relay stored the command (its PUBACK follows).
                var isRequest = false
                if case .native(.set, _) = route { isRequest = true }
                inbox.append(raw, route: route, waitForCommit: isRequest)
            }
            if route.goesToSpool {
                metrics.messageReceived()
                read.add(raw, tag: route.tag)
            }
            // A Tasmota `stat/<t>/STATUS`, a Gen2 `status/sys`…: subscribed for its neighbours, not read.
            if route == .unread { metrics.messageIgnored(.unreadTopic) }
        }
    }

    /// Connects, subscribes and receives until the graceful shutdown; then hands the share over (when another
    /// member runs), says `offline`, disconnects and stops the spool's intake and the relay's inbox.
    public func run() async throws {
        let (client, parts, logger) = (self.client, self.parts, self.logger)
        // Taken before the client starts, so that no event (the first `connected`) is missed.
        let eventStream = client.events
        let events = Task {
            var ready = false
            for await event in eventStream {
                switch event {
                case .connected(let sessionPresent):
                    parts.metrics.setBrokerConnected(true)
                    if !ready {
                        // Database connected and migrated, registry loading, broker subscribed.
                        ready = true
                        parts.notifier.notify(
                            "READY=1\nSTATUS=receiving from \(parts.subscriptions.joined(separator: ", "))")
                    }
                    logger.info(
                        "broker connected",
                        metadata: ["session_present": "\(sessionPresent)", "subscriptions": "\(parts.subscriptions)"])
                    _ = try? client.publish(parts.statusTopic, payload: Array("online".utf8), qos: 1, retain: true)
                case .connectionFailed(let reason):
                    parts.metrics.setBrokerConnected(false)
                    logger.warning("broker connection failed; retrying", metadata: ["reason": "\(reason)"])
                case .disconnected(let reason):
                    parts.metrics.setBrokerConnected(false)
                    logger.warning("broker disconnected; reconnecting", metadata: ["reason": "\(reason)"])
                }
            }
        }
        // The first connection attempt (name lookup, TCP connect) blocks: keep it off the cooperative pool.
        try await Blocking.run("outletd-mqtt-start") { try client.start() }
        logger.info(
            "outletd running",
            metadata: [
                "instance": "\(parts.configuration.instanceID)", "broker": "\(redactedURL)",
                "database": "\(redactConnectionString(parts.configuration.database.url))",
                "spool": "\(parts.configuration.spool.directory)", "fsync": "\(parts.configuration.spool.fsync)",
            ])

        try? await gracefulShutdown()

        logger.info("shutting down: stopping intake, writing what was received")
        parts.notifier.notify("STOPPING=1\nSTATUS=writing what was received")
        events.cancel()
        if let membership = parts.membership { await handOverShare(membership) }
        _ = try? client.publish(parts.statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        // A callback waiting on a full spool must finish before the MQTT loop can stop, and what it holds must
        // still be stored (its PUBACK follows).
        parts.spool.liftSizeLimit()
        _ = try? await Blocking.run("outletd-mqtt-stop") { client.stop() }
        parts.spool.stopIntake()
        parts.inbox.close()
    }

    /// When another member of the share group runs: unsubscribes the shared filters, so that the broker deals
    /// to the others from now on, and waits (at most `ingest.shutdown_flush_timeout_seconds`) for the drain
    /// marker, behind which the broker has delivered everything it dealt this instance before. What arrived is
    /// in the spool, and the writer stores it before outletd exits. The sole member keeps its subscriptions: the
    /// broker queues for it until it is back (``ShareGroupMembership``).
    private func handOverShare(_ membership: ShareGroupMembership) async {
        let (client, drain, parts) = (self.client, self.drain, self.parts)
        let shareGroup = parts.configuration.mqtt.shareGroup
        let handOver = (try? await Blocking.run("outletd-handover") { membership.decideHandover() }) ?? false
        guard handOver else {
            logger.info(
                "keeping the shared subscriptions: no other member of the share group runs",
                metadata: ["share_group": "\(shareGroup)"])
            return
        }
        guard client.isConnected else {
            logger.warning("not connected to the broker: this instance's share waits in its session until it is back")
            return
        }
        let token = UUID().uuidString
        drain.expect(token)
        let plain = parts.subscriptions.filter { !$0.hasPrefix("$share/") }
        client.setSubscriptions((plain + [parts.drainTopic]).map { (filter: $0, qos: 1) })
        let timeout = parts.configuration.ingest.shutdownFlushTimeoutSeconds
        let arrived =
            (try? await Blocking.run("outletd-drain") {
                try client.publish(parts.drainTopic, payload: Array(token.utf8), qos: 1)
                return drain.wait(seconds: timeout)
            }) ?? false
        if arrived {
            logger.info(
                "handed this instance's share to the other members of the share group",
                metadata: ["share_group": "\(shareGroup)"])
        } else {
            logger.warning(
                "the broker did not confirm the hand-over in time; what it still holds for this instance waits in its session",
                metadata: ["timeout_s": "\(timeout)"])
        }
    }

    private var redactedURL: String {
        (try? MQTTConfiguration(url: parts.configuration.mqtt.url, clientID: parts.configuration.instanceID)
            .redactedURL) ?? "(invalid URL)"
    }

    /// TLS settings: on for `mqtts://` or when any `mqtt.tls_*` file is configured.
    static func tls(_ settings: OutletdConfiguration.MQTTSettings, base: MQTTConfiguration.TLS?)
        -> MQTTConfiguration.TLS?
    {
        let files = [settings.tlsCAFile, settings.tlsCertificateFile, settings.tlsKeyFile]
        guard base != nil || files.contains(where: { !$0.isEmpty }) else { return nil }
        func file(_ path: String) -> String? { path.isEmpty ? nil : path }
        return MQTTConfiguration.TLS(
            caFile: file(settings.tlsCAFile), certificateFile: file(settings.tlsCertificateFile),
            keyFile: file(settings.tlsKeyFile))
    }
}

/// The spool-bound messages of one read of the socket, appended to the spool together (one write) when the read
/// ends, before their PUBACKs are written (``MQTTClient``'s `onReadEnd`). Used by the network thread only; the
/// lock is uncontended and makes that checkable.
final class ReadBatch: Sendable {
    private let spool: Spool
    private let messages = Mutex<[(message: RawMessage, tag: [UInt8])]>([])

    init(spool: Spool) {
        self.spool = spool
    }

    func add(_ message: RawMessage, tag: [UInt8]) {
        messages.withLock { $0.append((message, tag)) }
    }

    /// Appends what was added since the last call to the spool.
    func store() {
        let taken = messages.withLock { messages in
            defer { messages.removeAll(keepingCapacity: true) }
            return messages
        }
        if !taken.isEmpty { spool.append(contentsOf: taken) }
    }
}
