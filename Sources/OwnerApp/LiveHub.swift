import Foundation
import Logging
import NIOCore
import Runtime
import Storage

/// The open pages' live values (`GET /api/v1/live`, server-sent events): one stream per open page, and every
/// `app.live_interval_seconds` one statement per `readChunk` (100) open sessions that reads their owners' outlets
/// (``OwnerStore/liveOutlets(sessions:)``), instead of one poll per page every 3 s. Chunks keep each read short,
/// so a page's values leave soon after they were read and the app's other queries never wait behind a long one.
/// A page is sent its owner's outlet list when it opens, then again only when something in it changed (power,
/// state, online, a name, an outlet claimed or released), or after `repeatSeconds` unchanged, so the page and any
/// proxy between know the stream is alive.
///
/// The state is only ever read and changed under its lock; no thread waits on it, so nothing is woken.
///
/// The same statement checks each stream's session as ``OwnerStore/session(token:)`` does: a stream whose session
/// was ended (logout, expiry, `outletd user disable`) is sent `event: end` and closed at the next read. What a
/// stream carries is read by its own session's user id, so it carries that owner's outlets and no one else's.
///
/// Each stream holds at most one event not yet written (the newest): a reader too slow for the interval skips
/// states, it never makes the server buffer. Streams are bounded per owner and in all (``Settings``), and a stream
/// counts until its response has ended or its connection closed (``close(_:)``), not merely until the hub ended
/// it: a client that does not read keeps a write waiting, and its connection open, until ``LiveConnection`` resets
/// it (`writeTimeoutSeconds`, or `endGraceSeconds` after the hub ended the stream).
final class LiveHub: Sendable {
    struct Settings: Sendable {
        var intervalSeconds = 3.0
        var maxStreams = 10_000
        var maxStreamsPerOwner = 8
        /// An unchanged list is sent again after this, seconds.
        var repeatSeconds = 15.0
        /// Sessions read by one statement: a chunk's events leave when it is read, so the smaller, the sooner;
        /// each statement costs a round trip.
        var readChunk = 100
        /// The part of the interval a tick's chunks are spread over, evenly, rather than read back to back.
        var spreadFraction = 0.9
        /// A write that has not gone through within this resets the stream's connection, seconds.
        var writeTimeoutSeconds = 10.0
        /// A stream the hub ended (session ended, server stopping) whose response has not ended this much later
        /// (its client does not read the end) has its connection reset, seconds.
        var endGraceSeconds = 2.0
    }

    /// What ``open(session:outlets:now:)`` answers.
    enum Admission {
        case admitted(id: Int, events: AsyncStream<ByteBuffer>)
        case ownerLimit
        case full
        case stopped
    }

    private struct Subscriber {
        let userID: Int64
        let sessionID: Int64
        let continuation: AsyncStream<ByteBuffer>.Continuation
        /// Called once when the hub ends the stream.
        let onEnd: @Sendable () -> Void
        var outlets: [OwnedOutlet]
        var sentAt: Date
        /// The owner's open alert incidents last sent (`event: alerts`, the page's badge); nil before the first.
        var openAlerts: Int?
        /// The hub ended it (`event: end`); it still counts until ``LiveHub/close(_:)``.
        var ended = false
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var perOwner: [Int64: Int] = [:]
        var nextID = 0
        var stopped = false
    }

    let settings: Settings
    private let database: OwnerDatabase
    private let metrics: AppMetrics
    private let logger: Logger
    private let state = Guarded(State())

    init(settings: Settings, database: OwnerDatabase, metrics: AppMetrics, logger: Logger) {
        self.settings = settings
        self.database = database
        self.metrics = metrics
        self.logger = logger
    }

    /// Admits a stream for `session`, whose outlets were just read (the caller sends them first): the events that
    /// follow, or why not. `onEnd` is called when the hub ends the stream (after its `event: end`); the stream keeps
    /// its place until the caller's ``close(_:)``, when its response has ended or its connection closed.
    func open(
        session: OwnerSession, outlets: [OwnedOutlet], now: Date = Date(), onEnd: @escaping @Sendable () -> Void = {}
    ) -> Admission {
        let userID = session.userID
        let (events, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(1))
        let (admission, openCount) = state.withLock { state -> (Admission, Int) in
            guard !state.stopped else { return (.stopped, state.subscribers.count) }
            guard state.subscribers.count < settings.maxStreams else { return (.full, state.subscribers.count) }
            guard state.perOwner[userID, default: 0] < settings.maxStreamsPerOwner else {
                return (.ownerLimit, state.subscribers.count)
            }
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(
                userID: userID, sessionID: session.sessionID, continuation: continuation, onEnd: onEnd,
                outlets: outlets, sentAt: now)
            state.perOwner[userID, default: 0] += 1
            return (.admitted(id: state.nextID, events: events), state.subscribers.count)
        }
        switch admission {
        case .admitted:
            metrics.liveStreams(openCount)
        case .ownerLimit, .full, .stopped:
            continuation.finish()
            metrics.liveRefused(admission.reason)
        }
        return admission
    }

