import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// The operator's SMTP relay (`alerts.smtp` in outletd.yaml).
public struct SMTPSettings: Sendable, Equatable {
    public var host: String
    /// 587 (submission) by default.
    public var port: Int
    /// Upgrade with STARTTLS before anything else, and refuse to go on when the server does not offer it. Without
    /// it (a relay on the same host), credentials are never sent.
    public var starttls: Bool
    /// TLS from the first byte (port 465, "implicit TLS": RFC 8314, which prefers it for submission) instead of
    /// STARTTLS; `starttls` is then not used.
    public var implicitTLS: Bool
    /// AUTH PLAIN (or LOGIN when the server offers only that) with these, over TLS only; nil: no AUTH.
    public var username: String?
    public var password: String?
    /// The sender: `alerts@example.com` or `outletd <alerts@example.com>`; its domain is the Message-ID's.
    public var from: String
    /// The name said in EHLO.
    public var heloName: String
    /// The whole exchange, from connecting to the reply to the message, must end within this.
    public var timeout: Duration
    /// A PEM file of the certificate authorities to trust for the relay instead of the system's (nil: the system's).
    public var trustRootsFile: String?

    public init(
        host: String, port: Int = 587, starttls: Bool = true, implicitTLS: Bool = false, username: String? = nil,
        password: String? = nil, from: String, heloName: String = ProcessInfo.processInfo.hostName,
        timeout: Duration = .seconds(30), trustRootsFile: String? = nil
    ) {
        self.host = host
        self.port = port
        self.starttls = starttls
        self.implicitTLS = implicitTLS
        self.username = username
        self.password = password
        self.from = from
        self.heloName = heloName
        self.timeout = timeout
        self.trustRootsFile = trustRootsFile
    }
}

/// Sends notices as plain-text email through the operator's SMTP relay: EHLO, STARTTLS (then EHLO again; or TLS from
/// the connection's first byte with `implicitTLS`), AUTH
/// PLAIN or LOGIN, MAIL FROM, RCPT TO, DATA (dot-stuffed), QUIT; one connection per message, bounded by the settings'
/// timeout. A 4xx reply, a refused connection or a timeout is `.retryable`; a 5xx reply, a failed AUTH, a server
/// without STARTTLS when it is required, or an address or subject that could inject a header is `.permanent`.
public struct MailSender: Sendable {
    public let settings: SMTPSettings
    let eventLoopGroup: any EventLoopGroup

    public init(settings: SMTPSettings, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.settings = settings
        self.eventLoopGroup = eventLoopGroup
    }

    /// Whether `address` is a plain ASCII `local@domain` (no display name, no comments, no spaces, quotes, angle
    /// brackets or line breaks): the only form taken from owners.
    public static func isValidAddress(_ address: String) -> Bool {
        guard (3...254).contains(address.utf8.count), let at = address.lastIndex(of: "@") else { return false }
        let local = address[..<at]
        let domain = address[address.index(after: at)...]
        let localCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.!#$%&'*+-/=?^_`{|}~")
        guard (1...64).contains(local.utf8.count), local.allSatisfy(localCharacters.contains), !local.hasPrefix("."),
            !local.hasSuffix("."), !local.contains("..")
        else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
    }

    /// Sends `notice` to `address`.
    public func send(_ notice: Notice, to address: String) async throws(DeliveryError) {
        let sender = try Mailbox(settings.from)
        let message = try MailMessage.render(notice, from: settings.from, to: address, date: notice.occurredAt)
        guard (1...65_535).contains(settings.port), !settings.host.isEmpty else {
            throw .permanent("the SMTP relay's host or port is not set")
        }
        if settings.username != nil, !settings.starttls, !settings.implicitTLS {
            throw .permanent("AUTH without STARTTLS would send the password in the clear; refused")
        }
        let tlsContext: NIOSSLContext?
        if settings.starttls || settings.implicitTLS {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let file = settings.trustRootsFile { configuration.trustRoots = .file(file) }
            do {
                tlsContext = try NIOSSLContext(configuration: configuration)
            } catch {
                throw .permanent("the TLS settings cannot be used: \(error)")
            }
        } else {
            tlsContext = nil
        }
        let session = SMTPSession(
            settings: settings, tlsContext: tlsContext, mailFrom: sender.address, recipient: address,
            data: MailMessage.dataSection(message))
        try await session.run(on: eventLoopGroup)
    }
}
