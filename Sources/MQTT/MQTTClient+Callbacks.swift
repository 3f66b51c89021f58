import CMosquitto

// libmosquitto's callbacks. They run on the network thread, get `obj` = an unretained pointer to the
// client's `ClientState` (kept alive by the client, whose deinit joins the network thread before the state
// is released), and never throw or force-unwrap: nothing may unwind into C.

extension MQTTClient {
    /// Installs the v5 callbacks on a fresh `struct mosquitto *`.
    static func installCallbacks(on pointer: OpaquePointer) {
        mosquitto_connect_v5_callback_set(pointer) { mosq, obj, reasonCode, flags, _ in
            guard let mosq, let state = ClientState.from(obj) else { return }
            state.handleConnect(mosq: mosq, reasonCode: reasonCode, flags: flags)
        }
        mosquitto_disconnect_v5_callback_set(pointer) { _, obj, reasonCode, _ in
            ClientState.from(obj)?.handleDisconnect(reasonCode: reasonCode)
        }
        mosquitto_publish_v5_callback_set(pointer) { _, obj, mid, reasonCode, _ in
            ClientState.from(obj)?.handlePublishAcknowledged(mid: mid, reasonCode: reasonCode)
        }
        mosquitto_message_v5_callback_set(pointer) { _, obj, message, _ in
            guard let message, let state = ClientState.from(obj) else { return }
            state.handleMessage(message.pointee)
        }
    }
}

extension ClientState {
    static func from(_ obj: UnsafeMutableRawPointer?) -> ClientState? {
        guard let obj else { return nil }
        return Unmanaged<ClientState>.fromOpaque(obj).takeUnretainedValue()
    }

    var brokerName: String {
        configuration.host.contains(":")
            ? "[\(configuration.host)]:\(configuration.port)" : "\(configuration.host):\(configuration.port)"
    }

    func handleConnect(mosq: OpaquePointer, reasonCode: Int32, flags: Int32) {
        guard reasonCode == 0 else {
            let error = MQTTError(
                reasonCode: reasonCode, context: "broker \(brokerName) refused the connection", code: .connectionRefused
            )
            withLock { state in
                state.lastConnectionError = error
                state.attemptFailureReported = true
            }
            emit(.connectionFailed(reason: error.message))
            return
        }
        let (subscriptions, unsubscribes, waiters) = withLockBroadcasting { state in
            state.isConnected = true
            state.connections &+= 1
            state.attemptFailureReported = false
            let result = (state.subscriptions, state.pendingUnsubscribes, Array(state.connectWaiters.values))
            state.pendingUnsubscribes.removeAll()
            state.connectWaiters.removeAll()
            return result
        }
        // Resubscribe on every connect: the broker may have lost the session (expiry, restart without
        // persistence, clean start). Retain handling "new only" avoids replaying retained messages for
        // subscriptions the resumed session already has.
        for filter in unsubscribes {
            _ = mosquitto_unsubscribe_v5(mosq, nil, filter, nil)
        }
        for subscription in subscriptions {
            _ = Self.subscribe(mosq, subscription)
        }
        emit(.connected(sessionPresent: flags & 1 != 0))
        for waiter in waiters {
            waiter.resume(returning: true)
        }
    }

    static func subscribe(_ mosq: OpaquePointer, _ subscription: (filter: String, qos: Int)) -> Int32 {
        mosquitto_subscribe_v5(
            mosq, nil, subscription.filter, Int32(clamping: subscription.qos),
            Int32(MQTT_SUB_OPT_SEND_RETAIN_NEW.rawValue), nil)
    }

    func handleDisconnect(reasonCode: Int32) {
        let reason: String
        let error: MQTTError?
        if reasonCode == 0 {
            reason = "normal disconnection"
            error = nil
        } else if reasonCode >= 0x80 {
            let failure = MQTTError(
                reasonCode: reasonCode, context: "broker \(brokerName) disconnected us", code: .noConnection)
            reason = failure.message
            error = failure
        } else {
            let failure = MQTTError(libraryReturnCode: reasonCode, context: "connection to \(brokerName) ended")
            reason = failure.message
            error = failure
        }
        let event: MQTTConnectionEvent? = withLockBroadcasting { state in
            let wasConnected = state.isConnected
            state.isConnected = false
            if let error { state.lastConnectionError = error }
            if wasConnected { return .disconnected(reason: reason) }
            if state.attemptFailureReported {
                state.attemptFailureReported = false
                return nil
            }
            return .connectionFailed(reason: reason)
        }
        if let event { emit(event) }
    }

    func handlePublishAcknowledged(mid: Int32, reasonCode: Int32) {
        let succeeded = reasonCode < 0x80
        var reachedTarget = false
        let (waiter, callback) = withLock { state in
            if succeeded {
                state.acknowledgedCount &+= 1
                reachedTarget = state.acknowledgedCount == state.acknowledgementTarget
            }
            let callback = succeeded ? state.onAcknowledged : nil
            if let waiter = state.acknowledgementWaiters.removeValue(forKey: mid) {
                return (Optional(waiter), callback)
            }
            if state.publishesAwaitingMid > 0 {
                // Bounded: an entry is only needed for the microseconds between the broker's answer and
                // `mosquitto_publish` returning; anything older belongs to plain `publish` calls.
                if state.earlyAcknowledgements.count >= 4_096 { state.earlyAcknowledgements.removeAll() }
                state.earlyAcknowledgements[mid] = reasonCode
            }
            return (nil, callback)
        }
        if succeeded { packetsHandled.add(1, ordering: .relaxed) }
        if reachedTarget { withLockBroadcasting { _ in } }
        callback?(mid)
        waiter?.resume(returning: Self.acknowledgementResult(mid: mid, reasonCode: reasonCode))
    }

    func handleMessage(_ message: mosquitto_message) {
        let topic = message.topic.map { String(cString: $0) } ?? ""
        var payload: [UInt8] = []
        if let bytes = message.payload, message.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
        }
        receivedCount.add(1, ordering: .relaxed)
        packetsHandled.add(1, ordering: .relaxed)
        // The PUBACK of a QoS 1 message is at most queued at this point: this thread writes it to the socket
        // after the callback returns, so whatever `onMessage` stores survives a crash of the process
        // (proven by `pubackIsSentOnlyAfterOnMessageReturns`).
        onMessage(MQTTMessage(topic: topic, payload: payload, qos: Int(message.qos), retain: message.retain))
    }
}
