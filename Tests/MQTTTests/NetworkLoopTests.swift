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

/// Binds `descriptor` (a TCP socket) to 127.0.0.1 on a free port and listens; returns the port.
private func listenOnLoopback(_ descriptor: Int32, backlog: Int32) throws -> Int {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(descriptor, address, length) == 0 && listen(descriptor, backlog) == 0
                && getsockname(descriptor, address, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
    return Int(UInt16(bigEndian: address.sin_port))
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
            port = try listenOnLoopback(descriptor, backlog: 64)
            self.descriptor = descriptor
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

/// A broker that sends QoS 1 messages faster than it reads their PUBACKs must not make the client queue
/// acknowledgements without bound: the loop reads no more while the socket refuses the PUBACKs it has. It did
/// once: draining a 10-million backlog, libmosquitto held 250,000 unwritten PUBACKs (20 MB) at the peak.
@Suite("NetworkLoop under a broker that does not read")
struct NetworkLoopBackpressureTests {
    /// Accepts one connection, answers its CONNECT, then writes `count` QoS 1 PUBLISH packets without reading
    /// anything, until ``startReading()``. Its receive buffer is small, so unread PUBACKs fill it soon.
    final class FloodingBroker: Sendable {
        let port: Int
        private let listener: Int32
        private let connection = Mutex<Int32>(-1)
        private let reading = Mutex(false)

        init(count: Int) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var small: Int32 = 4_096
            setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            port = try listenOnLoopback(listener, backlog: 4)
            self.listener = listener
            Thread { [self] in serve(count: count) }.start()
        }

        private func serve(count: Int) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            connection.withLock { $0 = client }
            // CONNECT: whatever came first (one small packet); the CONNACK mosquitto 2.0 sends (MQTT v5, topic alias
            // maximum 10, receive maximum 20).
            var buffer = [UInt8](repeating: 0, count: 4_096)
            guard read(client, &buffer, buffer.count) > 0 else { return }
            let connack: [UInt8] = [0x20, 0x09, 0x00, 0x00, 0x06, 0x22, 0x00, 0x0A, 0x21, 0x00, 0x14]
            guard send(client, connack, connack.count, Int32(MSG_NOSIGNAL)) == connack.count else { return }
            Thread { [self] in
                // Reads (and drops) the PUBACKs once allowed to.
                while !reading.withLock({ $0 }) { usleep(10_000) }
                var drained = [UInt8](repeating: 0, count: 4_096)
                while read(client, &drained, drained.count) > 0 {}
            }.start()
            // PUBLISH, QoS 1, topic "t", packet id, no properties, one byte of payload: 9 bytes each.
            var packets: [UInt8] = []
            for index in 0..<count {
                let id = UInt16(index % 65_535 + 1)
                packets += [0x32, 0x07, 0x00, 0x01, 0x74, UInt8(id >> 8), UInt8(id & 0xFF), 0x00, 0x58]
            }
            var offset = 0
            while offset < packets.count {
                let sent = packets[offset...].withUnsafeBytes {
                    send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent <= 0 { return }
                offset += sent
            }
        }

        func startReading() { reading.withLock { $0 = true } }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            connection.withLock { if $0 >= 0 { shutdown($0, Int32(SHUT_RDWR)) } }
        }
    }

    /// The kernel takes about 750,000 PUBACKs (4 bytes each) into the socket buffers before it refuses more;
    /// without the back-pressure all 2,500,000 messages were read.
    @Test func theClientStopsReadingWhileItsAcknowledgementsCannotBeWritten() async throws {
        let count = 2_500_000
        let broker = try FloodingBroker(count: count)
        defer { broker.stop() }
        var configuration = MQTTConfiguration(clientID: "flooded-\(getpid())")
        configuration.port = broker.port
        let delivered = Mutex(0)
        let client = try MQTTClient(configuration: configuration) { _ in delivered.withLock { $0 += 1 } }
        defer { client.stop() }
        try client.start()
        // Until the count stops growing: the PUBACKs filled the socket and the client stopped reading.
        var last = -1
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(200))
            let now = delivered.withLock { $0 }
            if now == last && now > 0 { break }
            last = now
        }
        let whileBlocked = delivered.withLock { $0 }
        #expect(whileBlocked > 0)
        #expect(whileBlocked < count * 3 / 5, "\(whileBlocked) of \(count) read with their PUBACKs unwritten")
        // Once the broker reads, everything is delivered.
        broker.startReading()
        let all = await eventually(timeout: .seconds(30)) { delivered.withLock { $0 } == count }
        #expect(all, "\(delivered.withLock { $0 }) of \(count) delivered")
    }
}
