import Foundation
import Logging
import MQTT
import Postgres
import ServiceLifecycle
import Telemetry

/// The daemon: MQTT intake → durable spool → batch writer → PostgreSQL, plus the registry listener.
///
/// Start order: database (migrations, rollup settings), registry, maintenance (partitions,
/// retention), spool, writer, command relay, broker. On graceful shutdown (SIGTERM, SIGINT) the
/// reverse: intake stops first, the writer writes what the spool holds (within
/// `ingest.shutdown_flush_timeout_seconds`; the rest stays in the spool for the next start), then
/// the listeners and the maintenance task end.
public final class IngestService: Service, Sendable {
    public let configuration: OutletdConfiguration
    public let metrics = IngestMetrics()
    private let logger: Logger

    /// Why the service stopped with an error.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(configuration: OutletdConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The topic filters outletd subscribes to (all QoS 1). Telemetry goes through the shared subscription
    /// `$share/<mqtt.share_group>/…` and set requests through `$share/<commands.share_group>/…`, so that with
    /// several instances each message reaches one of them. State and availability reports stay plain
    /// subscriptions: they are few, retained (a shared subscription receives no retained messages), and every
    /// instance's command relay acts on them (the database decides which one's update counts).
    public var subscriptions: [String] {
        subscriptions(registeredFullTopics: [])
    }

    /// The subscriptions, with the Tasmota FullTopics of registered outlets added (see docs/PROTOCOLS.md).
    public func subscriptions(registeredFullTopics: Set<String>) -> [String] {
        let prefix = configuration.mqtt.topicPrefix
        let foreign = ProtocolRouter(configuration, registeredFullTopics: registeredFullTopics).subscriptions
        return [
            Self.filter("\(prefix)/+/telemetry", shareGroup: configuration.mqtt.shareGroup),
            Self.filter("\(prefix)/+/set", shareGroup: configuration.commands.shareGroup),
            "\(prefix)/+/state",
            "\(prefix)/+/availability",
        ]
            + foreign.map {
                // Readings of other protocols are shared like native telemetry: with several instances, a
                // reading stamped with the receive time would otherwise be stored once per instance.
                ProtocolRouter.carriesReadings($0) ? Self.filter($0, shareGroup: configuration.mqtt.shareGroup) : $0
            }
    }

    /// Forms of the shared filters that a persistent session may still hold from another setting of the
    /// share groups (plain, or the default group), unsubscribed on connect; otherwise the broker would
    /// deliver those messages a second time through the stale subscription.
    public var staleSubscriptions: [String] {
        let prefix = configuration.mqtt.topicPrefix
        let groups = [
            ("\(prefix)/+/telemetry", configuration.mqtt.shareGroup),
            ("\(prefix)/+/set", configuration.commands.shareGroup),
        ]
        return groups.flatMap { topic, group in
            ["", OutletdConfiguration.defaultShareGroup].filter { $0 != group }.map {
                Self.filter(topic, shareGroup: $0)
            }
        } + [drainTopic]
    }

    /// `topic` as a shared subscription of `shareGroup` (`$share/<group>/<topic>`), or plain when the group is
    /// empty. Intake topics of other protocols go through this too.
    public static func filter(_ topic: String, shareGroup: String) -> String {
        shareGroup.isEmpty ? topic : "$share/\(shareGroup)/\(topic)"
    }

    /// `outletd/<instance>/status`: `online` while connected, `offline` (the will) otherwise.
    public var statusTopic: String { "outletd/\(configuration.instanceID)/status" }

    /// `outletd/<instance>/drain`: the marker a stopping instance sends itself after unsubscribing its shared
    /// filters. The broker queues it behind everything it dealt this session before, so its arrival means
    /// the session holds nothing more of the share.
    public var drainTopic: String { "outletd/\(configuration.instanceID)/drain" }

