import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy between a PostgreSQL client and server on 127.0.0.1 that can lose the answer to a `COMMIT`.
///
/// It forwards bytes both ways unchanged and reads the client's side as PostgreSQL frontend messages. Once
/// ``armCut()`` was called, the next simple-query `COMMIT` sent on a connection that has run a `COPY` (the
/// batch writer's) is forwarded to the server just after the client's socket is shut down: the server
/// commits, the client sees its connection lost without an answer. The server's side is closed a second
/// later, after it has processed the `COMMIT`. Each arming cuts one connection; later connections pass.
public final class CommitCuttingProxy: @unchecked Sendable {
    /// The port clients connect to.
    public let port: Int
    private let targetPort: Int
    private let listener: Int32
    // Guards `armed`, `cuts` and `stopped` (threads of every proxied connection read and write them).
    private let lock = NSLock()
    private var armed = false
    private var cutCount = 0
    private var stopped = false

    /// Listens on a free port of 127.0.0.1 and forwards to `targetPort` there.
    public init(targetPort: Int) throws {
        self.targetPort = targetPort
        port = try freePort()
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestStackError(message: "socket failed") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard bound, listen(listener, 64) == 0 else {
            close(listener)
            throw TestStackError(message: "proxy cannot listen on port \(port)")
        }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "commit-cutting-proxy"
        thread.start()
    }

    /// `url` with its port replaced by the proxy's.
    public func url(for url: String) -> String {
        url.replacingOccurrences(of: "127.0.0.1:\(targetPort)", with: "127.0.0.1:\(port)")
    }

    /// Cut the next `COMMIT` of a connection that ran a `COPY`.
    public func armCut() { lock.withLock { armed = true } }

    /// How many connections were cut so far.
    public var cuts: Int { lock.withLock { cutCount } }

    /// Stops accepting; connections in progress end when either side closes.
    public func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if lock.withLock({ stopped }) { return }
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard server >= 0, connected else {
                close(client)
                if server >= 0 { close(server) }
                continue
            }
            let sockets = SocketPair(client: client, server: server)
            let upstream = Thread { [self] in
                forwardFrontend(from: client, to: server)
                sockets.finish()
            }
            upstream.start()
            let downstream = Thread {
                Self.pump(from: server, to: client)
                sockets.finish()
            }
            downstream.start()
        }
    }

    /// Server → client, byte for byte, until either side ends.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count <= 0 || !sendAll(buffer[0..<count], to: destination) { return }
        }
    }

    private static func sendAll(_ bytes: ArraySlice<UInt8>, to socket: Int32) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Client → server, message by message: the untyped start-up messages (SSL/GSS requests, the startup
    /// packet), then `type, length, body`.
    private func forwardFrontend(from client: Int32, to server: Int32) {
        var pending: [UInt8] = []
        var started = false
        var ranCopy = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func bigEndian32(_ bytes: ArraySlice<UInt8>) -> Int {
            bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return }
            pending.append(contentsOf: buffer[0..<count])
            while true {
                let headerLength = started ? 5 : 4
                guard pending.count >= headerLength else { break }
                let length = bigEndian32(pending[(started ? 1 : 0)...])
                let total = (started ? 1 : 0) + length
                guard length >= 4, pending.count >= total else { break }
                let message = Array(pending[0..<total])
                pending.removeFirst(total)
                if !started {
                    // SSLRequest 80877103 and GSSENCRequest 80877104 precede the startup packet.
                    let code = message.count >= 8 ? bigEndian32(message[4...]) : 0
                    if code != 80_877_103 && code != 80_877_104 { started = true }
                    guard Self.sendAll(message[...], to: server) else { return }
                    continue
                }
                var cutNow = false
                if message[0] == UInt8(ascii: "Q") {
                    let text = String(decoding: message[5...].prefix { $0 != 0 }, as: UTF8.self)
                        .trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
                    if text.contains("FROM STDIN") { ranCopy = true }
                    if text == "COMMIT" && ranCopy {
                        cutNow = lock.withLock {
                            guard armed else { return false }
                            armed = false
                            cutCount += 1
                            return true
                        }
                    }
                }
                if cutNow {
                    // The client loses its connection before the COMMIT goes on, so no answer can reach it
                    // however the threads are scheduled; the server still gets the COMMIT and commits.
                    shutdown(client, Int32(SHUT_RDWR))
                    _ = Self.sendAll(message[...], to: server)
                    Thread.sleep(forTimeInterval: 1)
                    return
                }
                guard Self.sendAll(message[...], to: server) else { return }
            }
        }
    }
}

/// The two sockets of one proxied connection: the first of its two threads to end shuts both down (which
/// ends the other's `recv`), the second closes them, so no descriptor is closed while still in use.
private final class SocketPair: @unchecked Sendable {
    private let client: Int32
    private let server: Int32
    // Guards `finished`.
    private let lock = NSLock()
    private var finished = 0

    init(client: Int32, server: Int32) {
        self.client = client
        self.server = server
    }

    func finish() {
        let count = lock.withLock {
            finished += 1
            return finished
        }
        if count == 1 {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        } else {
            close(client)
            close(server)
        }
    }
}
