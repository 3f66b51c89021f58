import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The sd_notify protocol, without libsystemd: datagrams such as `READY=1` or `WATCHDOG=1` to the
/// Unix socket systemd names in `NOTIFY_SOCKET` (`Type=notify` units). Outside systemd
/// (`NOTIFY_SOCKET` unset) every call does nothing.
public struct SystemdNotifier: Sendable {
    /// The socket path; a leading `@` is Linux's abstract namespace.
    public let socketPath: String?
    /// The watchdog interval systemd expects pings within (`WATCHDOG_USEC`), when it watches us.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        let forThisProcess = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if forThisProcess, let microseconds = environment["WATCHDOG_USEC"].flatMap(Int64.init), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds)
        } else {
            watchdogInterval = nil
        }
    }

    /// Whether systemd listens.
    public var isActive: Bool { socketPath != nil }

    /// Sends one notification (`READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1`, several joined by
    /// newlines). Returns false when it could not be sent (or nobody listens).
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { bytes in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        return sent == message.count
    }
}

/// When a pipeline thread last showed progress; the watchdog pings systemd only while it is recent.
public final class Heartbeat: Sendable {
    private let last = Mutex(ContinuousClock.now)

    public init() {}

    /// Called by the thread on every turn of its loop (at least every half second when idle).
    public func beat() {
        last.withLock { $0 = ContinuousClock.now }
    }

    /// Sleeps `seconds` in half-second slices, beating: waiting (for the database, a retry) is not a stall.
    public func sleepBeating(seconds: Double) {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            beat()
            Thread.sleep(forTimeInterval: min(0.5, max(0, until.timeIntervalSinceNow)))
        }
    }

    /// Time since the last beat.
    public var age: Duration {
        ContinuousClock.now - last.withLock { $0 }
    }
}