    public func run() async throws {
        let configuration = self.configuration
        let logger = self.logger
        try await prepareDatabase()
        // Tasmota FullTopics of registered outlets are subscribed to besides the configured ones (read at start).
        let registeredFullTopics = try await Blocking.run("outletd-full-topics") {
            let connection = try PostgresConnection(
                connectionString: configuration.database.url, applicationName: "outletd-start")
            defer { connection.close() }
            return try DeviceStore(connection: connection).tasmotaFullTopics()
        }
        let router = ProtocolRouter(configuration, registeredFullTopics: registeredFullTopics)
        let subscriptions = subscriptions(registeredFullTopics: registeredFullTopics)

        // Shared subscriptions: this instance's membership of the group, for the hand-over when it stops.
        let membership =
            subscriptions.contains { $0.hasPrefix("$share/") } && !configuration.mqtt.shareGroup.isEmpty
            ? ShareGroupMembership(
                group: configuration.mqtt.shareGroup, connectionString: configuration.database.url, logger: logger)
            : nil
        membership?.start()

        let registry = DeviceRegistry()
        let registryListener = RegistryListener(
            registry: registry, connectionString: configuration.database.url,
            refreshInterval: configuration.registry.refreshIntervalSeconds,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds,
            logger: logger, metrics: metrics)
        registryListener.start()

        let maintenance = MaintenanceTask(
            connectionString: configuration.database.url, retention: configuration.retention,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds, logger: logger)
        maintenance.start()

        var spoolSettings = configuration.spool.settings
        spoolSettings.owner = configuration.instanceID
        let spool = try await Blocking.run("outletd-spool-open") { [spoolSettings] in
            try Spool.open(spoolSettings, logger: logger)
        }
        metrics.observe(spool)
        let writer = BatchWriter(
            spool: spool, registry: registry,
            classifier: MessageClassifier(
                topicPrefix: configuration.mqtt.topicPrefix, limits: configuration.validation.limits,
                foreign: ForeignReadings(router: router, registry: registry)),
            store: BatchStore(
                keepRejectedMessages: configuration.rejections.keepMessages,
                pendingDevicesMax: configuration.rejections.pendingDevicesMax,
                maintainsRollups: configuration.rollups.maintain),
            settings: BatchWriter.Settings(configuration), connectionString: configuration.database.url,
            metrics: metrics, logger: logger)
        writer.start()

        let inbox = CommandInbox(maxEvents: configuration.commands.inboxMaxMessages)
        let drain = DrainMarker()
        let client = try makeMQTTClient(spool: spool, inbox: inbox, router: router, drain: drain)
        var relaySettings = CommandRelay.Settings(configuration)
        relaySettings.router = router
        let relay = CommandRelay(
            inbox: inbox, registry: registry, client: client, settings: relaySettings,
            connectionString: configuration.database.url, metrics: metrics, logger: logger)
        relay.start()
        let commandListener = CommandListener(
            inbox: inbox, connectionString: configuration.database.url,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds,
            ownBackendPID: { relay.backendPID }, logger: logger)
        commandListener.start()
        client.setSubscriptions(subscriptions.map { (filter: $0, qos: 1) })
        client.forgetSubscriptions(staleSubscriptions)
        let statusTopic = self.statusTopic
        let notifier = SystemdNotifier()
        // Taken before the client starts, so that no event (the first `connected`) is missed.
        let eventStream = client.events
        let events = Task {
            var ready = false
            for await event in eventStream {
                switch event {
                case .connected(let sessionPresent):
                    self.metrics.setBrokerConnected(true)
                    if !ready {
                        // Database connected and migrated, registry loading, broker subscribed.
                        ready = true
                        notifier.notify("READY=1\nSTATUS=receiving from \(subscriptions.joined(separator: ", "))")
                    }
                    logger.info(
                        "broker connected",
                        metadata: ["session_present": "\(sessionPresent)", "subscriptions": "\(subscriptions)"])
                    _ = try? client.publish(statusTopic, payload: Array("online".utf8), qos: 1, retain: true)
                case .connectionFailed(let reason):
                    self.metrics.setBrokerConnected(false)
                    logger.warning("broker connection failed; retrying", metadata: ["reason": "\(reason)"])
                case .disconnected(let reason):
                    self.metrics.setBrokerConnected(false)
                    logger.warning("broker disconnected; reconnecting", metadata: ["reason": "\(reason)"])
                }
            }
        }
        // The first connection attempt (name lookup, TCP connect) blocks: keep it off the cooperative pool.
        try await Blocking.run("outletd-mqtt-start") { try client.start() }
        logger.info(
            "outletd running",
            metadata: [
                "instance": "\(configuration.instanceID)",
                "broker": "\(redactedMQTTURL)",
                "database": "\(redactConnectionString(configuration.database.url))",
                "spool": "\(configuration.spool.directory)", "fsync": "\(configuration.spool.fsync)",
            ])
        let statistics = Task { await self.logStatistics(every: 60) }
        let watchdog = Task { await Self.feedWatchdog(notifier, writer: writer.heartbeat, logger: logger) }

        // Run until SIGTERM/SIGINT (or cancellation).
        try? await gracefulShutdown()

        logger.info("shutting down: stopping intake, writing what was received")
        notifier.notify("STOPPING=1\nSTATUS=writing what was received")
        watchdog.cancel()
        events.cancel()
        if let membership {
            await handOverShare(membership, client: client, subscriptions: subscriptions, drain: drain)
            await membership.stop()
        }
        _ = try? client.publish(statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        // A callback waiting on a full spool must finish before the MQTT loop can stop, and what it
        // holds must still be stored (its PUBACK follows).
        spool.liftSizeLimit()
        _ = try? await Blocking.run("outletd-mqtt-stop") { client.stop() }
        spool.stopIntake()
        inbox.close()
        let unwritten = await writer.finish()
        spool.close()
        await relay.finish()
        await commandListener.stop()
        await registryListener.stop()
        await maintenance.stop()
        statistics.cancel()
        let final = metrics.snapshot()
        logger.info(
            "stopped",
            metadata: [
                "received": "\(final.messagesReceived)", "stored": "\(final.readingsStored)",
                "duplicates": "\(final.readingsDuplicate)", "rejected": "\(final.rejectedTotal)",
            ])
        if unwritten > 0 {
            logger.notice(
                "records left in the spool for the next start (the database did not take them in time)",
                metadata: ["records": "\(unwritten)"])
        }
    }

    /// When another member of the share group runs: unsubscribes the shared filters, so that the broker
    /// deals to the others from now on, and waits (at most `ingest.shutdown_flush_timeout_seconds`) for the
    /// drain marker, behind which the broker has delivered everything it dealt this instance before. What
    /// arrived is in the spool, and the writer stores it before outletd exits. The sole member keeps its
    /// subscriptions: the broker queues for it until it is back (``ShareGroupMembership``).
    private func handOverShare(
        _ membership: ShareGroupMembership, client: MQTTClient, subscriptions: [String], drain: DrainMarker
    ) async {
        let handOver = (try? await Blocking.run("outletd-handover") { membership.decideHandover() }) ?? false
        guard handOver else {
            logger.info(
                "keeping the shared subscriptions: no other member of the share group runs",
                metadata: ["share_group": "\(configuration.mqtt.shareGroup)"])
            return
        }
        guard client.isConnected else {
            logger.warning("not connected to the broker: this instance's share waits in its session until it is back")
            return
        }
        let token = UUID().uuidString
        drain.expect(token)
        let plain = subscriptions.filter { !$0.hasPrefix("$share/") }
        client.setSubscriptions((plain + [drainTopic]).map { (filter: $0, qos: 1) })
        let timeout = configuration.ingest.shutdownFlushTimeoutSeconds
        let drainTopic = self.drainTopic
        let arrived =
            (try? await Blocking.run("outletd-drain") {
                try client.publish(drainTopic, payload: Array(token.utf8), qos: 1)
                return drain.wait(seconds: timeout)
            }) ?? false
        if arrived {
            logger.info(
                "handed this instance's share to the other members of the share group",
                metadata: ["share_group": "\(configuration.mqtt.shareGroup)"])
        } else {
            logger.warning(
                "the broker did not confirm the hand-over in time; what it still holds for this instance waits in its session",
                metadata: ["timeout_s": "\(timeout)"])
        }
    }

    private var redactedMQTTURL: String {
        (try? MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID).redactedURL)
            ?? "(invalid URL)"
    }

