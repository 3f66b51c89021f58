import Config
import Foundation
import Logging
import MQTT
import Observability
import Postgres
import Protocols
import Routing
import Runtime
import Storage
import Synchronization
import Telemetry
import WritePath

/// The command relay: turns set requests, state and availability reports and database changes into command
/// transitions, publishes commands to outlets and every transition on `set/result`.
///
/// A ``DatabaseWorker`` runs it, on a thread and a PostgreSQL connection of its own (libpq blocks; never on the
/// cooperative pool), and it does not wait for telemetry batches: a request is recorded, claimed and published
/// within milliseconds. Timeouts and expiry are found by a sweep every `sweepInterval` (conditional `UPDATE`s on
/// deadlines stored in the rows), so they survive restarts and several instances agree on them. It ends by
/// itself once its inbox is closed (intake stopped) and handled. See docs/COMMANDS.md.
public struct CommandRelay: DatabaseJob {
    /// How the relay behaves.
    public struct Settings: Sendable {
        public var instanceID: String
        public var topicPrefix: String
        public var confirmTimeoutSeconds: Double
        public var offlineExpirySeconds: Double
        public var sweepIntervalSeconds: Double
        public var keepRejectedMessages: Int
        public var payloadExcerptBytes: Int
        public var maxPayloadBytes: Int
        /// Tasmota and Shelly topics.
        public var router: ProtocolRouter
        /// Bound of `pending_devices` (discovery adds to it).
        public var pendingDevicesMax: Int

        public init(_ configuration: OutletdConfiguration) {
            router = ProtocolRouter(configuration)
            pendingDevicesMax = configuration.rejections.pendingDevicesMax
            instanceID = configuration.instanceID
            topicPrefix = configuration.mqtt.topicPrefix
            confirmTimeoutSeconds = configuration.commands.confirmTimeoutSeconds
            offlineExpirySeconds = configuration.commands.offlineExpirySeconds
            sweepIntervalSeconds = Double(configuration.commands.sweepIntervalMilliseconds) / 1_000
            keepRejectedMessages = configuration.rejections.keepMessages
            payloadExcerptBytes = configuration.rejections.payloadExcerptBytes
            maxPayloadBytes = configuration.validation.maxPayloadBytes
        }
    }

    /// What the relay's runs share with the rest of outletd.
    final class Shared: Sendable {
        /// The backend process id of the relay's connection (0 when not connected).
        let backendPID = Atomic<Int32>(0)
        /// Failed connections since the inbox was closed.
        let failuresWhileStopping = Mutex(0)
        /// What ESPHome nodes announced and which switches they reported (memory, rebuilt from retained messages).
        let esphome = Mutex(ESPHomeNodes())
    }

    public var name: String { "outletd-commands" }
    let inbox: CommandInbox
    let registry: DeviceRegistry
    let client: MQTTClient
    let protocols: SwitchProtocols
    let settings: Settings
    let metrics: IngestMetrics
    let logger: Logger
    let shared = Shared()

    public init(
        inbox: CommandInbox, registry: DeviceRegistry, client: MQTTClient,
        protocols: SwitchProtocols = SwitchProtocols(), settings: Settings, metrics: IngestMetrics, logger: Logger
    ) {
        self.inbox = inbox
        self.registry = registry
        self.client = client
        self.protocols = protocols
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    /// The backend process id of the relay's connection (0 when not connected): notifications it caused itself
    /// need no wake-up.
    public var backendPID: Int32 { shared.backendPID.load(ordering: .relaxed) }

    /// The relay ends by itself: when the inbox is closed and handled, not when asked.
    public var stopsWhenAsked: Bool { false }
    public var isFinished: Bool { inbox.isClosedAndDrained }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        shared.backendPID.store(connection.backendPID, ordering: .relaxed)
        defer { shared.backendPID.store(0, ordering: .relaxed) }
        try CommandStore(connection: connection).writeSettings(
            confirmTimeoutSeconds: settings.confirmTimeoutSeconds, offlineExpirySeconds: settings.offlineExpirySeconds)
        guard waitUntilReady() else { return }
        var loop = Loop(relay: self)
        try loop.run(CommandStore(connection: connection))
        if context.reconnected { logger.info("command relay recovered") }
    }

    public func connectionFailed(_ error: any Error) {
        metrics.databaseError()
        guard inbox.isClosed else { return }
        // Stopping while the database is away: after a few attempts, the requests left are given up.
        let failures = shared.failuresWhileStopping.withLock {
            $0 += 1
            return $0
        }
        if failures > 3 {
            let left = inbox.abandon()
            logger.warning(
                "stopping without the database: reports and requests not handled", metadata: ["events": "\(left)"])
        }
    }

