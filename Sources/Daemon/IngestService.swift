import Alerts
import Automations
import Commands
import Compaction
import Config
import Foundation
import Ingest
import Logging
import MQTT
import MessageSpool
import Observability
import OwnerApp
import Postgres
import Routing
import Runtime
import ServiceLifecycle
import Storage
import Telemetry
import WritePath

/// The daemon: MQTT intake → durable spool → batch writer → PostgreSQL, plus the registry listener.
///
/// Start order: database (migrations, rollup settings), registry, maintenance (partitions,
/// retention), spool, writer, command relay, the owners' app (when `app.listen` is set), broker. On
/// graceful shutdown (SIGTERM, SIGINT) the reverse: intake stops first, the writer writes what the spool holds (within
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

    /// The composition root: prepares the database, opens the spool, wires the parts and runs them as one
    /// `ServiceGroup`. They start in this order and stop in the reverse one: intake first (hand-over, disconnect,
    /// no more messages), then the writer (stores what the spool holds), the relay (handles what its inbox
    /// holds), the listeners and maintenance.
    public func run() async throws {
        let (configuration, logger, metrics) = (self.configuration, self.logger, self.metrics)
        let database = configuration.database
        let build = BuildInfo.current
        logger.info(
            "outletd \(build.version) starting",
            metadata: [
                "version": "\(build.version)", "commit": "\(build.commit)", "instance": "\(configuration.instanceID)",
            ])
        if configuration.mqtt.shareGroup.isEmpty && configuration.commands.shareGroup.isEmpty
            && !configuration.mqtt.ignorePeers
        {
            if let peers = try await PeerCheck.onlinePeers(configuration) {
                if let refusal = PeerCheck.refusal(peers: peers, instanceID: configuration.instanceID) {
                    throw Failure(description: refusal)
                }
            } else {
                logger.warning("the broker did not answer within 5 s: other outletd instances were not looked for")
            }
        }
        guard let prepared = try await DatabaseStart.prepare(configuration, logger: logger) else {
            logger.info("stopped before the database answered")
            return
        }
        // Tasmota FullTopics of registered outlets are subscribed to besides the configured ones (read at start).
        let registeredFullTopics = prepared.registeredFullTopics
        let router = ProtocolRouter(configuration, registeredFullTopics: registeredFullTopics)
        let topics = TopicPolicy(configuration)
        let subscriptions = topics.subscriptions(registeredFullTopics: registeredFullTopics)
        var spoolSettings = configuration.spool.settings
        spoolSettings.owner = configuration.instanceID
        spoolSettings.keepUntilReleased = configuration.database.durability == .replicated
        let spool = try await Blocking.run("outletd-spool-open") { [spoolSettings] in
            try Spool.open(spoolSettings, logger: logger)
        }
        metrics.observeBacklog {
            let status = spool.status()
            return .init(
                bytes: status.bytes, records: status.recordsPending, oldestReceivedAt: status.oldestPendingReceivedAt,
                unconfirmedBytes: status.unconfirmedBytes)
        }

        let registry = DeviceRegistry()
        let inbox = CommandInbox(maxEvents: configuration.commands.inboxMaxMessages)
        let notifier = SystemdNotifier()
        // Shared subscriptions: this instance's membership of the group, for the hand-over when it stops.
        let membership =
            subscriptions.contains { $0.hasPrefix("$share/") } && !configuration.mqtt.shareGroup.isEmpty
            ? ShareGroupMembership(group: configuration.mqtt.shareGroup) : nil
        let writer = BatchWriter(
            spool: spool, registry: registry,
            classifier: MessageClassifier(
                topicPrefix: configuration.mqtt.topicPrefix, limits: configuration.validation.limits,
                foreign: ForeignReadings(router: router, registry: registry)),
            store: BatchStore(
                keepRejectedMessages: configuration.rejections.keepMessages,
                pendingDevicesMax: configuration.rejections.pendingDevicesMax,
                maintainsRollups: configuration.rollups.maintain),
            settings: BatchWriter.Settings(configuration), connectionString: database.url, metrics: metrics,
            logger: logger)
        let intake = try MQTTIntake(
            .init(
                configuration: configuration, subscriptions: subscriptions,
                staleSubscriptions: topics.staleSubscriptions, statusTopic: topics.statusTopic,
                drainTopic: topics.drainTopic, router: router, spool: spool, inbox: inbox, membership: membership,
                metrics: metrics, notifier: notifier),
            logger: logger)
        var relaySettings = CommandRelay.Settings(configuration)
        relaySettings.router = router
        let relay = CommandRelay(
            inbox: inbox, registry: registry, client: intake.client, settings: relaySettings, metrics: metrics,
            logger: logger)
        func worker(_ job: some DatabaseJob) -> DatabaseWorker {
            DatabaseWorker(
                job, connectionString: database.url, reconnectDelayMax: database.reconnectDelayMaxSeconds,
                logger: logger)
        }
        var services: [any Service] = [
            worker(MaintenanceTask(retention: configuration.retention)),
            worker(
                RegistryListener(
                    registry: registry, refreshInterval: configuration.registry.refreshIntervalSeconds,
                    metrics: metrics)),
            worker(CommandListener(inbox: inbox, ownBackendPID: { relay.backendPID })),
        ]
        if let membership { services.append(worker(membership)) }
        if configuration.retention.compactAfterHours > 0 {
            services.append(worker(CompactionTask(retention: configuration.retention)))
        }
        if configuration.automations.run {
            services.append(
                worker(
                    AutomationRunner(
                        settings: .init(configuration), store: AutomationStore.init(connection:),
                        metricsFactory: metrics.factory, logger: logger)))
        }
        if configuration.alerts.enabled {
            let maxMessages = configuration.alerts.maxMessagesPerHour
            let store: @Sendable (PostgresConnection) -> any AlertStore = {
                AlertSQLStore(connection: $0, maxMessagesPerHour: maxMessages)
            }
            services.append(
                worker(
                    AlertRunner(
                        settings: .init(configuration), makeStore: store, metricsFactory: metrics.factory,
                        logger: logger)))
            services.append(
                worker(
                    AlertDeliveryLoop(
                        senders: AlertSenders.make(configuration, logger: logger), makeStore: store,
                        leaseSeconds: configuration.alerts.deliveryLeaseSeconds,
                        replicated: configuration.database.durability == .replicated,
                        metricsFactory: metrics.factory, logger: logger)))
        }
        if configuration.homeAssistant.discovery {
            let router = ProtocolRouter(configuration)
            let discovery = HomeAssistantDiscovery(
                discoveryPrefix: configuration.homeAssistant.prefix, topicPrefix: configuration.mqtt.topicPrefix,
                version: build.version, tasmotaPrefixes: router.tasmotaPrefixes,
                shellyGen1Prefix: router.shellyGen1Prefix,
                reportIntervals: .init(
                    native: configuration.homeAssistant.nativeIntervalSeconds,
                    tasmota: configuration.homeAssistant.tasmotaTelePeriodSeconds))
            // A reader of the configs the broker keeps, with the daemon's credentials and TLS and a client id
            // of its own.
            var reader = try MQTTConfiguration(
                url: configuration.mqtt.url, clientID: "\(configuration.instanceID)-discovery")
            reader.cleanStart = true
            reader.sessionExpiryInterval = 0
            reader.tls = MQTTIntake.tls(configuration.mqtt, base: reader.tls)
            services.append(
                worker(
                    DiscoveryPublisher(
                        discovery: discovery, client: intake.client, reader: reader,
                        refreshInterval: configuration.registry.refreshIntervalSeconds, logger: logger)))
        }
        services += [
            worker(relay), writer, StatisticsLog(metrics: metrics, logger: logger),
            Watchdog(notifier: notifier, writer: writer.heartbeat, logger: logger),
        ]
        // The owners' app (app.listen): after the relay it hands switch requests to, stopped before it.
        if !configuration.app.listen.isEmpty {
            services.append(
                try OwnerAppServer(
                    listen: configuration.app.listen, configuration: configuration, logger: logger,
                    metricsFactory: metrics.factory))
        }
        services.append(intake)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { .init(service: $0) }, logger: logger))
        try await group.run()
        let final = metrics.snapshot()
        logger.info(
            "stopped",
            metadata: [
                "received": "\(final.messagesReceived)", "stored": "\(final.readingsStored)",
                "duplicates": "\(final.readingsDuplicate)", "rejected": "\(final.rejectedTotal)",
            ])
    }

}
