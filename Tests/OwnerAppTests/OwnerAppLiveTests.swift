import Config
import Foundation
import Runtime
import ServiceTestSupport
import Telemetry
import TestSupport
import Testing

/// The page's live values as server-sent events (`GET /api/v1/live`) against a real PostgreSQL, over real HTTP:
/// a stream carries its owner's outlets and no one else's, follows claims, releases and new values, ends with its
/// session, and is bounded per owner and in all.
@Suite(.serialized) struct OwnerAppLiveTests {
    /// Streams read every 0.1 s, at most 2 per owner and 3 in all.
    static func configure(_ configuration: inout OutletdConfiguration) {
        configuration.app.liveIntervalSeconds = 0.1
        configuration.app.maxLiveStreamsPerOwner = 2
        configuration.app.maxLiveStreams = 3
    }

    static func codes(_ event: LiveStreamClient.Event?) -> [String] {
        guard case .object(let data)? = event?.json, case .array(let outlets)? = data["outlets"] else { return [] }
        return outlets.compactMap { outlet in
            guard case .object(let members) = outlet, case .string(let code)? = members["code"] else { return nil }
            return code
        }
    }

    static func member(_ event: LiveStreamClient.Event?, code: String, _ name: String) -> JSONValue? {
        guard case .object(let data)? = event?.json, case .array(let outlets)? = data["outlets"] else { return nil }
        for case .object(let members) in outlets where members["code"] == .string(code) { return members[name] }
        return nil
    }

    /// `token`'s owner claims outlet `code` as `name`.
    static func claim(_ app: OwnerAppTests.App, _ token: String, _ code: String, _ name: String) async throws {
        let response = try await app.send("POST", "/api/v1/outlets", token: token, body: app.claimBody(code, name))
        #expect(response.status == 201, "claiming \(code): \(response.status) \(response.body)")
    }

    static func setPower(_ app: OwnerAppTests.App, _ code: String, _ watts: Double) throws {
        _ = try app.sql(
            """
            INSERT INTO rollup_tails (device_id, measured_at, power_watts)
            SELECT id, now(), \(watts) FROM devices WHERE code = '\(code)'
            ON CONFLICT (device_id) DO UPDATE SET measured_at = excluded.measured_at, power_watts = excluded.power_watts
            """)
    }