    /// Commands wait for the registry (codes) and the broker. When outletd stops before both are there, the
    /// reports and requests already received are still handled, without the broker (nothing is published while
    /// stopping), once the registry is loaded; waiting for the broker then would never end. Without a registry
    /// within `commitWaitSeconds` they are given up. Returns false when nothing is left to do.
    private func waitUntilReady() -> Bool {
        var stoppingSince: Date?
        while !registry.isLoaded || !client.isConnected {
            if inbox.isClosedAndDrained { return false }
            if inbox.isClosed {
                if registry.isLoaded { return true }
                let since = stoppingSince ?? Date()
                stoppingSince = since
                if Date().timeIntervalSince(since) > CommandInbox.commitWaitSeconds {
                    let left = inbox.abandon()
                    logger.warning(
                        "stopping before the outlet registry was loaded: reports and requests not handled",
                        metadata: ["events": "\(left)"])
                    return false
                }
                _ = registry.waitUntilLoaded(until: Date().addingTimeInterval(0.05))
                continue
            }
            if registry.waitUntilLoaded(until: Date().addingTimeInterval(0.05)) {
                _ = client.waitUntilConnectedBlocking(timeout: .milliseconds(50))
            }
        }
        return true
    }

    /// One connection's worth of the relay's work: what it must do next, owned by the worker's thread.
    struct Loop {
        let relay: CommandRelay
        var needsResume = true
        var needsSend = true
        var needsResults = true
        var nextSweep = Date()
        /// Codes the registry does not know yet are asked of the database (bounded like the writer's): an outlet
        /// registered a moment ago announces its state and availability before its NOTIFY reaches the registry.
        var misses = RegistryMissPolicy(lookupsPerSecond: 50, negativeSeconds: 2)

        var settings: Settings { relay.settings }

        /// The registered outlet `code`: from the registry, or from the database when the registry has not heard
        /// of it yet (then added to the registry).
        mutating func lookUp(_ code: String, _ store: CommandStore) throws -> RegisteredDevice? {
            if let device = relay.registry.lookup(code) { return device }
            guard misses.shouldLookUp(code, at: Date()),
                let device = try DeviceStore(connection: store.connection).registryEntry(code)
            else { return nil }
            relay.registry.update(code, device)
            return device
        }

        /// Handles events until the inbox is closed and handled. Events taken and not handled when the database
        /// fails go back into the inbox for the next connection.
        mutating func run(_ store: CommandStore) throws {
            while !relay.inbox.isClosedAndDrained {
                var pending = relay.inbox.take(waitingUntil: nextSweep)[...]
                do {
                    // Unconfirmed commands are sent again once the broker is there, never while outletd stops.
                    if needsResume && relay.client.isConnected && !relay.inbox.isClosed {
                        let unconfirmed = try store.unconfirmed(sentBy: settings.instanceID)
                        if !unconfirmed.isEmpty {
                            relay.logger.info(
                                "re-sending unconfirmed commands", metadata: ["count": "\(unconfirmed.count)"])
                        }
                        publish(unconfirmed)
                        needsResume = false
                    }
                    while let event = pending.first {
                        try handle(event, store)
                        pending.removeFirst()
                    }
                    if Date() >= nextSweep {
                        _ = try store.sweep()
                        try relay.writeSettledESPHomeMaps(store, now: Date())
                        // Also picks up results another instance could not publish while this one held the lock.
                        needsResults = true
                        needsSend = true
                        nextSweep = Date().addingTimeInterval(settings.sweepIntervalSeconds)
                    }
                    // Claim nothing while the broker is away or outletd stops: a claimed command must really be
                    // published (the next sweep after the reconnect, or the next start, picks it up).
                    let canPublish = relay.client.isConnected && !relay.inbox.isClosed
                    if needsSend && canPublish {
                        needsSend = false
                        let outgoing = try store.claimSendable(
                            instanceID: settings.instanceID, confirmTimeoutSeconds: settings.confirmTimeoutSeconds)
                        if !outgoing.isEmpty {
                            publish(outgoing)
                            needsResults = true
                        }
                    }
                    if needsResults && canPublish {
                        needsResults = false
                        _ = try store.publishResults { publish($0) }
                    }
                } catch {
                    relay.inbox.putBack(Array(pending))
                    throw error
                }
            }
        }

        mutating func handle(_ event: CommandInbox.Event, _ store: CommandStore) throws {
            switch event {
            case .databaseChanged:
                needsSend = true
                needsResults = true
            case .message(let message, let route, let done):
                try handle(message, route, store)
                done?.signal()
            }
        }

