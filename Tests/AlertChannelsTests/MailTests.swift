import Foundation
import TestSupport
import Testing

@testable import AlertChannels

#if canImport(Glibc)
    import Glibc
#endif

/// Email against aiosmtpd (scripts/alert-receiver smtp): STARTTLS required before AUTH, a certificate made here with
/// openssl, and the message read back by Python's email package.
@Suite(.serialized) struct MailTests {
    /// A relay for one test: its certificate (self-signed, for localhost) and the receiver.
    struct Relay {
        let receiver: AlertReceiver
        let certificate: String
        let implicitTLS: Bool

        init(mechanisms: String? = nil, implicitTLS: Bool = false) async throws {
            self.implicitTLS = implicitTLS
            let directory = try AlertReceiver.makeDirectory()
            certificate = "\(directory)/relay.pem"
            try TestStack.run([
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", "\(directory)/relay.key", "-out",
                certificate,
            ])
            receiver = try await AlertReceiver(
                "smtp",
                ["--cert", certificate, "--key", "\(directory)/relay.key", "--user", "outletd", "--password", "s3cret"]
                    + (mechanisms.map { ["--mechanisms", $0] } ?? []) + (implicitTLS ? ["--implicit-tls"] : []),
                directory: directory)
        }

        func settings(password: String = "s3cret", trust: Bool = true) -> SMTPSettings {
            SMTPSettings(
                host: "localhost", port: receiver.port, starttls: true, implicitTLS: implicitTLS, username: "outletd",
                password: password,
                from: "Alertas do outletd — Casa <alertas@outletd.example>", heloName: "outletd.test",
                timeout: .seconds(20),
                trustRootsFile: trust ? certificate : nil)
        }

        func messages() throws -> [[String: Any]] {
            try receiver.records().filter { $0["event"] as? String == "message" }
        }
    }

