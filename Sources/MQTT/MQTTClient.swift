import CMosquitto
import Foundation

/// One libmosquitto client (MQTT v5) with its network thread (``NetworkLoop``). Thread-safe.
///
/// Life cycle: ``init(configuration:onMessage:)`` → ``start()`` → … → ``stop()`` (or deinit). A stopped
/// client cannot be started again; create a new one with the same client id to resume the session.
///
/// After a lost connection (or when the broker is down at start) the network thread retries with a growing
/// delay between ``MQTTConfiguration/reconnectDelayMin`` and
/// ``MQTTConfiguration/reconnectDelayMax`` and never gives up. Every successful connect subscribes to the
/// current ``setSubscriptions(_:)`` list again and sends the Session Expiry Interval again (libmosquitto
/// keeps the CONNECT properties given to `mosquitto_connect_bind_v5` for its reconnects).
///
/// Do not call ``stop()`` from `onMessage` or `onAcknowledged` (they run on the thread `stop()` joins).
public final class MQTTClient: Sendable {
    /// The configuration this client was created with.
    public let configuration: MQTTConfiguration
    private let handle: MosquittoHandle
    private let state: ClientState
    private let network: NetworkLoop

    /// Creates a client; nothing connects until ``start()``.
    ///
    /// `onMessage` runs on libmosquitto's network thread, in arrival order, never concurrently with itself.
    /// For QoS 1 the PUBACK is sent only after it returns, so whatever it writes durably survives a crash.
    /// It may block: that is backpressure (the broker's in-flight window of
    /// ``MQTTConfiguration/receiveMaximum`` fills and the broker queues), but while it blocks no other
    /// traffic flows (no keepalive pings: keep single calls well below 1.5 × keepalive).
    ///
    /// `onReadEnd`, when given, runs on the same thread after each read of the socket (which delivers the
    /// messages the socket held, up to ``NetworkLoop/burst``), before any packet is written: the PUBACKs of
    /// the messages delivered since its last call leave only after it returns. A receiver can therefore
    /// collect the messages of one read in `onMessage` and store them together in `onReadEnd`.
    public init(
        configuration: MQTTConfiguration, onMessage: @escaping @Sendable (MQTTMessage) -> Void,
        onReadEnd: (@Sendable () -> Void)? = nil
    ) throws(MQTTError) {
        try MosquittoLibrary.initialize()
        try Self.validate(configuration)
        let state = ClientState(configuration: configuration, onMessage: onMessage, onReadEnd: onReadEnd)
        // Unretained: `state` is owned by this client, whose deinit joins the network thread (the only
        // caller of the callbacks) before the state can be released.
        guard
            let pointer = mosquitto_new(
                configuration.clientID, configuration.cleanStart, Unmanaged.passUnretained(state).toOpaque())
        else {
            throw MQTTError(
                code: errno == ENOMEM ? .library : .invalidArgument,
                message: "creating the MQTT client: \(String(cString: strerror(errno)))")
        }
        do {
            try Self.configure(pointer, configuration)
        } catch {
            mosquitto_destroy(pointer)
            throw error
        }
        Self.installCallbacks(on: pointer)
        let handle = MosquittoHandle(pointer: pointer)
        do {
            self.network = try NetworkLoop(handle: handle, state: state)
        } catch {
            mosquitto_destroy(pointer)
            throw error
        }
        self.configuration = configuration
        self.handle = handle
        self.state = state
    }

    deinit {
        stop()
        mosquitto_destroy(handle.pointer)
    }

    private static func validate(_ configuration: MQTTConfiguration) throws(MQTTError) {
        func invalid(_ message: String) -> MQTTError {
            MQTTError(code: .invalidArgument, message: "invalid MQTT configuration: \(message)")
        }
        guard !configuration.host.isEmpty else { throw invalid("empty host") }
        guard (1...65_535).contains(configuration.port) else { throw invalid("port must be 1…65535") }
        guard configuration.cleanStart || !configuration.clientID.isEmpty else {
            throw invalid("a client id is required when clean start is off")
        }
        guard configuration.clientID.utf8.count <= 65_535 else { throw invalid("client id too long") }
        guard (5...65_535).contains(configuration.keepAliveSeconds) else {
            throw invalid("keepalive must be 5…65535 seconds")
        }
        guard configuration.reconnectDelayMin >= 1,
            configuration.reconnectDelayMax >= configuration.reconnectDelayMin,
            configuration.reconnectDelayMax <= 86_400
        else {
            throw invalid("reconnect delays must satisfy 1 ≤ min ≤ max ≤ 86400 seconds")
        }
        guard (1...65_535).contains(configuration.receiveMaximum), (1...65_535).contains(configuration.sendMaximum)
        else {
            throw invalid("receive and send maximum must be 1…65535")
        }
        if let will = configuration.will {
            guard MQTTTopic.isValidTopic(will.topic) else { throw invalid("bad will topic") }
            guard (0...2).contains(will.qos) else { throw invalid("will QoS must be 0, 1 or 2") }
        }
    }

