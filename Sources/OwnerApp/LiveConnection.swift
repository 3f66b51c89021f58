import Glibc
import Hummingbird
import NIOCore
import Synchronization

/// A live stream's connection as its route writes to it. A client that does not read fills the kernel's buffers,
/// and then a write waits for it for ever; so each write here waits at most `writeTimeout`, and a stream the hub
/// ended (``LiveHub``'s end hook, ``streamEnded()``) has `endGrace` for its response to end. Past either, the
/// connection is reset (`SO_LINGER` 0, then closed): what the client has not taken is dropped at once instead of
/// being held by the kernel, the waiting write fails, and the stream's place, held as long as its connection, is
/// free.
final class LiveConnection: Sendable {
    let channel: any Channel
    let writeTimeout: TimeAmount
    let endGrace: TimeAmount
    let metrics: AppMetrics
    private let responseEnded = Atomic<Bool>(false)

    init(channel: any Channel, settings: LiveHub.Settings, metrics: AppMetrics) {
        self.channel = channel
        writeTimeout = .nanoseconds(Int64(settings.writeTimeoutSeconds * 1e9))
        endGrace = .nanoseconds(Int64(settings.endGraceSeconds * 1e9))
        self.metrics = metrics
    }

    /// Writes `buffer`, resetting the connection when the write has not gone through within `writeTimeout`.
    func write(_ buffer: ByteBuffer, to writer: inout any ResponseBodyWriter) async throws {
        let timer = resetting(in: writeTimeout, reason: "live_write_timeout")
        defer { timer.cancel() }
        try await writer.write(buffer)
    }

    /// Ends the response (its last chunk), within `writeTimeout` as a write.
    func finish(_ writer: inout any ResponseBodyWriter) async throws {
        let timer = resetting(in: writeTimeout, reason: "live_write_timeout")
        defer { timer.cancel() }
        try await writer.finish(nil)
    }

    /// The response has ended (or failed): nothing resets the connection for it any more.
    func responseDidEnd() {
        responseEnded.store(true, ordering: .relaxed)
    }

    /// The hub ended the stream: the connection is reset unless its response has ended `endGrace` from now.
    func streamEnded() {
        _ = resetting(in: endGrace, reason: "live_ended_unread")
    }

    private func resetting(in delay: TimeAmount, reason: String) -> Scheduled<Void> {
        channel.eventLoop.scheduleTask(in: delay) { [self] in
            guard !responseEnded.load(ordering: .relaxed) else { return }
            metrics.connectionClosed(reason)
            Self.reset(channel)
        }
    }

    /// Drops what the connection has not sent (`SO_LINGER` 0) and closes it: the peer sees a reset.
    static func reset(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}
