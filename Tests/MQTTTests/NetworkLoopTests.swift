import Foundation
import Synchronization
import Testing

@testable import MQTT

#if canImport(Glibc)
    import Glibc
#endif

@Suite("NetworkLoop reconnect backoff")
struct NetworkLoopTests {
    /// libmosquitto's exponential backoff, which the loop keeps: min × (attempts + 1)², capped at the maximum.
    @Test(arguments: [
        (1, 30, 0, 1), (1, 30, 1, 4), (1, 30, 2, 9), (1, 30, 4, 25), (1, 30, 5, 30), (1, 30, 1_000, 30),
        (2, 60, 0, 2), (2, 60, 3, 32), (2, 60, 4, 50), (2, 60, 5, 60),
        (5, 5, 0, 5), (5, 5, 7, 5),
        (1, 86_400, Int.max / 2, 86_400),
    ])
    func reconnectDelayGrowsAndStopsAtTheMaximum(minimum: Int, maximum: Int, attempts: Int, seconds: Int) {
        var configuration = MQTTConfiguration(clientID: "c")
        configuration.reconnectDelayMin = minimum
        configuration.reconnectDelayMax = maximum
        #expect(NetworkLoop.reconnectDelay(after: attempts, configuration) == seconds)
    }
}

/// A publish while disconnected wakes the network thread (to write it once connected); it must not cut the
/// reconnect backoff short. It did once: a publisher at 200 messages/s tried to reconnect 200 times a second,
/// won every race to a restarted broker and published before the subscribers' sessions were back.
@Suite("NetworkLoop while disconnected")
struct NetworkLoopDisconnectedTests {
    /// A TCP listener that accepts and at once closes every connection, counting them.
    final class ClosingListener: Sendable {
        let port: Int
        private let descriptor: Int32
        private let accepted = Mutex(0)

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    bind(descriptor, address, length) == 0 && listen(descriptor, 64) == 0
                        && getsockname(descriptor, address, &length) == 0
                }
            }
            guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
            self.descriptor = descriptor
            port = Int(UInt16(bigEndian: address.sin_port))
            let thread = Thread { [self] in
                while true {
                    let connection = accept(descriptor, nil, nil)
                    if connection < 0 { return }
                    accepted.withLock { $0 += 1 }
                    close(connection)
                }
            }
            thread.start()
        }

        var connections: Int { accepted.withLock { $0 } }

        func stop() {
            shutdown(descriptor, Int32(SHUT_RDWR))
            close(descriptor)
        }
    }

    @Test func publishesWhileDisconnectedDoNotHurryTheReconnects() async throws {
        let listener = try ClosingListener()
        defer { listener.stop() }
        var configuration = MQTTConfiguration(clientID: "hurry-\(getpid())")
        configuration.port = listener.port
        configuration.reconnectDelayMin = 2
        configuration.reconnectDelayMax = 2
        let client = try MQTTClient(configuration: configuration) { _ in }
        defer { client.stop() }
        try client.start()
        // 3 s of publishing at 100 messages/s: with a 2 s backoff, at most 3 connections (start, +2 s, +4 s).
        for index in 0..<300 {
            _ = try? client.publish("t", payload: [UInt8(index % 256)], qos: 1)
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(listener.connections >= 1)
        #expect(listener.connections <= 3, "\(listener.connections) connections in 3 s")
    }
}