    /// Ana and Bob each watch their own outlet while both change: every event Ana receives lists kit-1 alone, with
    /// its new power; Bob's lists kit-2 alone.
    @Test func aStreamCarriesItsOwnersOutletsAndNoOneElses() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let bob = try await app.login("bob")
            try await Self.claim(app, ana, "kit-1", "Fridge")
            try await Self.claim(app, bob, "kit-2", "Lamp")
            let anas = try await LiveStreamClient.open(port: app.port, token: ana)
            let bobs = try await LiveStreamClient.open(port: app.port, token: bob)
            defer { anas.close(); bobs.close() }
            #expect(
                anas.status == 200 && anas.head.lowercased().contains("content-type: text/event-stream"), "\(anas.head)"
            )
            let first = try await anas.next()
            #expect(first?.name == "outlets" && Self.codes(first) == ["kit-1"], "\(String(describing: first))")
            #expect(Self.codes(try await bobs.next()) == ["kit-2"])

            try Self.setPower(app, "kit-1", 42.5)
            try Self.setPower(app, "kit-2", 99)
            let anaSaw = try await anas.next { Self.member($0, code: "kit-1", "power_watts") == .number(42.5) }
            let bobSaw = try await bobs.next { Self.member($0, code: "kit-2", "power_watts") == .number(99) }
            #expect(anaSaw != nil && bobSaw != nil)
            for event in anas.received { #expect(!event.data.contains("kit-2") && !event.data.contains("Lamp")) }
            for event in bobs.received { #expect(!event.data.contains("kit-1") && !event.data.contains("Fridge")) }
        }
    }

    /// An outlet claimed appears in the open stream, and leaves it when released.
    @Test func aClaimedOutletAppearsAndAReleasedOneLeaves() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let stream = try await LiveStreamClient.open(port: app.port, token: ana)
            defer { stream.close() }
            #expect(Self.codes(try await stream.next()) == [])
            try await Self.claim(app, ana, "kit-3", "Heater")
            #expect(try await stream.next { Self.codes($0) == ["kit-3"] } != nil)
            #expect(try await app.send("DELETE", "/api/v1/outlets/kit-3", token: ana).status == 204)
            #expect(try await stream.next { Self.codes($0) == [] } != nil)
        }
    }

    /// Logout ends the stream at the next read: `event: end`, then the response ends; a disabled owner's too.
    @Test func anEndedSessionEndsItsStream() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let stream = try await LiveStreamClient.open(port: app.port, token: ana)
            defer { stream.close() }
            _ = try await stream.next()
            #expect(try await app.send("POST", "/api/v1/logout", token: ana).status == 204)
            let end = try await stream.next { $0.name == "end" }
            #expect(end?.data.contains("session has ended") == true, "\(stream.received)")
            #expect(try await stream.responseEnded(), "the response goes on after event: end")

            let bob = try await app.login("bob")
            let bobs = try await LiveStreamClient.open(port: app.port, token: bob)
            defer { bobs.close() }
            _ = try app.sql("UPDATE app_users SET disabled = true WHERE name = 'bob'")
            #expect(try await bobs.next { $0.name == "end" } != nil)
        }
    }

    /// No session, no stream: 401 before anything is held. Streams turned off: 503 saying so.
    @Test func withoutASessionOrWithStreamsOffThereIsNoStream() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let anonymous = try await LiveStreamClient.open(port: app.port, token: nil)
            let stranger = try await LiveStreamClient.open(port: app.port, token: "not-a-session")
            #expect(anonymous.status == 401 && stranger.status == 401)
        }
        try await OwnerAppTests.withApp(configure: { $0.app.maxLiveStreams = 0 }) { app in
            let ana = try await app.login("ana")
            let refused = try await LiveStreamClient.open(port: app.port, token: ana)
            #expect(refused.status == 503 && refused.rest.contains("app.max_live_streams: 0"), "\(refused.rest)")
        }
    }

    /// Two streams per owner, three in all: Ana's third is a 429 and Bob's second a 503, each with its reason; a
    /// stream whose client left frees its place at the next write.
    @Test func theLimitsRefuseWithAReasonAndALeavingClientFreesItsPlace() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let bob = try await app.login("bob")
            try await Self.claim(app, ana, "kit-1", "Fridge")
            let first = try await LiveStreamClient.open(port: app.port, token: ana)
            let second = try await LiveStreamClient.open(port: app.port, token: ana)
            defer { first.close(); second.close() }
            let third = try await LiveStreamClient.open(port: app.port, token: ana)
            #expect(third.status == 429 && third.rest.contains("at most 2 live streams per owner"), "\(third.rest)")
            #expect(third.head.contains("Retry-After") || third.head.contains("retry-after"))
            let bobs = try await LiveStreamClient.open(port: app.port, token: bob)
            defer { bobs.close() }
            #expect(bobs.status == 200)
            let full = try await LiveStreamClient.open(port: app.port, token: bob)
            #expect(full.status == 503 && full.rest.contains("app.max_live_streams"), "\(full.rest)")

            // Ana's first page goes away; the next change is written to it, fails, and frees its place.
            first.close()
            var again: LiveStreamClient?
            let deadline = Date().addingTimeInterval(10)
            var watts = 1.0
            while again == nil, Date() < deadline {
                watts += 1
                try Self.setPower(app, "kit-1", watts)
                try await Task.sleep(for: .milliseconds(300))
                let attempt = try await LiveStreamClient.open(port: app.port, token: ana)
                if attempt.status == 200 { again = attempt } else { attempt.close() }
            }
            defer { again?.close() }
            #expect(again != nil)
        }
    }

    /// Streams read every 0.1 s, at most 3 per owner; `writeTimeout` is set by each test.
    static func configureUnread(_ configuration: inout OutletdConfiguration) {
        configuration.app.liveIntervalSeconds = 0.1
        configuration.app.maxLiveStreamsPerOwner = 3
        configuration.app.maxLiveStreams = 100
    }

    /// Gives `user` `count` more outlets (`big-1`…), each with a 150-byte description: an event of theirs is about
    /// 300 bytes an outlet.
    static func giveOutlets(_ app: OwnerAppTests.App, to user: String, count: Int) throws {
        _ = try app.sql(
            """
            INSERT INTO devices (code) SELECT 'big-' || g FROM generate_series(1, \(count)) g;
            UPDATE devices SET owner_id = (SELECT id FROM app_users WHERE name = '\(user)'), claimed_at = now(),
                               name = 'Outlet ' || code, description = repeat('d', 150)
            WHERE code LIKE 'big-%'
            """)
    }

    /// Changes `code`'s power every 0.1 s until cancelled, so that every read sends each stream an event.
    static func keepChanging(_ app: OwnerAppTests.App, _ code: String) -> Task<Void, Never> {
        Task {
            var watts = 1.0
            while !Task.isCancelled {
                watts += 1
                try? setPower(app, code, watts)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// An owner with 1,000 outlets (events of ~300 kB) opens three streams with 4 KiB receive buffers and never
    /// reads them, so that the server's writes block. Logout closes their connections within a few seconds all the
    /// same (a write may wait 60 s here, so it is not that), and until each is closed it counts: logging in again
    /// never holds more than three streams at once, and the fourth of the new session is a 429.
    @Test func streamsNobodyReadsCloseWithTheirSessionAndCountUntilClosed() async throws {
        try await OwnerAppTests.withApp(configure: {
            Self.configureUnread(&$0)
            $0.app.liveWriteTimeoutSeconds = 60
        }) { app in
            try Self.giveOutlets(app, to: "ana", count: 1_000)
            let ana = try await app.login("ana")
            let changing = Self.keepChanging(app, "big-1")
            var unread: [RawConnection] = []
            var fresh: [RawConnection] = []
            defer { for connection in unread + fresh { connection.close() } }
            for _ in 0..<3 {
                let connection = try await RawConnection.openStream(port: app.port, token: ana)
                unread.append(connection)
                #expect(connection.status == 200)
            }
            // 30 events of ~300 kB each: more than the kernel's buffers of a connection take, so writes wait.
            try await Task.sleep(for: .seconds(3))
            changing.cancel()
            #expect(unread.allSatisfy { $0.isOpen })
            let queuedBefore = RawConnection.serverSendQueueBytes(port: app.port)

            let loggedOut = ContinuousClock.now
            #expect(try await app.send("POST", "/api/v1/logout", token: ana).status == 204)
            let again = try await app.login("ana")
            var mostAtOnce = 0
            while fresh.count < 3, ContinuousClock.now - loggedOut < .seconds(30) {
                let connection = try await RawConnection.openStream(port: app.port, token: again)
                if connection.status == 200 {
                    fresh.append(connection)
                    mostAtOnce = max(mostAtOnce, unread.filter { $0.isOpen }.count + fresh.count)
                } else {
                    #expect(connection.status == 429)
                    connection.close()
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            while unread.contains(where: { $0.isOpen }), ContinuousClock.now - loggedOut < .seconds(30) {
                try await Task.sleep(for: .milliseconds(100))
            }
            let closedAfter = (ContinuousClock.now - loggedOut).seconds
            let stillOpen = unread.filter { $0.isOpen }.count
            let queuedAfter = RawConnection.serverSendQueueBytes(port: app.port)
            print(
                "unread streams after logout: \(stillOpen) of 3 open \(closedAfter) s later; most of the owner's "
                    + "streams open at once after logging in again: \(mostAtOnce) (limit 3); the server's send "
                    + "queues: \(queuedBefore / 1_000) kB before logout, \(queuedAfter / 1_000) kB after")
            #expect(stillOpen == 0 && closedAfter < 10, "\(stillOpen) still open \(closedAfter) s after logout")
            #expect(mostAtOnce <= 3, "\(mostAtOnce) streams of one owner open at once, the limit is 3")
            #expect(fresh.count == 3)
            let fourth = try await RawConnection.openStream(port: app.port, token: again)
            defer { fourth.close() }
            #expect(fourth.status == 429)
        }
    }

    /// A stream whose client never reads, of an owner still logged in: once a write has waited 1 s (the bound set
    /// here) its connection is reset, and its place is free for another stream.
    @Test func aWriteThatCannotGoThroughResetsItsConnection() async throws {
        try await OwnerAppTests.withApp(configure: {
            Self.configureUnread(&$0)
            $0.app.liveWriteTimeoutSeconds = 1
        }) { app in
            try Self.giveOutlets(app, to: "ana", count: 1_000)
            let ana = try await app.login("ana")
            let changing = Self.keepChanging(app, "big-1")
            defer { changing.cancel() }
            var unread: [RawConnection] = []
            defer { for connection in unread { connection.close() } }
            for _ in 0..<3 {
                let connection = try await RawConnection.openStream(port: app.port, token: ana)
                unread.append(connection)
                #expect(connection.status == 200)
            }
            let started = ContinuousClock.now
            while unread.contains(where: { $0.isOpen }), ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(100))
            }
            let stillOpen = unread.filter { $0.isOpen }.count
            #expect(stillOpen == 0, "\(stillOpen) of 3 unread streams still open after 30 s")
            changing.cancel()
            let reader = try await LiveStreamClient.open(port: app.port, token: ana)
            defer { reader.close() }
            #expect(reader.status == 200, "\(reader.rest)")
        }
    }

    /// A client that closes its stream frees its place at once, not at the next write: with nothing changing (the
    /// next event would be the 15-s repeat), the owner's third stream is admitted within 5 s of the first's close.
    @Test func aClientThatLeavesFreesItsPlaceWithoutAWrite() async throws {
        try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let first = try await LiveStreamClient.open(port: app.port, token: ana)
            let second = try await LiveStreamClient.open(port: app.port, token: ana)
            defer { second.close() }
            _ = try await first.next()
            first.close()
            let closed = ContinuousClock.now
            var again: LiveStreamClient?
            while again == nil, ContinuousClock.now - closed < .seconds(5) {
                let attempt = try await LiveStreamClient.open(port: app.port, token: ana)
                if attempt.status == 200 { again = attempt } else { attempt.close() }
                if again == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            defer { again?.close() }
            print("a stream's place after its client closed: free \((ContinuousClock.now - closed).seconds) s later")
            #expect(again != nil, "the place was still taken 5 s after the client closed")
        }
    }

    /// The graceful shutdown ends open streams (`event: end`, the server is stopping) instead of waiting on them.
    @Test func shutdownEndsOpenStreams() async throws {
        let stream = try await OwnerAppTests.withApp(configure: Self.configure) { app in
            let ana = try await app.login("ana")
            let stream = try await LiveStreamClient.open(port: app.port, token: ana)
            _ = try await stream.next()
            return stream
        }
        defer { stream.close() }
        let end = try await stream.next { $0.name == "end" }
        #expect(end?.data.contains("stopping") == true, "\(stream.received)")
    }
}

/// A live stream read as it arrives: HTTP/1.1, chunked, server-sent events. Its blocking reads run on threads of
/// their own (``Blocking``), never on the cooperative pool the server under test needs.
final class LiveStreamClient: @unchecked Sendable {
    struct Event: Sendable, Equatable, CustomStringConvertible {
        var name: String
        var data: String
        var json: JSONValue? { try? JSONParser.parse(Array(data.utf8)) }
        var description: String { "\(name): \(data)" }
    }

    let fd: Int32
    private(set) var status = 0
    private(set) var head = ""
    /// The body after the head, as received (chunked when the status is 200).
    private var body: [UInt8] = []
    /// Events handed out so far.
    private(set) var received: [Event] = []
    private var isOpen = true

    private init(fd: Int32) { self.fd = fd }

    /// The de-chunked body read so far, for refusals (a JSON error).
    var rest: String { status == 200 ? AppResponse.unchunk(String(decoding: body, as: UTF8.self)) : text(body) }

    static func open(port: Int, token: String?) async throws -> LiveStreamClient {
        try await Blocking.run("live-stream-test") {
            guard let fd = HTTPProbe.connect(port: port, timeoutSeconds: 1) else {
                throw HarnessError("cannot connect to 127.0.0.1:\(port)")
            }
            let client = LiveStreamClient(fd: fd)
            var request = "GET /api/v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            if let token { request += "Authorization: Bearer \(token)\r\n" }
            let bytes = Array((request + "\r\n").utf8)
            guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
            else {
                throw HarnessError("send failed")
            }
            let deadline = Date().addingTimeInterval(10)
            var received: [UInt8] = []
            while Date() < deadline {
                if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    client.head = client.text(received[..<end.lowerBound])
                    client.body = Array(received[end.upperBound...])
                    let parts = client.head.split(separator: "\r\n").first?.split(separator: " ") ?? []
                    client.status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
                    if client.status != 200 { client.readBodyOfRefusal() }
                    return client
                }
                guard client.read(into: &received) else { break }
            }
            throw HarnessError("no HTTP head from the live route: \(client.text(received))")
        }
    }

    /// The next event (skipping the `retry:` preamble) that `matches`, waiting up to `timeout` seconds; nil when
    /// none came in time or the stream ended.
    func next(timeout: Double = 10, where matches: @escaping @Sendable (Event) -> Bool = { _ in true }) async throws
        -> Event?
    {
        try await Blocking.run("live-stream-test") { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let events = self.events()
                while received.count < events.count {
                    let event = events[received.count]
                    received.append(event)
                    if matches(event) { return event }
                }
                if Date() >= deadline || !isOpen { return nil }
                if !read(into: &body) { isOpen = false }
            }
        }
    }

    func close() {
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        Glibc.close(fd)
    }

    /// Every complete event in the body so far.
    private func events() -> [Event] {
        let text = AppResponse.unchunk(String(decoding: body, as: UTF8.self))
        var events: [Event] = []
        var blocks = text.components(separatedBy: "\n\n")
        blocks.removeLast()  // the part after the last blank line is not complete yet
        for block in blocks {
            var event = Event(name: "message", data: "")
            var hasData = false
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") {
                    event.data = String(line.dropFirst(6))
                    hasData = true
                }
            }
            if hasData { events.append(event) }
        }
        return events
    }

    /// Reads what arrived within the socket's time-out; false when the peer closed (or the read failed).
    private func read(into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
        return false
    }

    /// Whether the chunked response ends (its last, empty chunk) within `timeout` seconds.
    func responseEnded(timeout: Double = 5) async throws -> Bool {
        try await Blocking.run("live-stream-test") { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if body.count >= 5, body.suffix(5).elementsEqual("0\r\n\r\n".utf8) { return true }
                guard read(into: &body) else { return false }
            }
            return false
        }
    }

    /// Reads a refusal's body to its `Content-Length`.
    private func readBodyOfRefusal() {
        let field = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        let length = field.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, body.count < length {
            guard read(into: &body) else { return }
        }
    }

    private func text(_ bytes: some Collection<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}

