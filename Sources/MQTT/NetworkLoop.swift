import CMosquitto
import CSocketBuffers
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An ``MQTTClient``'s network thread: it reads, writes and keeps the connection alive, and reconnects with
/// a growing delay, in place of libmosquitto's own thread (`mosquitto_loop_start`).
///
/// Why not libmosquitto's: its loop (`mosquitto_loop`) handles one incoming packet per `pselect`, reads a
/// wake-up byte from an internal socket pair for every packet queued meanwhile, and writes each PUBACK as its
/// own TCP segment. Draining a backlog, that made about nine system calls and one loopback transmission per
/// reading, most of outletd's CPU (docs/PERFORMANCE.md, "Where outletd's CPU goes"). This loop reads every packet
/// the socket holds (up to ``burst``), then writes what the burst queued (its PUBACKs) with one write(2) (gathered
/// beneath libmosquitto, `CSocketBuffers`), then polls again. While the socket refuses PUBACKs (its send
/// buffer is full), it reads nothing more until they are written: the broker's pace of reading
/// acknowledgements bounds how many wait in memory.
///
/// Delivery is unchanged. The client is in `mosquitto_threaded_set` mode, where libmosquitto only *queues* a
/// QoS 1 message's PUBACK (it does so before calling the message callback); this loop writes queued packets
/// only after `mosquitto_loop_read` returned and the client's `onReadEnd` ran, so a PUBACK never leaves before
/// its message callback, and the read's `onReadEnd`, finished.
final class NetworkLoop: Sendable {
    /// Incoming packets handled before the queued PUBACKs are written.
    static let burst = 1_024
    /// A burst of fewer packets than this is live traffic trickling in: the loop naps ``gatherMilliseconds``
    /// before it polls again, so that the next read, spool append, PUBACK write and wake-up of the writer each
    /// serve the packets of a millisecond instead of two or three (at 20,000 readings/s, 6,900 wake-ups a second
    /// of three readings each were half of outletd's CPU). A wake-up (a publish, a stop) ends the nap.
    static let gatherBelow = 64
    static let gatherMilliseconds = 1
    /// How long a stopping loop keeps trying to write its DISCONNECT.
    static let stopFlushTimeout: Duration = .seconds(2)

    private let handle: MosquittoHandle
    private let state: ClientState
    /// An eventfd: written by ``wake()``, polled beside the socket.
    private let wakeDescriptor: Int32
    private let finished = DispatchSemaphore(value: 0)

    init(handle: MosquittoHandle, state: ClientState) throws(MQTTError) {
        let descriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard descriptor >= 0 else {
            throw MQTTError(code: .library, message: "creating an eventfd: \(String(cString: strerror(errno)))")
        }
        self.handle = handle
        self.state = state
        self.wakeDescriptor = descriptor
    }

    deinit {
        close(wakeDescriptor)
    }

