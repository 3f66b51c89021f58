import Foundation
import Logging
import ServiceTestSupport
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// A Unix datagram socket standing in for systemd's notification socket.
final class NotifySocket: @unchecked Sendable {
    // `descriptor` and `path` never change after init.
    let path: String
    private let descriptor: Int32

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent(TestStack.uniqueName("notify")).path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw HarnessError("bind \(path) failed: \(errno)") }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Every datagram that arrives within `seconds`.
    func receive(for seconds: Double) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, deadline.timeIntervalSinceNow * 1_000))
            guard poll(&poller, 1, remaining) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 { messages.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
        }
        return messages
    }
}

@Suite struct SystemdNotifierTests {
    @Test func doesNothingOutsideSystemd() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isActive)
        #expect(notifier.watchdogInterval == nil)
        #expect(!notifier.notify("READY=1"))
    }

    @Test func sendsDatagramsToTheNotifySocket() throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"])
        #expect(notifier.watchdogInterval == .seconds(2))
        #expect(notifier.notify("READY=1\nSTATUS=hello"))
        #expect(socket.receive(for: 0.2) == ["READY=1\nSTATUS=hello"])
    }

    @Test func watchdogMeantForAnotherProcessIsIgnored() {
        let notifier = SystemdNotifier(environment: ["WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"])
        #expect(notifier.watchdogInterval == nil)
    }
}

@Suite struct WatchdogTests {
    func pings(heartbeatBeating: Bool) async throws -> Int {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "200000"])
        let heartbeat = Heartbeat()
        let beating = Task {
            while heartbeatBeating && !Task.isCancelled {
                heartbeat.beat()
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        try await Task.sleep(for: .milliseconds(300))  // a heartbeat left alone is stale by now
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let feeding = Task { await Watchdog.feed(notifier, writer: heartbeat, logger: logger) }
        let received = await Blocking.runOrEmpty { socket.receive(for: 2) }
        feeding.cancel()
        beating.cancel()
        return received.filter { $0 == "WATCHDOG=1" }.count
    }

    @Test func livingWriterFeedsTheWatchdog() async throws {
        // Every 100 ms for 2 s: 20 when the machine is idle; a loaded 2-core machine delays some.
        #expect(try await pings(heartbeatBeating: true) >= 3)
    }

    @Test func stalledWriterStopsThePings() async throws {
        #expect(try await pings(heartbeatBeating: false) == 0)
    }
}

/// `outletd run` under a stand-in for systemd: ready once connected, watchdog pings while the
/// writer lives, stopping on SIGTERM.
@Suite(.serialized) struct SystemdDaemonTests {
    @Test func notifiesReadyFeedsTheWatchdogAndSaysStopping() async throws {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let socket = try NotifySocket()
        let daemon = try OutletdProcess.start(
            configuration, extraEnvironment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "1000000"])
        let first = await Blocking.runOrEmpty { socket.receive(for: 4) }
        #expect(first.contains { $0.hasPrefix("READY=1") }, "\(first)\n\(daemon.output)")
        #expect(first.filter { $0 == "WATCHDOG=1" }.count >= 2, "\(first)")
        daemon.signal(SIGTERM)
        let last = await Blocking.runOrEmpty { socket.receive(for: 2) }
        #expect(last.contains { $0.hasPrefix("STOPPING=1") }, "\(last)")
        #expect(try await daemon.waitForExit(timeout: 30) == 0)
    }
}

extension Blocking {
    /// `run` for bodies that cannot fail, off the cooperative pool.
    static func runOrEmpty(_ body: @escaping @Sendable () -> [String]) async -> [String] {
        (try? await run { body() }) ?? []
    }
}