/// A bare TCP connection to the app on loopback, for what no polite client does: a small receive buffer that is
/// never read, half a request head, nothing at all. Whether it is still open is asked of the kernel (its TCP state),
/// never by reading, so that looking does not drain what the server could not send.
final class RawConnection: @unchecked Sendable {
    let fd: Int32
    /// The status of the response whose head ``readHead()`` read; 0 before.
    private(set) var status = 0
    private(set) var received: [UInt8] = []

    private init(fd: Int32) { self.fd = fd }

    /// Connects to 127.0.0.1:`port`, with a receive buffer of `receiveBufferBytes` when given (set before connecting,
    /// so that the window offered is that small). Reads wait at most a second each.
    static func open(port: Int, receiveBufferBytes: Int32? = nil) async throws -> RawConnection {
        try await Blocking.run("raw-connection-test") {
            guard let fd = HTTPProbe.connect(port: port, timeoutSeconds: 1, receiveBufferBytes: receiveBufferBytes)
            else { throw HarnessError("cannot connect to 127.0.0.1:\(port): errno \(errno)") }
            return RawConnection(fd: fd)
        }
    }

    /// A stream (`GET /api/v1/live`) opened with a receive buffer of `receiveBufferBytes` and read only as far as its
    /// response's head.
    static func openStream(port: Int, token: String, receiveBufferBytes: Int32 = 4_096) async throws -> RawConnection {
        let connection = try await open(port: port, receiveBufferBytes: receiveBufferBytes)
        try connection.send("GET /api/v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
        try await connection.readHead()
        return connection
    }

    /// Sends `text` (a few hundred bytes at most: it fits the socket's buffer, so this does not block).
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw HarnessError("send: errno \(errno)") }
    }

    /// Reads until a response head has arrived (within 10 s) and sets ``status``.
    func readHead() async throws {
        try await Blocking.run("raw-connection-test") { [self] in
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let line = String(decoding: received[..<end.lowerBound], as: UTF8.self).prefix { $0 != "\r" }
                    let parts = line.split(separator: " ")
                    status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
                    return
                }
                guard read() else { break }
            }
            throw HarnessError("no response head: \(String(decoding: received, as: UTF8.self))")
        }
    }

    /// Reads until the server closes the connection, at most `timeout` seconds; what arrived, as text.
    func readToEnd(timeout: Double = 10) async throws -> String {
        try await Blocking.run("raw-connection-test") { [self] in
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, read() {}
            return String(decoding: received, as: UTF8.self)
        }
    }

    /// One read of what arrived within the receive time-out; false when the peer closed or the read failed.
    private func read() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            received.append(contentsOf: chunk[0..<count])
            return true
        }
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// Whether the connection is still established: neither closed nor reset by the server. Asked of the kernel
    /// (`TCP_INFO`'s state, its first byte), so nothing is read.
    var isOpen: Bool {
        var info = [UInt8](repeating: 0, count: 256)
        var length = socklen_t(info.count)
        let result = info.withUnsafeMutableBytes {
            getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length)
        }
        return result == 0 && info[0] == 1  // TCP_ESTABLISHED
    }

    func close() {
        Glibc.close(fd)
    }

    /// Bytes waiting in the kernel's send queues of the server's side of connections on `port` (`/proc/net/tcp`'s
    /// `tx_queue`), orphaned ones included.
    static func serverSendQueueBytes(port: Int) -> Int {
        // Read to its end: a /proc file's size says 0.
        guard let data = FileHandle(forReadingAtPath: "/proc/net/tcp")?.readDataToEndOfFile() else { return -1 }
        let table = String(decoding: data, as: UTF8.self)
        let local = ":" + String(format: "%04X", port)
        return table.split(separator: "\n").dropFirst().reduce(0) { total, line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[1].hasSuffix(local), fields[3] != "0A" else { return total }  // not LISTEN
            return total + (Int(fields[4].split(separator: ":")[0], radix: 16) ?? 0)
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
