import Foundation
import MQTT
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A value shared between a test and libmosquitto's network thread.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    var value: Value {
        mutex.withLock { $0 }
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Collects the messages a client receives.
final class MessageCollector: Sendable {
    let messages = Shared<[MQTTMessage]>([])
    /// Optional work done inside `onMessage` (e.g. sleeping, to test backpressure).
    let delay: Duration?

    init(delay: Duration? = nil) {
        self.delay = delay
    }

    var onMessage: @Sendable (MQTTMessage) -> Void {
        { [self] message in
            if let delay {
                let nanoseconds =
                    delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
                usleep(UInt32(nanoseconds / 1_000))
            }
            messages.withLock { $0.append(message) }
        }
    }

    var count: Int { messages.value.count }

    func messages(on topicPrefix: String) -> [MQTTMessage] {
        messages.value.filter { $0.topic.hasPrefix(topicPrefix) }
    }

    /// Waits until `count` messages whose topic starts with `topicPrefix` arrived.
    func waitFor(_ count: Int, on topicPrefix: String = "", timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(timeout: timeout) { messages(on: topicPrefix).count >= count }
    }
}

/// Records a client's connection events.
final class EventRecorder: Sendable {
    let events = Shared<[MQTTConnectionEvent]>([])
    private let task: Task<Void, Never>

    init(_ client: MQTTClient) {
        let stream = client.events
        let events = self.events
        task = Task {
            for await event in stream {
                events.withLock { $0.append(event) }
            }
        }
    }

    deinit {
        task.cancel()
    }

    var connectedCount: Int {
        events.value.filter { if case .connected = $0 { true } else { false } }.count
    }
}

/// Runs `body` with the shared test stack, or — for a test that restarts the broker — with a stack of its own,
/// so that tests running in parallel (in every test target) never see the shared broker go away.
func withBroker(exclusive: Bool = false, _ body: (TestStack) async throws -> Void) async throws {
    guard exclusive else {
        try await body(TestStack.shared())
        return
    }
    let stack = try TestStack.startPrivate()
    defer { stack.stop() }
    try await body(stack)
}

/// A configuration for the shared test broker with a unique client id.
func configuration(_ stack: TestStack, clientID: String? = nil) throws -> MQTTConfiguration {
    try MQTTConfiguration(url: stack.mqttURL, clientID: clientID ?? TestStack.uniqueName("c"))
}

/// Starts a client subscribed to `filter` and waits until the subscription is active (a probe published
/// under `probeTopic` came back).
func startSubscriber(
    _ configuration: MQTTConfiguration, filter: String, probeTopic: String, collector: MessageCollector
) async throws -> MQTTClient {
    let client = try MQTTClient(configuration: configuration, onMessage: collector.onMessage)
    client.setSubscriptions([(filter, 1)])
    try client.start()
    try await client.waitUntilConnected(timeout: .seconds(10))
    try await waitUntilSubscribed(client, probeTopic: probeTopic, collector: collector)
    return client
}

/// What ``withPublisherAndSubscriber(_:_:)`` gives its body.
struct PublisherAndSubscriber {
    /// A topic prefix of the test's own.
    let prefix: String
    let publisher: MQTTClient
    /// Subscribed to `<prefix>/#`, collecting into `collector`.
    let subscriber: MQTTClient
    let collector: MessageCollector
}

/// Runs `body` on the shared test broker with a subscriber to `<prefix>/#` collecting what arrives and a connected
/// publisher, `prefix` being a topic prefix of this test's own (made from `name`); both stop after `body`.
/// `beforeStart` sets up the publisher before it connects (its callbacks).
func withPublisherAndSubscriber(
    _ name: String, beforeStart: (MQTTClient) -> Void = { _ in },
    _ body: (PublisherAndSubscriber) async throws -> Void
) async throws {
    try await withBroker { stack in
        let prefix = TestStack.uniqueName(name)
        let collector = MessageCollector()
        let subscriber = try await startSubscriber(
            configuration(stack), filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: collector)
        defer { subscriber.stop() }
        let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
        defer { publisher.stop() }
        beforeStart(publisher)
        try publisher.start()
        try await publisher.waitUntilConnected(timeout: .seconds(10))
        try await body(
            PublisherAndSubscriber(prefix: prefix, publisher: publisher, subscriber: subscriber, collector: collector))
    }
}

/// Publishes probes to `probeTopic` until one arrives (the subscription is then active).
func waitUntilSubscribed(_ client: MQTTClient, probeTopic: String, collector: MessageCollector) async throws {
    let before = collector.messages(on: probeTopic).count
    for _ in 0..<100 {
        try client.publish(probeTopic, payload: Array("probe".utf8), qos: 0)
        if await collector.waitFor(before + 1, on: probeTopic, timeout: .milliseconds(100)) { return }
    }
    Issue.record("subscription never became active")
}

struct HelperError: Error {
    var message: String
}

/// A mosquitto of one test's own on a given port (no persistence), killed by ``stop()``.
final class ThrowawayBroker {
    let port: Int
    private let child: BackgroundProcess
    private let directory: String

    init(port: Int) throws {
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(TestStack.uniqueName("mosq")).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/mosquitto.conf"
        var text = "listener \(port) 127.0.0.1\nallow_anonymous true\n"
        if getuid() == 0 { text = "user root\n" + text }
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        child = try BackgroundProcess(
            ["mosquitto", "-c", config], environment: ProcessInfo.processInfo.environment,
            logPath: "\(directory)/mosquitto.log")
    }

    /// Waits until the port accepts connections.
    func waitUntilListening() async -> Bool {
        await eventually(timeout: .seconds(10)) { Self.canConnect(port: port) }
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Freezes (SIGSTOP) or resumes (SIGCONT) the broker: connections stay open but nothing is answered.
    func pause(_ paused: Bool) {
        child.signal(paused ? SIGSTOP : SIGCONT)
    }

    /// Kills the broker and waits for it.
    func stop() {
        child.signal(SIGCONT)
        child.killAndWait()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