    func makeMQTTClient(spool: Spool, inbox: CommandInbox, router: ProtocolRouter, drain: DrainMarker) throws
        -> MQTTClient
    {
        var mqtt = try MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID)
        mqtt.cleanStart = false
        mqtt.sessionExpiryInterval = UInt32(clamping: configuration.mqtt.sessionExpirySeconds)
        mqtt.keepAliveSeconds = configuration.mqtt.keepAliveSeconds
        mqtt.reconnectDelayMin = configuration.mqtt.reconnectDelayMinSeconds
        mqtt.reconnectDelayMax = configuration.mqtt.reconnectDelayMaxSeconds
        mqtt.receiveMaximum = configuration.mqtt.receiveMaximum
        mqtt.tls = Self.tls(configuration.mqtt, base: mqtt.tls)
        mqtt.will = MQTTMessage.Will(topic: statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        let metrics = self.metrics
        let prefix = configuration.mqtt.topicPrefix
        let drainTopic = self.drainTopic
        // Runs on libmosquitto's network thread; the PUBACK leaves after it returns. Telemetry goes
        // to the spool (it blocks while the spool is full or the disk refuses: the broker queues).
        // Set requests, state and availability reports go to the command relay, which does not wait
        // for a telemetry batch; a set request's callback waits until the relay stored the command,
        // so an acknowledged request is never lost.
        return try MQTTClient(configuration: mqtt) { message in
            if message.topic == drainTopic {
                drain.arrived(message.payload)
                return
            }
            let raw = RawMessage(topic: message.topic, payload: message.payload, receivedAt: Date())
            switch NativeProtocol.parseTopic(message.topic, prefix: prefix)?.kind {
            case .set?:
                inbox.append(raw, waitForCommit: true)
            case .state?, .availability?:
                inbox.append(raw, waitForCommit: false)
            case .telemetry?, .command?:
                metrics.messageReceived()
                spool.append(raw)
            case nil:
                // Tasmota and Shelly: readings to the spool, state to the relay (a Gen2 status carries both).
                guard let route = router.route(message.topic) else {
                    // A Tasmota `stat/<t>/STATUS`, a Gen2 `status/sys`…: subscribed for its neighbours, not read.
                    if router.isUnreadForeignTopic(message.topic) {
                        metrics.messageIgnored(.unreadTopic)
                        return
                    }
                    metrics.messageReceived()
                    spool.append(raw)
                    return
                }
                if route.carriesState { inbox.append(raw, waitForCommit: false) }
                if route.carriesReadings {
                    metrics.messageReceived()
                    spool.append(raw)
                }
            }
        }
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

    /// Connects (retrying while the database is down) and applies or checks migrations.
    private func prepareDatabase() async throws {
        let configuration = self.configuration
        let logger = self.logger
        var backoff = Backoff(initial: 0.5, maximum: configuration.database.reconnectDelayMaxSeconds)
        while true {
            do {
                try await Blocking.run {
                    let connection = try PostgresConnection(
                        connectionString: configuration.database.url, applicationName: "outletd-migrate")
                    defer { connection.close() }
                    let migrator = Migrator()
                    if configuration.database.migrateOnStart {
                        try migrator.migrate(connection) { logger.info("\($0)") }
                    } else {
                        let pending = try migrator.pendingVersions(connection)
                        guard pending.isEmpty else {
                            throw Failure(
                                description: "database schema is behind (pending migrations \(pending)); "
                                    + "run `outletd migrate` or set database.migrate_on_start")
                        }
                    }
                    let settings = RollupStore.Settings(configuration)
                    let rollups = RollupStore(connection: connection)
                    if !configuration.rollups.maintain {
                        try rollups.stopMaintaining()
                        logger.warning(
                            """
                            rollups are not maintained (rollups.maintain: false): the rollup tables and the \
                            dashboards' views miss the samples stored from now on, until `outletd rollup \
                            rebuild` restates them
                            """)
                    } else if let since = try rollups.unmaintainedSince() {
                        let text = ISO8601DateFormatter().string(from: since)
                        logger.warning(
                            """
                            the rollups miss samples stored while they were not maintained (rollups.maintain: false): \
                            run `outletd rollup rebuild --since \(text)` to restate them
                            """,
                            metadata: ["unmaintained_since": "\(text)"])
                    }
                    if let previous = try rollups.store(settings) {
                        logger.warning(
                            """
                            rollup settings changed; rollups stored before were computed with the old ones: \
                            run `outletd rollup rebuild --since …` to restate them
                            """,
                            metadata: [
                                "time_zone": "\(previous.timeZone) -> \(settings.timeZone)",
                                "max_gap_seconds": "\(previous.maxGapSeconds) -> \(settings.maxGapSeconds)",
                            ])
                    }
                }
                return
            } catch let error as PostgresError where error.isConnectionError {
                let delay = backoff.nextDelay()
                logger.warning(
                    "database unavailable at start; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                try await Task.sleep(for: .milliseconds(Int(delay * 1_000)))
                if Task.isCancelled || Task.isShuttingDownGracefully { throw CancellationError() }
            }
        }
    }

    /// Pings systemd's watchdog at half its interval while the writer thread shows progress. A
    /// writer stuck for longer than that stops the pings, and systemd restarts outletd.
    static func feedWatchdog(_ notifier: SystemdNotifier, writer: Heartbeat, logger: Logger) async {
        guard let interval = notifier.watchdogInterval else { return }
        let half = interval / 2
        var stalledLogged = false
        while !Task.isCancelled {
            let age = writer.age
            if age < half {
                notifier.notify("WATCHDOG=1")
                stalledLogged = false
            } else if !stalledLogged {
                logger.error(
                    "writer shows no progress; not feeding the systemd watchdog", metadata: ["stalled": "\(age)"])
                stalledLogged = true
            }
            do { try await Task.sleep(for: half) } catch { return }
        }
    }

    private func logStatistics(every seconds: Int) async {
        var previous = metrics.snapshot()
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(seconds)) } catch { return }
            let now = metrics.snapshot()
            guard now.messagesReceived != previous.messagesReceived || now.spoolRecordsPending > 0 else { continue }
            var metadata: Logger.Metadata = [
                "received": "\(now.messagesReceived - previous.messagesReceived)",
                "stored": "\(now.readingsStored - previous.readingsStored)",
                "duplicates": "\(now.readingsDuplicate - previous.readingsDuplicate)",
                "rejected": "\(now.rejectedTotal - previous.rejectedTotal)",
                "batches": "\(now.batchesCommitted - previous.batchesCommitted)",
                "spool_bytes": "\(now.spoolBytes)", "spool_records": "\(now.spoolRecordsPending)",
                "spool_oldest_age_s": "\(String(format: "%.1f", now.spoolOldestRecordAgeSeconds))",
            ]
            for (reason, count) in now.rejected where count != previous.rejected[reason] {
                metadata["rejected_\(reason.rawValue)"] = "\(count - (previous.rejected[reason] ?? 0))"
            }
            logger.info("ingest in the last \(seconds) s", metadata: metadata)
            previous = now
        }
    }
}