    /// Starts the thread. Call once.
    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "mqtt network"
        thread.start()
    }

    /// Interrupts the thread's wait: something was queued for writing, or the client is stopping.
    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeDescriptor, &one, 8)
    }

    /// Waits until the thread (started with ``start()``) has ended.
    func join() {
        finished.wait()
    }

    // MARK: The loop

    private var isStopping: Bool {
        state.withLock { $0.phase == .stopping || $0.phase == .stopped }
    }

    private func run() {
        defer { forgetSocket() }
        var attempts = 0
        var connections = state.withLock { $0.connections }
        var stopDeadline: ContinuousClock.Instant?
        var writeBacklogged = false
        var trackedSocket: Int32 = -1
        while true {
            if stopDeadline == nil && isStopping { stopDeadline = .now + Self.stopFlushTimeout }
            let socket = mosquitto_socket(handle.pointer)
            // libmosquitto's reads of the socket come from a buffer, and its writes are gathered (CSocketBuffers):
            // a few read(2) calls per burst instead of three or four per packet, one write(2) per burst instead
            // of one per PUBACK. Forgotten with the connection, before its descriptor can be reused.
            if socket != trackedSocket {
                if socket >= 0 { track(socket) } else { forgetSocket() }
                trackedSocket = socket
            }
            guard socket >= 0 else {
                if stopDeadline != nil { return }
                // Not connected (the broker went away, or was not there at start): wait, then try again.
                let seen = state.withLock { $0.connections }
                if seen != connections {
                    connections = seen
                    attempts = 0
                }
                // Only a stop cuts the wait short: a publish while disconnected wakes the loop too, and must
                // not turn the backoff into a reconnect per message.
                let retryAt = ContinuousClock.now + .seconds(Self.reconnectDelay(after: attempts, state.configuration))
                while !isStopping, case let remaining = retryAt - .now, remaining > .zero {
                    waitForWake(
                        milliseconds: Int(
                            remaining.components.seconds * 1_000 + remaining.components.attoseconds
                                / 1_000_000_000_000_000) + 1)
                }
                if isStopping { return }
                attempts += 1
                // Failures surface as the next attempt's wait; a refused CONNACK through the connect callback.
                _ = mosquitto_reconnect(handle.pointer)
                continue
            }
            if let stopDeadline, !hasWritesWaiting || .now >= stopDeadline { return }
            // PUBACKs the socket did not take at the last write (the broker reads them slower than it sends):
            // nothing more is read until they are written, or libmosquitto's queue of them grows without
            // bound (250,000 queued, 20 MB, draining a backlog: docs/PERFORMANCE.md, "No reading while PUBACKs
            // wait").
            let acknowledging = writeBacklogged && hasWritesWaiting
            // Bytes already buffered are read first: the socket may hold nothing more.
            guard
                let events = acknowledging
                    ? poll(socket: socket, reading: false)
                    : outletd_socket_reads_buffered() > 0 ? Int16(POLLIN) : poll(socket: socket)
            else {
                continue
            }
            // Readable, closed, failed, or writable (a TLS handshake in progress continues in the read call).
            let reads = acknowledging ? events & Int16(POLLERR | POLLHUP) != 0 : events != 0
            let handled = reads ? readBurst() : 0
            // Before any PUBACK of this read is written.
            if reads, let onReadEnd = state.onReadEnd { onReadEnd() }
            guard mosquitto_socket(handle.pointer) >= 0 else { continue }
            if hasWritesWaiting { write() }
            // Still queued after the write: the socket's send buffer is full. (Not while connecting: a TLS
            // handshake may want to write and continue only in the read call.)
            writeBacklogged =
                hasWritesWaiting && mosquitto_socket(handle.pointer) >= 0 && state.withLock { $0.isConnected }
            if mosquitto_socket(handle.pointer) >= 0 {
                // Keepalive: PINGREQ when due, and a connection whose PINGRESP is overdue is closed.
                _ = mosquitto_loop_misc(handle.pointer)
            }
            if handled > 0 && handled < Self.gatherBelow && stopDeadline == nil && !writeBacklogged {
                waitForWake(milliseconds: Self.gatherMilliseconds)
            }
        }
    }

    /// Waits until the socket is readable (unless `reading` is false) or writable while something waits to be
    /// written, the loop is woken, or a second passed (keepalive housekeeping). Returns the socket's events (0 when woken or timed
    /// out: then only what was queued is written), nil when interrupted by a signal.
    private func poll(socket: Int32, reading: Bool = true) -> Int16? {
        var descriptors = [
            pollfd(
                fd: socket,
                events: (reading ? Int16(POLLIN) : 0) | (hasWritesWaiting ? Int16(POLLOUT) : 0),
                revents: 0),
            pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        guard Glibc.poll(&descriptors, 2, 1_000) >= 0 else { return nil }
        if descriptors[1].revents != 0 { drainWake() }
        return descriptors[0].revents
    }

    /// Reads and handles incoming packets until a read handles none (the socket ran dry, or holds only part
    /// of a packet) or ``burst`` were handled. A lost connection is closed and reported by libmosquitto
    /// itself (the disconnect callback), which leaves `mosquitto_socket` at -1.
    ///
    /// "Handled" is counted as messages delivered plus publishes acknowledged, not by `errno`, which
    /// libmosquitto's internal calls may leave set on success. Any other packet (PINGRESP, SUBACK…) only ends
    /// a burst early.
    /// Returns the packets handled.
    private func readBurst() -> Int {
        var handled = 0
        var before = packetsHandled
        while handled < Self.burst {
            let returnCode = mosquitto_loop_read(handle.pointer, 1)
            let after = packetsHandled
            if returnCode != MOSQ_ERR_SUCCESS.rawValue || after == before || mosquitto_socket(handle.pointer) < 0 {
                break
            }
            handled += 1
            before = after
        }
        return handled
    }

    private var packetsHandled: UInt64 {
        state.packetsHandled.load(ordering: .relaxed)
    }

    /// Reads of `socket` buffered, its writes gathered, and libmosquitto's wake-up writes dropped: nothing reads
    /// them (CSocketBuffers).
    private func track(_ socket: Int32) {
        outletd_socket_reads_track(socket)
        outletd_socket_writes_track(socket)
        outletd_socket_writes_drop_wakeups(
            outletd_mosquitto_wakeup_descriptor(UnsafeRawPointer(handle.pointer), socket))
    }

    /// What is buffered or gathered for the connection that went away is dropped, before its descriptor can be
    /// reused.
    private func forgetSocket() {
        outletd_socket_reads_forget()
        outletd_socket_writes_forget()
    }

    /// Whether anything waits to be written: packets libmosquitto queued, or bytes gathered that the socket
    /// did not take yet.
    private var hasWritesWaiting: Bool {
        mosquitto_want_write(handle.pointer) || outletd_socket_writes_pending() > 0
    }

    /// Writes what is queued: libmosquitto's packets are gathered, then sent with one write(2) (more only if the
    /// socket takes part of them). A failed socket is libmosquitto's to notice, at its next read.
    private func write() {
        outletd_socket_writes_gather_begin()
        _ = mosquitto_loop_write(handle.pointer, 1)
        outletd_socket_writes_gather_end()
        _ = outletd_socket_writes_flush()
    }

    private func drainWake() {
        var count: UInt64 = 0
        _ = Glibc.read(wakeDescriptor, &count, 8)
    }

    private func waitForWake(milliseconds: Int) {
        var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
        if Glibc.poll(&descriptor, 1, Int32(clamping: milliseconds)) > 0 { drainWake() }
    }

    /// Seconds before the next reconnect attempt, after `attempts` since the last successful connection:
    /// libmosquitto's exponential backoff, min × (attempts + 1)², capped at the maximum.
    static func reconnectDelay(after attempts: Int, _ configuration: MQTTConfiguration) -> Int {
        let factor = (attempts + 1).multipliedReportingOverflow(by: attempts + 1)
        let delay = configuration.reconnectDelayMin.multipliedReportingOverflow(by: factor.partialValue)
        if factor.overflow || delay.overflow { return configuration.reconnectDelayMax }
        return min(delay.partialValue, configuration.reconnectDelayMax)
    }
}