    /// Forgets stream `id` and frees its place: its response ended or its connection closed (called for both; the
    /// second does nothing). Its events end, so that a response still waiting for one ends too.
    func close(_ id: Int) {
        let closed = state.withLock { state -> (AsyncStream<ByteBuffer>.Continuation, Int)? in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return nil }
            let left = state.perOwner[subscriber.userID, default: 1] - 1
            state.perOwner[subscriber.userID] = left > 0 ? left : nil
            return (subscriber.continuation, state.subscribers.count)
        }
        guard let (continuation, count) = closed else { return }
        continuation.finish()
        metrics.liveStreams(count)
    }

    /// Reads and pushes every interval until ``stop()`` or cancellation: at fixed instants, so that a read that takes
    /// long does not stretch the interval (an instant missed is skipped).
    func run() async {
        let interval = max(0.01, settings.intervalSeconds)
        var next = Date().addingTimeInterval(interval)
        while !Task.isCancelled, !state.withLock({ $0.stopped }) {
            let wait = next.timeIntervalSinceNow
            if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
            await tick()
            next = next.addingTimeInterval(interval * max(1, (-next.timeIntervalSinceNow / interval).rounded(.up)))
        }
    }

    /// Ends every stream (`event: end`, the server is stopping) and admits no more.
    func stop() {
        let ending = state.withLock { state in
            state.stopped = true
            return Self.markEnded(&state, ids: Array(state.subscribers.keys))
        }
        Self.endStreams(ending, reason: "the server is stopping")
    }

    /// Marks streams `ids` ended (those not already): their continuations and end hooks, for ``endStreams(_:reason:)``
    /// outside the lock.
    private static func markEnded(_ state: inout State, ids: [Int]) -> [Subscriber] {
        var ending: [Subscriber] = []
        for id in ids {
            guard var subscriber = state.subscribers[id], !subscriber.ended else { continue }
            subscriber.ended = true
            state.subscribers[id] = subscriber
            ending.append(subscriber)
        }
        return ending
    }

    /// Sends each stream `event: end` for `reason`, ends its events and calls its end hook.
    private static func endStreams(_ subscribers: [Subscriber], reason: String) {
        guard !subscribers.isEmpty else { return }
        let end = Self.end(reason)
        for subscriber in subscribers {
            subscriber.continuation.yield(end)
            subscriber.continuation.finish()
            subscriber.onEnd()
        }
    }

    /// Reads every open stream's outlets, `readChunk` sessions a statement, and after each read sends an event to
    /// each stream whose list changed or was last sent `repeatSeconds` ago, and `event: end` to each whose session
    /// has ended. A failed read skips the rest of the interval (the streams stay).
    ///
    /// The chunks are spread evenly over `spreadFraction` of the interval (a chunk late behind a slow read is read
    /// at once). Read back to back, 6,000 streams' reads and events held the app's threads and a database
    /// connection for a few hundred milliseconds every interval, and the pages' other requests waited behind them
    /// (docs/OWNER-APP-LOAD.md); spread, a stream's values are still read once an interval, each at its own phase.
    func tick() async {
        let clock = ContinuousClock()
        let started = clock.now
        let watched = state.withLock { state in
            state.subscribers.filter { !$0.value.ended }.map { ($0.key, $0.value.sessionID) }
        }
        guard !watched.isEmpty else { return }
        var streams: [Int64: [Int]] = [:]
        var sessions: [Int64] = []
        for (id, session) in watched {
            if streams[session] == nil { sessions.append(session) }
            streams[session, default: []].append(id)
        }
        let size = max(1, settings.readChunk)
        let chunks = (sessions.count + size - 1) / size
        let spacing = Duration.seconds(max(0, settings.intervalSeconds * settings.spreadFraction) / Double(chunks))
        for index in 0..<chunks {
            if index > 0 {
                try? await Task.sleep(until: started + spacing * index, clock: clock)
                guard !Task.isCancelled, !state.withLock({ $0.stopped }) else { return }
            }
            let chunk = Array(sessions[index * size..<min((index + 1) * size, sessions.count)])
            guard await push(chunk, streams: streams) else { return }
        }
    }

    /// One read of `sessions`, then their streams' events; false when the read failed. The events carry the
    /// instant the read began: their values are at least that new.
    private func push(_ sessions: [Int64], streams: [Int64: [Int]]) async -> Bool {
        let at = Date()
        let read: [Int: [OwnedOutlet]]
        let alerts: [Int: Int]
        do {
            (read, alerts) = try await database.run {
                (try $0.liveOutlets(sessions: sessions), try $0.liveOpenAlerts(sessions: sessions))
            }
        } catch {
            logger.warning("live values: the read failed, streams wait for the next interval: \(error)")
            return false
        }
        var sends: [(AsyncStream<ByteBuffer>.Continuation, [OwnedOutlet])] = []
        var alertSends: [(AsyncStream<ByteBuffer>.Continuation, Int)] = []
        var ended: [Subscriber] = []
        state.withLock { state in
            for (index, session) in sessions.enumerated() {
                for id in streams[session] ?? [] {
                    guard var subscriber = state.subscribers[id], !subscriber.ended else { continue }
                    guard let outlets = read[index] else {
                        ended += Self.markEnded(&state, ids: [id])
                        continue
                    }
                    if let open = alerts[index], open != subscriber.openAlerts {
                        subscriber.openAlerts = open
                        state.subscribers[id] = subscriber
                        alertSends.append((subscriber.continuation, open))
                    }
                    guard
                        outlets != subscriber.outlets
                            || at.timeIntervalSince(subscriber.sentAt) >= settings.repeatSeconds
                    else { continue }
                    subscriber.outlets = outlets
                    subscriber.sentAt = at
                    state.subscribers[id] = subscriber
                    sends.append((subscriber.continuation, outlets))
                }
            }
        }
        let stamp = Stamp(at)
        for (continuation, outlets) in sends { continuation.yield(Self.event(outlets, stamp)) }
        for (continuation, open) in alertSends { continuation.yield(Self.alertsEvent(open: open)) }
        Self.endStreams(ended, reason: "the session has ended; log in again")
        metrics.liveEvents(sends.count)
        return true
    }

    // MARK: Events

    /// When a read began, as an event shows it (made once for all the events of a read).
    struct Stamp {
        let text: String
        let milliseconds: Int64

        init(_ date: Date) {
            text = JSONOutput.timestamp(date)
            milliseconds = Int64((date.timeIntervalSince1970 * 1_000).rounded(.down))
        }
    }

    /// What a stream starts with: how long a browser waits before reconnecting, then the list read on opening.
    static func opening(_ outlets: [OwnedOutlet], at: Date) -> ByteBuffer {
        var buffer = ByteBuffer(string: "retry: 5000\n\n")
        var event = event(outlets, Stamp(at))
        buffer.writeBuffer(&event)
        return buffer
    }

    /// `event: outlets`: the owner's outlets as `GET /api/v1/outlets` lists them, and when they were read; its id
    /// is that instant in milliseconds since 1970. Written straight into one buffer sized for the list: at 6,000
    /// open pages this runs 2,000 times a second.
    static func event(_ outlets: [OwnedOutlet], _ stamp: Stamp) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 96 + 256 * outlets.count)
        buffer.writeStaticString("id: ")
        buffer.writeString(String(stamp.milliseconds))
        buffer.writeStaticString("\nevent: outlets\ndata: {\"at\":")
        JSONOutput.writeString(stamp.text, to: &buffer)
        buffer.writeStaticString(",\"outlets\":[")
        for (index, outlet) in outlets.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            OwnerAPI.write(outlet, to: &buffer)
        }
        // JSONOutput escapes control characters in strings, so the data is one line.
        buffer.writeStaticString("]}\n\n")
        return buffer
    }

    /// `event: alerts`: how many of the owner's alert incidents are open (the page's badge), sent when it changes;
    /// the page reads the list (`GET /api/v1/alerts`) then.
    static func alertsEvent(open: Int) -> ByteBuffer {
        ByteBuffer(string: "event: alerts\ndata: {\"open\":\(open)}\n\n")
    }

    /// `event: end`: the stream closes after it, for `reason`.
    static func end(_ reason: String) -> ByteBuffer {
        ByteBuffer(string: "event: end\ndata: \(JSONOutput.object([("reason", .string(reason))]).text)\n\n")
    }
}

extension LiveHub.Admission {
    /// The metric's reason for a refusal.
    var reason: String {
        switch self {
        case .admitted: "admitted"
        case .ownerLimit: "owner_limit"
        case .full: "full"
        case .stopped: "stopping"
        }
    }
}
