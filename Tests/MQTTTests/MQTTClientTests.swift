import Foundation
import Synchronization
import TestSupport
import Testing

@testable import MQTT

#if canImport(Glibc)
    import Glibc
#endif

@Suite("MQTTClient against a real mosquitto")
struct MQTTClientTests {
    @Test func roundTripKeepsPayloadBytesExact() async throws {
        try await withPublisherAndSubscriber("rt") { clients in
            let (prefix, publisher, collector) = (clients.prefix, clients.publisher, clients.collector)
            let payloads: [[UInt8]] = [
                [], [0], Array(0...255), Array("héllo".utf8),
                (0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) },
            ]
            for (index, payload) in payloads.enumerated() {
                try await publisher.publishAcknowledged("\(prefix)/data/\(index)", payload: payload, qos: 1)
            }
            #expect(await collector.waitFor(payloads.count, on: "\(prefix)/data/"))
            let received = collector.messages(on: "\(prefix)/data/")
            #expect(received.map(\.topic) == payloads.indices.map { "\(prefix)/data/\($0)" })
            #expect(received.map(\.payload.count) == payloads.map(\.count))
            let exact = received.map(\.payload) == payloads
            #expect(exact, "payload bytes differ")
            #expect(received.allSatisfy { $0.qos == 1 && !$0.retain })
            #expect(publisher.acknowledgedCount == UInt64(payloads.count))
            #expect(clients.subscriber.receivedCount >= UInt64(payloads.count))
        }
    }

    @Test func tenThousandQoS1MessagesArriveInOrder() async throws {
        let callbackAcks = Shared(0)
        try await withPublisherAndSubscriber(
            "bulk", beforeStart: { $0.onAcknowledged = { _ in callbackAcks.withLock { $0 += 1 } } }
        ) { clients in
            let (prefix, publisher, collector) = (clients.prefix, clients.publisher, clients.collector)
            let count = 10_000
            let started = ContinuousClock.now
            for index in 0..<count {
                try publisher.publish("\(prefix)/seq", payload: Array(String(index).utf8), qos: 1)
            }
            #expect(await collector.waitFor(count, on: "\(prefix)/seq", timeout: .seconds(120)))
            let received = ContinuousClock.now - started
            #expect(await eventually(timeout: .seconds(30)) { publisher.acknowledgedCount >= UInt64(count) })
            let acknowledged = ContinuousClock.now - started
            let numbers = collector.messages(on: "\(prefix)/seq").map {
                Int(String(decoding: $0.payload, as: UTF8.self))
            }
            #expect(numbers.count == count)
            let inOrder = numbers == (0..<count).map { Optional($0) }
            #expect(inOrder, "messages missing, duplicated or out of order")
            #expect(publisher.acknowledgedCount == UInt64(count))
            #expect(callbackAcks.value == count)
            print(
                "MEASURE 10k QoS 1 round trip: all received after \(received), all acknowledged after \(acknowledged)")
        }
    }

    /// `waitUntilAcknowledged` is what keeps a publisher's in-flight window bounded (`outletd simulate
    /// --window`): it returns as soon as the count is reached, and at the timeout when it is not.
    @Test func waitingForAcknowledgementsKeepsAnInFlightWindow() async throws {
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("window")
            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))

            let (count, window) = (5_000, UInt64(100))
            // Blocking waits belong on a thread of their own, not on the cooperative pool.
            let started = ContinuousClock.now
            let (largestInFlight, lateWait, finalCount) = try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(UInt64, Duration, UInt64), any Error>) in
                Thread.detachNewThread {
                    do {
                        var published: UInt64 = 0
                        var largest: UInt64 = 0
                        for index in 0..<count {
                            if published - publisher.acknowledgedCount >= window {
                                let target = published - window / 2
                                let reached = publisher.waitUntilAcknowledged(atLeast: target, timeout: .seconds(10))
                                guard reached >= target else { throw MQTTError(code: .timeout, message: "no acks") }
                            }
                            try publisher.publish("\(prefix)/n", payload: Array(String(index).utf8), qos: 1)
                            published += 1
                            largest = max(largest, published - publisher.acknowledgedCount)
                        }
                        let all = publisher.waitUntilAcknowledged(atLeast: published, timeout: .seconds(30))
                        // A count never reached: the wait ends at its timeout with what there is.
                        let started = ContinuousClock.now
                        let after = publisher.waitUntilAcknowledged(atLeast: published + 1, timeout: .milliseconds(300))
                        let waited = ContinuousClock.now - started
                        #expect(all == published)
                        #expect(after == published)
                        continuation.resume(returning: (largest, waited, all))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
            // Each wait ends when its acknowledgement arrives, not at its 10 s timeout (one such timeout
            // per half window would take minutes).
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(finalCount == UInt64(count))
            #expect(largestInFlight <= window)
            #expect(lateWait >= .milliseconds(290) && lateWait < .seconds(3))
        }
    }

    @Test func persistentSessionDeliversMessagesPublishedWhileAway() async throws {
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("away")
            let sessionConfiguration = try configuration(stack, clientID: TestStack.uniqueName("session"))
            let first = MessageCollector()
            let subscriber = try await startSubscriber(
                sessionConfiguration, filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: first)
            subscriber.stop()

            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))
            for index in 0..<20 {
                try await publisher.publishAcknowledged("\(prefix)/queued", payload: [UInt8(index)], qos: 1)
            }

            let second = MessageCollector()
            let resumed = try MQTTClient(configuration: sessionConfiguration, onMessage: second.onMessage)
            defer { resumed.stop() }
            let recorder = EventRecorder(resumed)
            resumed.setSubscriptions([("\(prefix)/#", 1)])
            try resumed.start()
            #expect(await second.waitFor(20, on: "\(prefix)/queued"))
            #expect(second.messages(on: "\(prefix)/queued").map(\.payload) == (0..<20).map { [UInt8($0)] })
            #expect(await eventually(timeout: .seconds(5)) { recorder.connectedCount == 1 })
            #expect(recorder.events.value.first == .connected(sessionPresent: true))
        }
    }

    /// libmosquitto sends CONNECT properties again on its automatic reconnects only when they were given to
    /// `mosquitto_connect_bind_v5`. Without the Session Expiry Interval on the reconnect, the broker would
    /// end the session at the next disconnect and the message below would be lost.
    @Test func sessionExpirySurvivesAutomaticReconnect() async throws {
        try await withBroker(exclusive: true) { stack in
            let prefix = TestStack.uniqueName("expiry")
            let sessionConfiguration = try configuration(stack, clientID: TestStack.uniqueName("session"))
            let first = MessageCollector()
            let subscriber = try await startSubscriber(
                sessionConfiguration, filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: first)
            let recorder = EventRecorder(subscriber)
            try stack.restartMosquitto(downFor: 0)
            #expect(await eventually(timeout: .seconds(15)) { recorder.connectedCount >= 1 && subscriber.isConnected })
            subscriber.stop()

            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))
            try await publisher.publishAcknowledged("\(prefix)/while-away", payload: Array("kept".utf8), qos: 1)

            let second = MessageCollector()
            let resumed = try MQTTClient(configuration: sessionConfiguration, onMessage: second.onMessage)
            defer { resumed.stop() }
            try resumed.start()
            #expect(await second.waitFor(1, on: "\(prefix)/while-away"))
            #expect(second.messages(on: "\(prefix)/while-away").first?.payload == Array("kept".utf8))
        }
    }

    @Test func reconnectsAndResubscribesAfterBrokerRestart() async throws {
        try await withBroker(exclusive: true) { stack in
            let prefix = TestStack.uniqueName("restart")
            // Clean start and no session expiry: the broker forgets our subscriptions, so receiving after the
            // restart proves that the client subscribed again by itself.
            var cleanConfiguration = try configuration(stack)
            cleanConfiguration.cleanStart = true
            cleanConfiguration.sessionExpiryInterval = 0
            let collector = MessageCollector()
            let subscriber = try await startSubscriber(
                cleanConfiguration, filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: collector)
            defer { subscriber.stop() }
            let recorder = EventRecorder(subscriber)

            try stack.restartMosquitto(downFor: 1)
            let brokerBack = ContinuousClock.now
            #expect(await eventually(timeout: .seconds(5)) { recorder.connectedCount >= 1 })
            let reconnectedAfter = ContinuousClock.now - brokerBack
            print("MEASURE reconnect after broker restart: \(reconnectedAfter) after the broker was back")
            let events = recorder.events.value
            #expect(events.first.map { if case .disconnected = $0 { true } else { false } } == true)
            #expect(events.contains(.connected(sessionPresent: false)))

            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))
            try await waitUntilSubscribed(subscriber, probeTopic: "\(prefix)/probe", collector: collector)
            try await publisher.publishAcknowledged("\(prefix)/after", payload: [42], qos: 1)
            #expect(await collector.waitFor(1, on: "\(prefix)/after"))
        }
    }

    @Test func connectsOnceTheBrokerAppears() async throws {
        let port = try freePort()
        var brokerConfiguration = MQTTConfiguration(clientID: TestStack.uniqueName("late"))
        brokerConfiguration.port = port
        let client = try MQTTClient(configuration: brokerConfiguration) { _ in }
        defer { client.stop() }
        let recorder = EventRecorder(client)
        try client.start()
        #expect(client.lastConnectionError?.code == .connectionRefused)
        #expect(client.lastConnectionError?.message.contains("Connection refused") == true)
        try await Task.sleep(for: .seconds(2))
        #expect(!client.isConnected)

        let broker = try ThrowawayBroker(port: port)
        defer { broker.stop() }
        #expect(await broker.waitUntilListening())
        let started = ContinuousClock.now
        try await client.waitUntilConnected(timeout: .seconds(20))
        print("MEASURE connect after late broker start: \(ContinuousClock.now - started)")
        #expect(
            await eventually(timeout: .seconds(2)) { recorder.events.value.last == .connected(sessionPresent: false) })
        let events = recorder.events.value
        #expect(events.first.map { if case .connectionFailed = $0 { true } else { false } } == true)
    }

    @Test func blockingOnMessageLosesNothing() async throws {
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("slow")
            var slowConfiguration = try configuration(stack)
            slowConfiguration.receiveMaximum = 2
            let collector = MessageCollector(delay: .milliseconds(200))
            let subscriber = try await startSubscriber(
                slowConfiguration, filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: collector)
            defer { subscriber.stop() }
            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))

            let count = 15
            let started = ContinuousClock.now
            for index in 0..<count {
                try publisher.publish("\(prefix)/work", payload: [UInt8(index)], qos: 1)
            }
            #expect(await collector.waitFor(count, on: "\(prefix)/work", timeout: .seconds(30)))
            let elapsed = ContinuousClock.now - started
            #expect(collector.messages(on: "\(prefix)/work").map(\.payload) == (0..<count).map { [UInt8($0)] })
            #expect(elapsed >= .milliseconds(200 * (count - 1)))
            #expect(await eventually(timeout: .seconds(5)) { publisher.acknowledgedCount == UInt64(count) })
        }
    }

    @Test func publishAcknowledgedWaitsForThePuback() async throws {
        let broker = try ThrowawayBroker(port: try freePort())
        defer { broker.stop() }
        #expect(await broker.waitUntilListening())
        var brokerConfiguration = MQTTConfiguration(clientID: TestStack.uniqueName("ack"))
        brokerConfiguration.port = broker.port
        let client = try MQTTClient(configuration: brokerConfiguration) { _ in }
        defer { client.stop() }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(10))
        try await client.publishAcknowledged("ack/first", payload: [1], qos: 1)
        #expect(client.acknowledgedCount == 1)
        try await client.publishAcknowledged("ack/qos0", payload: [0], qos: 0)
        #expect(client.acknowledgedCount == 2)

        broker.pause(true)
        let done = Shared(false)
        let pending = Task {
            try await client.publishAcknowledged("ack/second", payload: [2], qos: 1)
            done.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(!done.value, "returned without a PUBACK from the frozen broker")
        #expect(client.acknowledgedCount == 2)
        broker.pause(false)
        try await pending.value
        #expect(done.value)
        #expect(client.acknowledgedCount == 3)
    }

    /// The daemon's durability rests on this: a QoS 1 message is acknowledged only after `onMessage` returned.
    /// The callback "crashes" the connection before returning; the broker must then deliver the message again.
    @Test func pubackIsSentOnlyAfterOnMessageReturns() async throws {
        signal(SIGPIPE, SIG_IGN)
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("puback")
            let collector = MessageCollector()
            let clientBox = Shared<MQTTClient?>(nil)
            let crashTopic = "\(prefix)/crash"
            let deliveries = Shared(0)
            let client = try MQTTClient(configuration: configuration(stack)) { message in
                collector.onMessage(message)
                guard message.topic == crashTopic else { return }
                if deliveries.withLock({
                    $0 += 1
                    return $0
                }) == 1, let client = clientBox.value {
                    shutdown(client.socketForTesting(), Int32(SHUT_RDWR))
                }
            }
            clientBox.withLock { $0 = client }
            defer {
                clientBox.withLock { $0 = nil }
                client.stop()
            }
            client.setSubscriptions([("\(prefix)/#", 1)])
            try client.start()
            try await client.waitUntilConnected(timeout: .seconds(10))
            try await waitUntilSubscribed(client, probeTopic: "\(prefix)/probe", collector: collector)

            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))
            try await publisher.publishAcknowledged(crashTopic, payload: [7], qos: 1)
            #expect(await eventually(timeout: .seconds(15)) { deliveries.value >= 2 })
            #expect(collector.messages(on: crashTopic).map(\.payload) == [[7], [7]])
        }
    }

    /// A receiver that stores a read's messages in `onReadEnd` relies on this: a connection lost while
    /// `onReadEnd` runs means no PUBACK of that read left, so the broker delivers the message again.
    @Test func pubackIsSentOnlyAfterOnReadEndReturns() async throws {
        signal(SIGPIPE, SIG_IGN)
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("readend")
            let collector = MessageCollector()
            let clientBox = Shared<MQTTClient?>(nil)
            let crashTopic = "\(prefix)/crash"
            let deliveries = Shared(0)
            let crashed = Shared(false)
            let client = try MQTTClient(
                configuration: configuration(stack),
                onMessage: { message in
                    collector.onMessage(message)
                    if message.topic == crashTopic { deliveries.withLock { $0 += 1 } }
                },
                onReadEnd: {
                    // The first read that delivered the message ends with the connection lost.
                    guard deliveries.value == 1, !crashed.value, let client = clientBox.value else { return }
                    crashed.withLock { $0 = true }
                    shutdown(client.socketForTesting(), Int32(SHUT_RDWR))
                })
            clientBox.withLock { $0 = client }
            defer {
                clientBox.withLock { $0 = nil }
                client.stop()
            }
            client.setSubscriptions([("\(prefix)/#", 1)])
            try client.start()
            try await client.waitUntilConnected(timeout: .seconds(10))
            try await waitUntilSubscribed(client, probeTopic: "\(prefix)/probe", collector: collector)

            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))
            try await publisher.publishAcknowledged(crashTopic, payload: [9], qos: 1)
            #expect(await eventually(timeout: .seconds(15)) { deliveries.value >= 2 })
            #expect(crashed.value)
            #expect(collector.messages(on: crashTopic).map(\.payload) == [[9], [9]])
        }
    }

    @Test func unknownHostReportsTheLookupError() async throws {
        var badConfiguration = MQTTConfiguration(clientID: TestStack.uniqueName("dns"))
        badConfiguration.host = "no-such-host.invalid"
        let client = try MQTTClient(configuration: badConfiguration) { _ in }
        defer { client.stop() }
        let recorder = EventRecorder(client)
        try client.start()
        let error = try #require(client.lastConnectionError)
        #expect(error.code == .hostNotFound)
        #expect(error.libraryCode == 15)  // MOSQ_ERR_EAI
        #expect(error.message == "connecting to no-such-host.invalid:1883: Lookup error.")
        do {
            try await client.waitUntilConnected(timeout: .milliseconds(300))
            Issue.record("connected to a host that does not exist")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.message.contains("Lookup error."))
        }
        #expect(await eventually(timeout: .seconds(2)) { !recorder.events.value.isEmpty })
        #expect(recorder.events.value.first == .connectionFailed(reason: error.message))
    }

    @Test func stopIsQuickIdempotentAndFinal() async throws {
        var downConfiguration = MQTTConfiguration(clientID: TestStack.uniqueName("stop"))
        downConfiguration.port = try freePort()
        downConfiguration.reconnectDelayMin = 30
        downConfiguration.reconnectDelayMax = 30
        let client = try MQTTClient(configuration: downConfiguration) { _ in }
        let stream = client.events
        let ended = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        do {
            try await client.waitUntilConnected(timeout: .seconds(1))
            Issue.record("waiting before start must fail")
        } catch {
            #expect(error.code == .notStarted)
        }
        try client.start()
        try client.start()  // no-op while running
        try await Task.sleep(for: .milliseconds(300))  // the network thread now sleeps in its 30 s backoff
        let started = ContinuousClock.now
        client.stop()
        #expect(ContinuousClock.now - started < .seconds(5))
        client.stop()
        #expect(await ended.value == 1)  // the failed first attempt, then the stream ended
        #expect(throws: MQTTError.self) { try client.start() }
        #expect {
            try client.publish("a/b", payload: [1])
        } throws: { error in
            (error as? MQTTError)?.code == .stopped
        }
        do {
            try await client.waitUntilConnected(timeout: .seconds(1))
            Issue.record("waiting after stop must fail")
        } catch {
            #expect(error.code == .stopped)
        }
        for await _ in client.events { Issue.record("a stopped client's stream must be finished") }
    }

    @Test func rejectsBadArguments() throws {
        var bad = MQTTConfiguration(clientID: "")
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: bad) { _ in } }
        bad = MQTTConfiguration(clientID: "x")
        bad.keepAliveSeconds = 2
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: bad) { _ in } }
        bad = MQTTConfiguration(clientID: "x")
        bad.receiveMaximum = 0
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: bad) { _ in } }
        let client = try MQTTClient(configuration: MQTTConfiguration(clientID: TestStack.uniqueName("arg"))) { _ in }
        #expect {
            try client.publish("a/b", payload: [], qos: 3)
        } throws: { error in
            (error as? MQTTError)?.code == .invalidArgument
        }
        #expect {
            try client.publish("a/+", payload: [], qos: 1)
        } throws: { error in
            let error = error as? MQTTError
            return error?.code == .invalidArgument && error?.libraryCode == 3
        }
    }

    @Test func blockingWaitWorksFromAThread() async throws {
        try await withBroker { stack in
            let client = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { client.stop() }
            #expect(!client.waitUntilConnectedBlocking(timeout: .milliseconds(50)))
            try client.start()
            let connected = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(returning: client.waitUntilConnectedBlocking(timeout: .seconds(10)))
                }
            }
            #expect(connected)
            #expect(client.isConnected)
        }
    }
}