    /// Implicit TLS (port 465, RFC 8314): TLS from the first byte, so the first EHLO is already over TLS and no
    /// STARTTLS is asked; the same message arrives, after AUTH. Without it, the relay's TLS is not understood.
    @Test func deliversOverImplicitTLS() async throws {
        let relay = try await Relay(implicitTLS: true)
        try await MailSender(settings: relay.settings()).send(Self.notice(), to: "dono@example.com")
        let records = try await relay.receiver.records(atLeast: 1) { $0["event"] as? String == "message" }
        let message = try #require(records.first)
        #expect(message["tls"] as? Bool == true && message["authenticated"] as? Bool == true, "\(message)")
        #expect((message["body"] as? String ?? "").contains("não envia leituras desde 14:05"))
        let hellos = try relay.receiver.records().filter { $0["event"] as? String == "ehlo" }
        #expect(hellos.count == 1 && hellos.first?["tls"] as? Bool == true, "\(hellos)")

        var plain = relay.settings()
        plain.implicitTLS = false
        plain.timeout = .seconds(3)
        await #expect(throws: DeliveryError.self) {
            try await MailSender(settings: plain).send(Self.notice(), to: "dono@example.com")
        }
        #expect(try relay.messages().count == 1)
    }

    static let text = """
        A tomada “Geladeira” (ABC123) não envia leituras desde 14:05 — verifique a energia e o Wi-Fi.
        .linha que começa com ponto
        .
        Uma linha longa o bastante para passar de setenta e seis caracteres, com acentuação: ção, à, é, õ, ü.\t
        Fim.
        """

    static func notice(id: String = "alert-17-opened-mail-5") -> Notice {
        Notice(
            id: id, subject: "Alerta: tomada “Geladeira” sem sinal há 5 minutos — ação necessária",
            text: text, url: "https://outletd.example/#alerts/17", json: [],
            occurredAt: Date(timeIntervalSince1970: 1_796_300_000))
    }

    /// Delivered over STARTTLS after AUTH PLAIN; the headers and the pt-BR text arrive intact, dot-stuffed lines too.
    @Test func deliversThroughStarttlsAndAuth() async throws {
        let relay = try await Relay()
        try await MailSender(settings: relay.settings()).send(Self.notice(), to: "dono@example.com")
        let message = try #require(
            try await relay.receiver.records(atLeast: 1) { $0["event"] as? String == "message" }.first)
        #expect(message["tls"] as? Bool == true)
        #expect(message["authenticated"] as? Bool == true)
        #expect(message["ehlo"] as? String == "outletd.test")
        #expect(message["mailFrom"] as? String == "alertas@outletd.example")
        #expect(message["rcptTos"] as? [String] == ["dono@example.com"])
        #expect(message["defects"] as? [String] == [])
        let headers = Dictionary(
            ((message["headers"] as? [[String]]) ?? []).map { ($0[0].lowercased(), $0[1]) }, uniquingKeysWith: { $1 })
        #expect(headers["subject"] == Self.notice().subject)
        #expect(headers["from"] == "Alertas do outletd — Casa <alertas@outletd.example>")
        #expect(headers["to"] == "dono@example.com")
        #expect(headers["message-id"] == "<alert-17-opened-mail-5@outletd.example>")
        #expect(headers["date"] == "Thu, 03 Dec 2026 12:13:20 +0000")
        #expect(headers["content-type"] == "text/plain; charset=\"utf-8\"")
        #expect(headers["content-transfer-encoding"] == "quoted-printable")
        #expect(headers["mime-version"] == "1.0")
        #expect(message["body"] as? String == Self.text + "\n\nhttps://outletd.example/#alerts/17\n")
        let raw = try #require(message["raw"] as? String)
        #expect(raw.split(separator: "\r\n", omittingEmptySubsequences: false).allSatisfy { $0.utf8.count <= 78 })
        #expect(raw.unicodeScalars.allSatisfy { $0.isASCII })
        let auth = try relay.receiver.records().filter { $0["event"] as? String == "auth" }
        #expect(auth.map { $0["mechanism"] as? String } == ["PLAIN"])
        let hellos = try relay.receiver.records().filter { $0["event"] as? String == "ehlo" }
        #expect(hellos.map { $0["tls"] as? Bool } == [false, true])
    }

    /// A relay that offers only AUTH LOGIN gets LOGIN.
    @Test func usesAuthLoginWhenThatIsAllThereIs() async throws {
        let relay = try await Relay(mechanisms: "LOGIN")
        try await MailSender(settings: relay.settings()).send(Self.notice(), to: "dono@example.com")
        _ = try await relay.receiver.records(atLeast: 1) { $0["event"] as? String == "message" }
        let auth = try relay.receiver.records().filter { $0["event"] as? String == "auth" }
        #expect(auth.map { $0["mechanism"] as? String } == ["LOGIN"])
    }

    /// Refused credentials and 5xx replies are permanent, 4xx replies retryable; nothing is delivered.
    @Test func repliesAreClassified() async throws {
        let relay = try await Relay()
        let cases: [(SMTPSettings, String, (DeliveryError) -> Bool)] = [
            (
                relay.settings(password: "wrong"), "dono@example.com",
                { !$0.isRetryable && $0.reason.contains("credentials") }
            ),
            (relay.settings(), "busy@example.com", { $0.isRetryable && $0.reason.contains("451") }),
            (relay.settings(), "nobody@example.com", { !$0.isRetryable && $0.reason.contains("550") }),
        ]
        for (settings, address, check) in cases {
            await #expect {
                try await MailSender(settings: settings).send(Self.notice(), to: address)
            } throws: { error in
                guard let error = error as? DeliveryError else { return false }
                return check(error) && !error.reason.contains("wrong") && !error.reason.contains("s3cret")
            }
        }
        #expect(try relay.messages().isEmpty)
    }

    /// A certificate the sender does not trust ends the conversation before AUTH: the password never leaves.
    @Test func anUntrustedCertificateStopsBeforeTheCredentials() async throws {
        let relay = try await Relay()
        await #expect(throws: DeliveryError.self) {
            try await MailSender(settings: relay.settings(trust: false)).send(Self.notice(), to: "dono@example.com")
        }
        #expect(try relay.receiver.records().filter { $0["event"] as? String != "ehlo" }.isEmpty)
    }

    /// CR or LF in a subject, an address or the sender, or an address that is not plain, is refused before connecting.
    @Test(arguments: [
        ("Alerta\r\nBcc: outro@example.com", "dono@example.com", "outletd <alertas@outletd.example>"),
        ("Alerta\nX-Injected: 1", "dono@example.com", "outletd <alertas@outletd.example>"),
        ("Alerta", "dono@example.com\r\nRCPT TO:<outro@example.com>", "outletd <alertas@outletd.example>"),
        ("Alerta", "dono@example.com>", "outletd <alertas@outletd.example>"),
        ("Alerta", "Dono <dono@example.com>", "outletd <alertas@outletd.example>"),
        ("Alerta", "dono@example.com", "outletd\r\nBcc: x@y.example <alertas@outletd.example>"),
        ("Alerta", "dono@example.com", "alertas@outletd.example\r\n"),
    ])
    func refusesHeaderInjection(subject: String, to address: String, from: String) async throws {
        var notice = Self.notice()
        notice.subject = subject
        // Nothing listens on port 9: a refusal that came from connecting would be retryable.
        let sender = MailSender(settings: SMTPSettings(host: "127.0.0.1", port: 9, starttls: true, from: from))
        await #expect {
            try await sender.send(notice, to: address)
        } throws: { error in
            guard case .permanent = error as? DeliveryError else { return false }
            return true
        }
    }

    /// A relay that accepts the connection and never greets: retryable once the timeout has passed.
    @Test func aSilentRelayIsRetryableAfterTheTimeout() async throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 && listen(fd, 8) == 0
            }
        }
        #expect(listening)
        let settings = SMTPSettings(
            host: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port)), from: "a@outletd.example",
            timeout: .seconds(1))
        await #expect {
            try await MailSender(settings: settings).send(Self.notice(), to: "dono@example.com")
        } throws: { error in
            guard case .retryable(let reason) = error as? DeliveryError else { return false }
            return reason.contains("within")
        }
    }

    @Test func credentialsWithoutStarttlsAreRefused() async throws {
        let settings = SMTPSettings(
            host: "127.0.0.1", port: 9, starttls: false, username: "u", password: "p", from: "a@outletd.example")
        await #expect(
            throws: DeliveryError.permanent("AUTH without STARTTLS would send the password in the clear; refused")
        ) {
            try await MailSender(settings: settings).send(Self.notice(), to: "dono@example.com")
        }
    }

    /// Quoted-printable keeps lines within 76 characters, encodes what is not printable ASCII and a space before a
    /// line end; dot-stuffing doubles a leading dot and ends with the lone dot.
    @Test func encodesTheBodyAndStuffsDots() {
        #expect(
            String(decoding: MailMessage.quotedPrintable("ação = 1 \nok"), as: UTF8.self)
                == "a=C3=A7=C3=A3o =3D 1=20\r\nok\r\n")
        let long = String(decoding: MailMessage.quotedPrintable(String(repeating: "é", count: 40)), as: UTF8.self)
        #expect(long.split(separator: "\r\n").allSatisfy { $0.count <= 76 })
        #expect(long.split(separator: "\r\n").dropLast().allSatisfy { $0.hasSuffix("=") })
        #expect(
            String(decoding: MailMessage.dataSection(Array("a\r\n.b\r\n.\r\n..\r\n".utf8)), as: UTF8.self)
                == "a\r\n..b\r\n..\r\n...\r\n.\r\n")
        #expect(MailMessage.encodedHeaderText("plain subject") == "plain subject")
        let encoded = MailMessage.encodedHeaderText(String(repeating: "ç", count: 60))
        #expect(encoded.components(separatedBy: "\r\n ").allSatisfy { $0.count <= 75 && $0.hasPrefix("=?utf-8?B?") })
    }

    @Test(arguments: [
        ("dono@example.com", true), ("a.b+c@sub.example.co", true), ("x@localhost", false), ("@example.com", false),
        ("a@b@example.com", false), ("a b@example.com", false), ("a@exa mple.com", false), ("ação@example.com", false),
        ("a@-example.com", false), (".a@example.com", false), ("a..b@example.com", false), ("a@example..com", false),
        ("a\n@example.com", false), ("\"a\"@example.com", false),
    ])
    func validatesAddresses(address: String, valid: Bool) {
        #expect(MailSender.isValidAddress(address) == valid)
    }
}
