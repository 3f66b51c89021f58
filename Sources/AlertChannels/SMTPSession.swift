import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// One SMTP conversation (RFC 5321) over NIO, for one message to one recipient.
struct SMTPSession {
    let settings: SMTPSettings
    /// Set when STARTTLS is required, or TLS from the first byte.
    let tlsContext: NIOSSLContext?
    let mailFrom: String
    let recipient: String
    /// The message after DATA: dot-stuffed, ending with the `.` line.
    let data: [UInt8]

    /// A reply: its code and its lines' text.
    struct Reply {
        var code: Int
        var lines: [String]
        var text: String { lines.joined(separator: " / ").prefix(200).description }
    }

    /// Connects, talks, and closes; every step within the settings' timeout, counted from the start.
    func run(on group: any EventLoopGroup) async throws(DeliveryError) {
        let timeout = TimeAmount(settings.timeout)
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group).connectTimeout(timeout)
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .connect(host: settings.host, port: settings.port) { [settings, tlsContext] channel in
                    channel.eventLoop.makeCompletedFuture {
                        if settings.implicitTLS {
                            guard let tlsContext else { throw DeliveryError.permanent("no TLS settings") }
                            try channel.pipeline.syncOperations.addHandler(
                                try NIOSSLClientHandler(context: tlsContext, serverHostname: settings.serverName))
                        }
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch let error as DeliveryError {
            throw error
        } catch {
            throw .retryable("cannot connect to the SMTP relay: \(error)")
        }
        // The deadline closes the connection, which ends whatever read or write is waiting.
        let timedOut = NIOLockedValueBox(false)
        let timer = channel.channel.eventLoop.scheduleTask(in: timeout) {
            timedOut.withLockedValue { $0 = true }
            channel.channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            try await channel.executeThenClose { inbound, outbound in
                var conversation = Conversation(
                    session: self, channel: channel.channel, replies: inbound.makeAsyncIterator(), outbound: outbound,
                    tlsActive: settings.implicitTLS)
                try await conversation.run()
            }
        } catch {
            if timedOut.withLockedValue({ $0 }) {
                throw .retryable("the SMTP relay did not finish within \(settings.timeout)")
            }
            if let error = error as? DeliveryError { throw error }
            throw .retryable("the SMTP conversation broke off: \(error)")
        }
    }

    /// The conversation proper: reads replies line by line from `replies`, writes commands to `outbound`.
    struct Conversation {
        let session: SMTPSession
        let channel: any Channel
        var replies: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        /// Bytes received and not yet taken as lines.
        var pending: [UInt8] = []
        var tlsActive = false

        mutating func run() async throws {
            try expect(try await reply(), 220, "greeting")
            var extensions = try await hello()
            if session.starttls && !tlsActive {
                guard extensions.keys.contains("STARTTLS") else {
                    throw DeliveryError.permanent("the SMTP relay does not offer STARTTLS, which is required")
                }
                try expect(try await command("STARTTLS"), 220, "STARTTLS")
                // A server (or someone in the middle) that sent more after its 220 would have it read as if it came
                // over TLS (CVE-2011-0411 and kin): refused.
                guard pending.isEmpty else { throw DeliveryError.permanent("the relay sent data before TLS began") }
                try await startTLS()
                extensions = try await hello()
            }
            if let username = session.settings.username {
                try await authenticate(username: username, password: session.settings.password ?? "", extensions)
            }
            try expect(try await command("MAIL FROM:<\(session.mailFrom)>"), 250, "MAIL FROM")
            let rcpt = try await command("RCPT TO:<\(session.recipient)>")
            try expect(rcpt, rcpt.code == 251 ? 251 : 250, "RCPT TO")
            try expect(try await command("DATA"), 354, "DATA")
            try await write(session.data)
            try expect(try await reply(), 250, "the message")
            _ = try? await command("QUIT")
        }

        /// EHLO; the extensions offered (keyword → parameters).
        mutating func hello() async throws -> [String: [String]] {
            let answer = try await command("EHLO \(session.settings.heloName)")
            try expect(answer, 250, "EHLO")
            var extensions: [String: [String]] = [:]
            for line in answer.lines.dropFirst() {
                let words = line.split(separator: " ").map(String.init)
                if let keyword = words.first {
                    extensions[keyword.uppercased()] = words.dropFirst().map { $0.uppercased() }
                }
            }
            return extensions
        }

        mutating func startTLS() async throws {
            guard let context = session.tlsContext else { throw DeliveryError.permanent("no TLS settings") }
            let serverName = session.settings.serverName
            let channel = self.channel
            try await channel.eventLoop.submit {
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            }.get()
            tlsActive = true
        }

        mutating func authenticate(username: String, password: String, _ extensions: [String: [String]]) async throws {
            guard tlsActive else {
                throw DeliveryError.permanent("AUTH without TLS would send the password in the clear; refused")
            }
            let mechanisms = extensions["AUTH"] ?? []
            if mechanisms.contains("PLAIN") {
                let token = Data(([0] + Array(username.utf8) + [0] + Array(password.utf8))).base64EncodedString()
                try checkAuth(try await command("AUTH PLAIN \(token)", shown: "AUTH PLAIN ****"))
            } else if mechanisms.contains("LOGIN") {
                try expect(try await command("AUTH LOGIN"), 334, "AUTH LOGIN")
                try expect(
                    try await command(Data(username.utf8).base64EncodedString(), shown: "****"), 334, "AUTH LOGIN")
                try checkAuth(try await command(Data(password.utf8).base64EncodedString(), shown: "****"))
            } else {
                throw DeliveryError.permanent("the SMTP relay offers neither AUTH PLAIN nor LOGIN")
            }
        }

        func checkAuth(_ answer: Reply) throws {
            if answer.code == 535 || answer.code == 534 {
                throw DeliveryError.permanent("the SMTP relay refused the credentials: \(answer.code) \(answer.text)")
            }
            try expect(answer, 235, "AUTH")
        }

        /// Throws unless `answer` has the code wanted: 4xx retryable, anything else permanent.
        func expect(_ answer: Reply, _ code: Int, _ step: String) throws {
            guard answer.code != code else { return }
            let reason = "the SMTP relay answered \(step) with \(answer.code) \(answer.text)"
            throw (400..<500).contains(answer.code) ? DeliveryError.retryable(reason) : DeliveryError.permanent(reason)
        }

        /// Sends a command line; returns the reply. `shown` stands for it in errors (credentials are never shown).
        mutating func command(_ line: String, shown: String? = nil) async throws -> Reply {
            guard !line.contains("\r"), !line.contains("\n") else {
                throw DeliveryError.permanent("a line break in \(shown ?? "an SMTP command")")
            }
            try await write(Array((line + "\r\n").utf8))
            return try await reply()
        }

        func write(_ bytes: [UInt8]) async throws {
            try await outbound.write(ByteBuffer(bytes: bytes))
        }

        /// The next reply: `ddd-text` lines, then `ddd text` (or `ddd`).
        mutating func reply() async throws -> Reply {
            var lines: [String] = []
            while true {
                let line = try await nextLine()
                guard line.count >= 3, let code = Int(line.prefix(3)), (200..<600).contains(code) else {
                    throw DeliveryError.retryable("the SMTP relay said something that is not a reply")
                }
                let separator = line.dropFirst(3).first
                lines.append(String(line.dropFirst(4)))
                if separator != "-" { return Reply(code: code, lines: lines) }
                guard lines.count < 100 else { throw DeliveryError.retryable("an endless SMTP reply") }
            }
        }

        /// The next line received, without its CRLF (or LF).
        mutating func nextLine() async throws -> String {
            while true {
                if let end = pending.firstIndex(of: 0x0A) {
                    var line = Array(pending[..<end])
                    pending.removeSubrange(...end)
                    if line.last == 0x0D { line.removeLast() }
                    return String(decoding: line, as: UTF8.self)
                }
                guard pending.count < 4_096 else { throw DeliveryError.retryable("an SMTP reply line too long") }
                guard var buffer = try await replies.next() else {
                    throw DeliveryError.retryable("the SMTP relay closed the connection")
                }
                pending += buffer.readBytes(length: buffer.readableBytes) ?? []
            }
        }
    }
}

extension SMTPSession {
    var starttls: Bool { settings.starttls }
}

extension SMTPSettings {
    /// The name the relay's certificate is checked against (SNI): the host, unless it is an IP address.
    var serverName: String? { IPAddress(host) == nil ? host : nil }
}