        mutating func handle(_ message: RawMessage, _ route: MessageRoute, _ store: CommandStore) throws {
            let match: NativeProtocol.TopicMatch
            switch route {
            case .native(let kind, let code): match = NativeProtocol.TopicMatch(deviceCode: code, kind: kind)
            case .foreign(let foreign) where foreign.carriesState:
                try handleForeign(message, foreign, store)
                return
            default: return
            }
            func reject(_ reason: RejectionReason, _ detail: String, requestID: String? = nil) throws {
                let rejection = RejectedReading(
                    receivedAt: message.receivedAt, topic: message.topic, deviceCode: match.deviceCode,
                    reason: reason, detail: detail, index: nil)
                try RejectionStore(connection: store.connection).record(
                    [rejection], excerpts: [Batch.excerpt(message.payload, maxBytes: settings.payloadExcerptBytes)],
                    keepMessages: settings.keepRejectedMessages)
                relay.metrics.commandMessageRejected(reason)
                relay.logger.notice(
                    "command message rejected",
                    metadata: ["reason": "\(reason.rawValue)", "topic": "\(message.topic)", "detail": "\(detail)"])
                if match.kind == .set, let code = DeviceCode(match.deviceCode) {
                    let result = SwitchResult(
                        result: CommandStatus.rejected.resultName, requestID: requestID, source: "mqtt",
                        reason: CommandReason(reason, detail).description,
                        at: CommandReason.timestamp(message.receivedAt))
                    publish(PendingResult(code: code.rawValue, result: result))
                }
            }
            guard DeviceCode(match.deviceCode) != nil else {
                try reject(.invalidDeviceCode, "device code must be 1–64 of A-Z a-z 0-9 _ -")
                return
            }
            let code = match.deviceCode
            let request: SwitchRequest?
            if match.kind == .set {
                switch NativeProtocol.parseSetRequest(message.payload, maxPayloadBytes: settings.maxPayloadBytes) {
                case .failure(let rejection):
                    try reject(rejection.reason, rejection.detail)
                    return
                case .success(let parsed): request = parsed
                }
            } else {
                request = nil
            }
            guard let device = try lookUp(code, store) else {
                try reject(.unknownDevice, "device \(code) is not registered", requestID: request?.requestID)
                return
            }
            guard device.enabled else {
                try reject(.disabledDevice, "device \(code) is disabled", requestID: request?.requestID)
                return
            }
            guard let translation = relay.protocols.named(device.protocolName) else {
                try reject(
                    .invalidTopic, "outletd cannot switch outlets of protocol \(device.protocolName)",
                    requestID: request?.requestID)
                return
            }
            switch match.kind {
            case .set:
                guard let request else { return }
                _ = try store.enqueue(
                    code: code, requested: request.value, source: .mqtt, requestedBy: request.requestedBy,
                    requestID: request.requestID)
                needsSend = true
                needsResults = true
            case .state:
                switch translation.stateReport(message.payload) {
                case .failure(let rejection): try reject(rejection.reason, rejection.detail)
                case .success(let report):
                    if case .none? = try store.recordStateReport(code: code, report: report) {
                    } else {
                        needsResults = true
                    }
                }
            case .availability:
                switch translation.availability(message.payload) {
                case .failure(let rejection): try reject(rejection.reason, rejection.detail)
                case .success(let online):
                    try store.recordAvailability(code: code, online: online)
                    if online { needsSend = true }
                }
            case .telemetry, .command:
                return
            }
        }

        func publish(_ commands: [OutgoingCommand]) {
            for command in commands {
                guard let code = DeviceCode(command.code), let translation = relay.protocols.named(command.protocolName)
                else { continue }
                var target = SwitchTarget(code: code, nativePrefix: settings.topicPrefix)
                if let device = relay.registry.lookup(command.code), let address = device.address {
                    target.deviceTopic = address.deviceTopic
                    target.channel = address.channel
                    target.fullTopic = device.fullTopic
                }
                target.tasmotaPrefixes = settings.router.tasmotaPrefixes
                target.shellyGen1Prefix = settings.router.shellyGen1Prefix
                target.shellyGen2ReplyPrefix = settings.router.shellyGen2ReplyPrefix(for: target.deviceTopic)
                target.zigbee2mqttBaseTopic = settings.router.zigbee2mqttBaseTopic
                if let device = relay.registry.lookup(command.code) {
                    target.endpoint = device.address?.endpoint ?? ""
                    if command.protocolName == OutletProtocol.esphome.rawValue {
                        guard let switchID = relay.esphomeSwitch(of: device, prefix: target.deviceTopic) else {
                            relay.logger.warning(
                                "no switch known for an esphome outlet (--switch); the command will time out",
                                metadata: ["code": "\(command.code)"])
                            continue
                        }
                        target.endpoint = switchID
                    }
                }
                let message = translation.commandMessage(target: target, commandID: command.id, state: command.state)
                do {
                    try relay.client.publish(message.topic, payload: message.payload, qos: 1)
                    relay.metrics.commandPublished()
                } catch {
                    relay.logger.warning(
                        "publishing a command failed; it will time out unless confirmed",
                        metadata: ["command": "\(command.id)", "error": "\(error)"])
                }
            }
        }

        func publish(_ result: PendingResult) {
            guard let code = DeviceCode(result.code) else { return }
            let topic = NativeProtocol.topic(prefix: settings.topicPrefix, code: code, kind: .set) + "/result"
            do {
                try relay.client.publish(topic, payload: result.result.payload, qos: 1)
                relay.metrics.commandResultPublished(
                    result.result.result, secondsSinceRequest: result.secondsSinceRequest)
            } catch {
                relay.logger.warning("publishing a command result failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
