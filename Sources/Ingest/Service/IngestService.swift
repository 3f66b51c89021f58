import Foundation
import Logging
import MQTT
import Postgres
import ServiceLifecycle
import Telemetry

/// The daemon: MQTT intake → queue → batch writer → PostgreSQL, plus the registry listener.
///
/// Start order: database (migrations, rollup settings), registry, maintenance (partitions,
/// retention), writer, broker. On graceful shutdown (SIGTERM,
/// SIGINT) the reverse: intake stops first (no message is taken that will not be written), the
/// writer drains everything received, then the registry listener ends.
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

    /// The topic filters outletd subscribes to.
    public var subscriptions: [String] {
        ["\(configuration.mqtt.topicPrefix)/+/telemetry"]
    }

    /// `outletd/<instance>/status`: `online` while connected, `offline` (the will) otherwise.
    public var statusTopic: String { "outletd/\(configuration.instanceID)/status" }

    public func run() async throws {
        let configuration = self.configuration
        let logger = self.logger
        try await prepareDatabase()

        let registry = DeviceRegistry()
        let registryListener = RegistryListener(
            registry: registry, connectionString: configuration.database.url,
            refreshInterval: configuration.registry.refreshIntervalSeconds,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds,
            logger: logger)
        registryListener.start()

        let maintenance = MaintenanceTask(
            connectionString: configuration.database.url, retention: configuration.retention,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds, logger: logger)
        maintenance.start()

        let queue = IntakeQueue(
            maxMessages: configuration.ingest.queueMaxMessages, maxBytes: configuration.ingest.queueMaxBytes)
        let writer = BatchWriter(
            queue: queue, registry: registry,
            classifier: MessageClassifier(
                topicPrefix: configuration.mqtt.topicPrefix, limits: configuration.validation.limits),
            store: BatchStore(
                keepRejectedMessages: configuration.rejections.keepMessages,
                pendingDevicesMax: configuration.rejections.pendingDevicesMax),
            settings: BatchWriter.Settings(configuration), connectionString: configuration.database.url,
            metrics: metrics, logger: logger)
        writer.start()

        let client = try makeMQTTClient(queue: queue)
        client.setSubscriptions(subscriptions.map { (filter: $0, qos: 1) })
        let statusTopic = self.statusTopic
        // Taken before the client starts, so that no event (the first `connected`) is missed.
        let eventStream = client.events
        let events = Task {
            for await event in eventStream {
                switch event {
                case .connected(let sessionPresent):
                    logger.info(
                        "broker connected",
                        metadata: ["session_present": "\(sessionPresent)", "subscriptions": "\(self.subscriptions)"])
                    _ = try? client.publish(statusTopic, payload: Array("online".utf8), qos: 1, retain: true)
                case .connectionFailed(let reason):
                    logger.warning("broker connection failed; retrying", metadata: ["reason": "\(reason)"])
                case .disconnected(let reason):
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
            ])
        let statistics = Task { await self.logStatistics(every: 60) }

        // Run until SIGTERM/SIGINT (or cancellation).
        try? await gracefulShutdown()

        logger.info("shutting down: stopping intake, writing what was received")
        events.cancel()
        _ = try? client.publish(statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        client.stop()
        queue.close()
        let unwritten = await writer.finish()
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
            throw Failure(
                description: "\(unwritten) received messages could not be written before the shutdown timeout")
        }
    }

    private var redactedMQTTURL: String {
        (try? MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID).redactedURL)
            ?? "(invalid URL)"
    }

    func makeMQTTClient(queue: IntakeQueue) throws -> MQTTClient {
        var mqtt = try MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID)
        mqtt.cleanStart = false
        mqtt.sessionExpiryInterval = UInt32(clamping: configuration.mqtt.sessionExpirySeconds)
        mqtt.keepAliveSeconds = configuration.mqtt.keepAliveSeconds
        mqtt.reconnectDelayMin = configuration.mqtt.reconnectDelayMinSeconds
        mqtt.reconnectDelayMax = configuration.mqtt.reconnectDelayMaxSeconds
        mqtt.receiveMaximum = configuration.mqtt.receiveMaximum
        mqtt.will = MQTTMessage.Will(topic: statusTopic, payload: Array("offline".utf8), qos: 1, retain: true)
        let metrics = self.metrics
        // Runs on libmosquitto's network thread; the PUBACK leaves after it returns. It blocks
        // while the queue is full (backpressure).
        return try MQTTClient(configuration: mqtt) { message in
            metrics.messageReceived()
            queue.append(RawMessage(topic: message.topic, payload: message.payload, receivedAt: Date()))
        }
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
                    if let previous = try RollupStore(connection: connection).store(settings) {
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

    private func logStatistics(every seconds: Int) async {
        var previous = metrics.snapshot()
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(seconds)) } catch { return }
            let now = metrics.snapshot()
            guard now.messagesReceived != previous.messagesReceived else { continue }
            var metadata: Logger.Metadata = [
                "received": "\(now.messagesReceived - previous.messagesReceived)",
                "stored": "\(now.readingsStored - previous.readingsStored)",
                "duplicates": "\(now.readingsDuplicate - previous.readingsDuplicate)",
                "rejected": "\(now.rejectedTotal - previous.rejectedTotal)",
                "batches": "\(now.batchesCommitted - previous.batchesCommitted)",
            ]
            for (reason, count) in now.rejected where count != previous.rejected[reason] {
                metadata["rejected_\(reason.rawValue)"] = "\(count - (previous.rejected[reason] ?? 0))"
            }
            logger.info("ingest in the last \(seconds) s", metadata: metadata)
            previous = now
        }
    }
}