    private static func configure(_ pointer: OpaquePointer, _ configuration: MQTTConfiguration) throws(MQTTError) {
        try MQTTError.check(
            mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), "selecting MQTT v5")
        try MQTTError.check(
            mosquitto_int_option(pointer, MOSQ_OPT_RECEIVE_MAXIMUM, Int32(configuration.receiveMaximum)),
            "setting the receive maximum")
        try MQTTError.check(
            mosquitto_int_option(pointer, MOSQ_OPT_SEND_MAXIMUM, Int32(configuration.sendMaximum)),
            "setting the send maximum")
        try MQTTError.check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1), "setting TCP_NODELAY")
        // Our own network thread drives the client: libmosquitto then only queues packets, PUBACKs included.
        try MQTTError.check(mosquitto_threaded_set(pointer, true), "selecting threaded use")
        try MQTTError.check(
            mosquitto_reconnect_delay_set(
                pointer, UInt32(configuration.reconnectDelayMin), UInt32(configuration.reconnectDelayMax), true),
            "setting the reconnect delay")
        if configuration.username != nil || configuration.password != nil {
            try MQTTError.check(
                mosquitto_username_pw_set(pointer, configuration.username, configuration.password),
                "setting user name and password")
        }
        if let tls = configuration.tls {
            // Verify the broker's certificate chain and its host name; TLS 1.2 or newer.
            try MQTTError.check(
                mosquitto_tls_set(
                    pointer, tls.caFile, tls.caFile == nil ? "/etc/ssl/certs" : nil, tls.certificateFile, tls.keyFile,
                    nil),
                "setting up TLS")
            try MQTTError.check(mosquitto_tls_opts_set(pointer, 1, "tlsv1.2", nil), "setting TLS options")
            try MQTTError.check(mosquitto_tls_insecure_set(pointer, false), "turning on host name verification")
        }
        if let will = configuration.will {
            guard will.payload.count <= 65_535 else {
                throw MQTTError(code: .payloadTooLarge, message: "the will payload is larger than 65535 bytes")
            }
            let returnCode = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set_v5(
                    pointer, will.topic, Int32(bytes.count), bytes.baseAddress, Int32(will.qos), will.retain, nil)
            }
            try MQTTError.check(returnCode, "setting the will on \(will.topic)")
        }
    }

    // MARK: Life cycle

    /// Starts the network thread and the first connection attempt; returns without waiting for the
    /// CONNACK (see ``waitUntilConnected(timeout:)``).
    ///
    /// The first TCP connect runs on the calling thread (it is where libmosquitto takes the v5 CONNECT
    /// properties it reuses on every reconnect), so it may block for a name lookup or an unreachable host.
    /// If the broker cannot be reached, that is not an error: the attempt is reported as
    /// ``MQTTConnectionEvent/connectionFailed(reason:)`` and in ``lastConnectionError``, and the network
    /// thread keeps retrying. Throws only for failures retrying cannot fix. Calling it again while running
    /// does nothing; after ``stop()`` it throws ``MQTTError/Code/stopped``.
    public func start() throws(MQTTError) {
        state.lifecycleLock.lock()
        defer { state.lifecycleLock.unlock() }
        switch state.withLock({ $0.phase }) {
        case .running:
            return
        case .stopping, .stopped:
            throw MQTTError(code: .stopped, message: "a stopped MQTT client cannot be started again")
        case .idle:
            break
        }

        var properties: OpaquePointer? = nil
        defer { mosquitto_property_free_all(&properties) }
        try MQTTError.check(
            mosquitto_property_add_int32(
                &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), configuration.sessionExpiryInterval),
            "adding the session expiry interval")
        let returnCode = mosquitto_connect_bind_v5(
            handle.pointer, configuration.host, Int32(configuration.port), Int32(configuration.keepAliveSeconds),
            nil, properties)
        if returnCode != MOSQ_ERR_SUCCESS.rawValue {
            let error = MQTTError(libraryReturnCode: returnCode, context: "connecting to \(state.brokerName)")
            guard Self.isRetryable(returnCode) else { throw error }
            state.withLock { $0.lastConnectionError = error }
            state.emit(.connectionFailed(reason: error.message))
        }
        state.withLock { $0.phase = .running }
        network.start()
    }

    private static func isRetryable(_ returnCode: Int32) -> Bool {
        switch returnCode {
        case MOSQ_ERR_ERRNO.rawValue, MOSQ_ERR_EAI.rawValue, MOSQ_ERR_LOOKUP.rawValue, MOSQ_ERR_NO_CONN.rawValue,
            MOSQ_ERR_CONN_REFUSED.rawValue, MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_TIMEOUT.rawValue:
            true
        default:
            false
        }
    }

    /// Disconnects cleanly (DISCONNECT with reason "normal disconnection"; the broker keeps the session for
    /// ``MQTTConfiguration/sessionExpiryInterval``), stops the network thread and waits for it. After it
    /// returns `onMessage` is never called again, pending ``publishAcknowledged(_:payload:qos:retain:)`` and
    /// ``waitUntilConnected(timeout:)`` calls fail and ``events`` streams end. Idempotent.
    ///
    /// It waits for a running `onMessage` to return, and for a connect attempt in progress on the network
    /// thread (quick unless the host is unreachable).
    public func stop() {
        state.lifecycleLock.lock()
        defer { state.lifecycleLock.unlock() }
        let previous = state.beginStopping()
        switch previous {
        case .stopped:
            return
        case .running:
            // Queues DISCONNECT (NO_CONN when not connected); the network thread writes it and ends.
            _ = mosquitto_disconnect_v5(handle.pointer, Int32(MQTT_RC_NORMAL_DISCONNECTION.rawValue), nil)
            network.wake()
            network.join()
        case .idle, .stopping:
            break
        }
        state.finishStopping()
    }

    // MARK: Subscriptions

    /// Sets the subscriptions (topic filter, QoS 0…2) made on every successful connect. While connected, new
    /// or changed ones are subscribed at once and removed ones unsubscribed (when disconnected, on the next
    /// connect). Filters that ``MQTTTopic/isValidFilter(_:)`` rejects are ignored.
    ///
    /// Subscriptions use retain handling "send retained on new subscription only", so a reconnect that
    /// resumes a session does not replay retained messages.
    public func setSubscriptions(_ subscriptions: [(filter: String, qos: Int)]) {
        var seen = Set<String>()
        var accepted: [(filter: String, qos: Int)] = []
        for subscription in subscriptions.reversed()
        where MQTTTopic.isValidFilter(subscription.filter) && seen.insert(subscription.filter).inserted {
            accepted.append((subscription.filter, min(max(subscription.qos, 0), 2)))
        }
        accepted.reverse()
        let newFilters = Set(accepted.map(\.filter))
        let (connected, toSubscribe, toUnsubscribe): (Bool, [(filter: String, qos: Int)], Set<String>) =
            state.withLock { state in
                var previous: [String: Int] = [:]
                for subscription in state.subscriptions { previous[subscription.filter] = subscription.qos }
                let removed = Set(previous.keys).subtracting(newFilters)
                state.subscriptions = accepted
                guard state.isConnected else {
                    state.pendingUnsubscribes.formUnion(removed)
                    state.pendingUnsubscribes.subtract(newFilters)
                    return (false, [], [])
                }
                return (true, accepted.filter { previous[$0.filter] != $0.qos }, removed)
            }
        guard connected else { return }
        for filter in toUnsubscribe {
            _ = mosquitto_unsubscribe_v5(handle.pointer, nil, filter, nil)
        }
        for subscription in toSubscribe {
            _ = ClientState.subscribe(handle.pointer, subscription)
        }
        network.wake()
    }

    /// Unsubscribes `filters` that a resumed persistent session may still hold from an earlier configuration
    /// (e.g. a plain subscription that became a shared one): at once when connected, else on the next
    /// connect. Filters among the current subscriptions are left alone; the broker ignores unknown ones.
    public func forgetSubscriptions(_ filters: [String]) {
        let (connected, toUnsubscribe): (Bool, Set<String>) = state.withLock { state in
            let current = Set(state.subscriptions.map(\.filter))
            let stale = Set(filters.filter(MQTTTopic.isValidFilter)).subtracting(current)
            guard state.isConnected else {
                state.pendingUnsubscribes.formUnion(stale)
                return (false, [])
            }
            return (true, stale)
        }
        guard connected else { return }
        for filter in toUnsubscribe {
            _ = mosquitto_unsubscribe_v5(handle.pointer, nil, filter, nil)
        }
        network.wake()
    }

    // MARK: Connection state

    /// Connection events (connected, failed attempts, disconnects) from now on. Every access returns a new
    /// stream, so any number of consumers can listen; each buffers the newest 1024 events if not read. The
    /// streams end when the client stops. Failed attempts of libmosquitto's automatic reconnects are not
    /// reported individually (libmosquitto does not surface them); the first attempt, refused CONNACKs and
    /// connections closed before the CONNACK are.
    public var events: AsyncStream<MQTTConnectionEvent> {
        state.makeEventStream()
    }

    /// Whether the broker has accepted our CONNECT and the connection is still up.
    public var isConnected: Bool {
        state.withLock { $0.isConnected }
    }

    /// Why the last connection attempt failed or the last connection ended; `nil` before any failure.
    /// Kept after a later success, for diagnostics.
    public var lastConnectionError: MQTTError? {
        state.withLock { $0.lastConnectionError }
    }

    /// Waits (without blocking a thread) until connected; throws ``MQTTError/Code/timeout`` (with the last
    /// connection error in the message), ``MQTTError/Code/notStarted`` or ``MQTTError/Code/stopped``.
    /// Cancelling the task ends the wait with a timeout error.
    public func waitUntilConnected(timeout: Duration) async throws(MQTTError) {
        let (phase, id): (ClientState.Phase, UInt64) = state.withLock { state in
            defer { state.nextID += 1 }
            return (state.phase, state.nextID)
        }
        switch phase {
        case .idle:
            throw MQTTError(code: .notStarted, message: "the MQTT client has not been started")
        case .stopping, .stopped:
            throw MQTTError(code: .stopped, message: "the MQTT client has been stopped")
        case .running:
            break
        }
        let state = self.state
        let timer = Task {
            try? await Task.sleep(for: timeout)
            state.abandonConnectWaiter(id: id)
        }
        let connected = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.addConnectWaiter(id: id, continuation)
            }
        } onCancel: {
            state.abandonConnectWaiter(id: id)
        }
        timer.cancel()
        state.forgetAbandonedConnectWaiter(id: id)
        guard connected else { throw connectWaitFailure(timeout: timeout) }
    }

    /// Blocks the calling thread until connected or `timeout`; returns whether connected. For threads
    /// outside Swift concurrency only (never call it on the cooperative pool).
    public func waitUntilConnectedBlocking(timeout: Duration) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return state.waitUntilConnected(deadline: Date(timeIntervalSinceNow: seconds))
    }

    private func connectWaitFailure(timeout: Duration) -> MQTTError {
        let (phase, lastError) = state.withLock { ($0.phase, $0.lastConnectionError) }
        if phase == .stopped || phase == .stopping {
            return MQTTError(code: .stopped, message: "the MQTT client was stopped while waiting for a connection")
        }
        var message = "not connected to \(state.brokerName) after \(timeout)"
        if let lastError { message += "; last error: \(lastError.message)" }
        return MQTTError(code: .timeout, message: message, libraryCode: lastError?.libraryCode)
    }

    // MARK: Publishing

    /// Publishes with QoS 0, 1 or 2 and returns the message id. Does not wait: QoS 1/2 messages wait in
    /// libmosquitto's queue (also while disconnected) and are resent after a reconnect until acknowledged.
    ///
    /// The network thread is woken to write it, unless `deferred`: then it is written at the thread's next turn
    /// (the next packet it reads, at the latest a second later) or at ``flush()``. A caller publishing many in a
    /// row defers them and flushes once: one wake-up instead of one per message (a simulated fleet at 20,000
    /// publishes/s).
    @discardableResult
    public func publish(
        _ topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false, deferred: Bool = false
    ) throws(MQTTError) -> Int32 {
        guard (0...2).contains(qos) else {
            throw MQTTError(code: .invalidArgument, message: "QoS must be 0, 1 or 2, not \(qos)")
        }
        guard payload.count <= 268_435_455 else {
            throw MQTTError(code: .payloadTooLarge, message: "payload of \(payload.count) bytes exceeds MQTT's limit")
        }
        let phase = state.withLock { $0.phase }
        guard phase != .stopped && phase != .stopping else {
            throw MQTTError(code: .stopped, message: "cannot publish to \(topic): the MQTT client has been stopped")
        }
        var mid: Int32 = 0
        let returnCode = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(
                handle.pointer, &mid, topic, Int32(bytes.count), bytes.baseAddress, Int32(qos), retain, nil)
        }
        if !deferred { network.wake() }
        // While disconnected libmosquitto still queues a QoS 1/2 message (and sends it after the
        // reconnect) but answers MOSQ_ERR_NO_CONN: that is not a failure, the message is on its way.
        if qos > 0 && returnCode == Int32(MOSQ_ERR_NO_CONN.rawValue) { return mid }
        try MQTTError.check(returnCode, "publishing to \(topic)")
        return mid
    }

    /// Wakes the network thread to write what deferred publishes queued.
    public func flush() {
        network.wake()
    }

    /// Publishes and waits until the broker acknowledged: PUBACK for QoS 1, PUBCOMP for QoS 2, the packet
    /// written to the socket for QoS 0. Throws if the broker rejects it (reason code ≥ 0x80) or the client
    /// stops first. While disconnected it keeps waiting: the message is resent after the reconnect.
    public func publishAcknowledged(_ topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false)
        async throws(MQTTError)
    {
        // The broker's answer can arrive before `mosquitto_publish` has returned the mid; while this counter
        // is positive the callback records acknowledgements nobody waits for yet.
        state.withLock { $0.publishesAwaitingMid += 1 }
        let mid: Int32
        do {
            mid = try publish(topic, payload: payload, qos: qos, retain: retain)
        } catch {
            state.withLock { state in
                state.publishesAwaitingMid -= 1
                if state.publishesAwaitingMid == 0 { state.earlyAcknowledgements.removeAll() }
            }
            throw error
        }
        let state = self.state
        let result = await withCheckedContinuation { continuation in
            state.addAcknowledgementWaiter(mid: mid, continuation)
        }
        try result.get()
    }

    // MARK: Counters

    /// Publishes the broker acknowledged successfully (see ``publishAcknowledged(_:payload:qos:retain:)``
    /// for what counts as acknowledged per QoS).
    public var acknowledgedCount: UInt64 {
        state.withLock { $0.acknowledgedCount }
    }

    /// Blocks the calling thread (never call it from a task) until the broker acknowledged at least `count`
    /// publishes in all, the client stops or `timeout` passes; returns ``acknowledgedCount``. A publisher
    /// keeps a bounded in-flight window with it: publish, and when `published − acknowledged` reaches the
    /// window, wait for the acknowledgements to catch up.
    public func waitUntilAcknowledged(atLeast count: UInt64, timeout: Duration) -> UInt64 {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18
        return state.waitUntilAcknowledged(atLeast: count, deadline: Date().addingTimeInterval(seconds))
    }

    /// Messages handed to `onMessage`.
    public var receivedCount: UInt64 {
        state.receivedCount.load(ordering: .relaxed)
    }

    /// Called on the network thread with the mid of each successfully acknowledged publish, for
    /// high-rate publishers that count or track acknowledgements without a task per message. Must be
    /// quick and must not block. Can be set at any time.
    public var onAcknowledged: (@Sendable (Int32) -> Void)? {
        get { state.withLock { $0.onAcknowledged } }
        set { state.withLock { $0.onAcknowledged = newValue } }
    }

    // MARK: Testing

    /// The client's socket, for tests that cut the connection at a chosen moment. -1 when not connected.
    func socketForTesting() -> Int32 {
        mosquitto_socket(handle.pointer)
    }
}
