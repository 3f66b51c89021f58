import Foundation
import MQTT
import Postgres
import TestSupport
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// TLS to the broker and to PostgreSQL, with certificates made at test time.
@Suite(.serialized) struct TLSTests {
    static func makeCertificates() throws -> TestCertificates {
        try TestCertificates(in: "\(try TestStack.shared().directory)/\(TestStack.uniqueName("tls"))")
    }

    /// A mosquitto with a TLS listener only, optionally demanding a client certificate.
    static func tlsBroker(_ certificates: TestCertificates, requireClientCertificate: Bool) throws
        -> (BackgroundProcess, Int)
    {
        let port = try freePort()
        let config = "\(certificates.directory)/mosquitto-\(port).conf"
        var text = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            cafile \(certificates.caFile)
            certfile \(certificates.serverCertificateFile)
            keyfile \(certificates.serverKeyFile)
            require_certificate \(requireClientCertificate)

            """
        if getuid() == 0 { text = "user root\n" + text }
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let broker = try BackgroundProcess(
            ["mosquitto", "-c", config], environment: ProcessInfo.processInfo.environment,
            logPath: "\(certificates.directory)/mosquitto-\(port).log")
        return (broker, port)
    }

    /// Connects with `tls` to `host:port`; true when the connection came up.
    static func connects(host: String, port: Int, tls: MQTTConfiguration.TLS) async throws -> Bool {
        var configuration = MQTTConfiguration(clientID: TestStack.uniqueName("tls-"))
        configuration.host = host
        configuration.port = port
        configuration.cleanStart = true
        configuration.sessionExpiryInterval = 0
        configuration.tls = tls
        let client = try MQTTClient(configuration: configuration) { _ in }
        defer { client.stop() }
        do {
            // A failed verification may already fail the first connect, in `start()`.
            try await Blocking.run { try client.start() }
            try await client.waitUntilConnected(timeout: .seconds(4))
            return true
        } catch {
            return false
        }
    }

    @Test func tlsIsOnForMqttsOrAnyTLSFile() {
        var settings = OutletdConfiguration.MQTTSettings()
        #expect(MQTTIntake.tls(settings, base: nil) == nil)
        #expect(MQTTIntake.tls(settings, base: .init()) == .init())
        settings.tlsCAFile = "/etc/outletd/ca.pem"
        #expect(MQTTIntake.tls(settings, base: nil) == .init(caFile: "/etc/outletd/ca.pem"))
        settings.tlsCertificateFile = "/c.pem"
        settings.tlsKeyFile = "/c.key"
        #expect(
            MQTTIntake.tls(settings, base: nil)
                == .init(caFile: "/etc/outletd/ca.pem", certificateFile: "/c.pem", keyFile: "/c.key"))
    }

    @Test func brokerCertificateAndHostNameAreVerified() async throws {
        let certificates = try Self.makeCertificates()
        let (broker, port) = try Self.tlsBroker(certificates, requireClientCertificate: false)
        defer { broker.killAndWait() }
        try await Harness.waitUntil(timeout: 10, "the TLS broker listening") { Self.listening(port) }
        #expect(try await Self.connects(host: "localhost", port: port, tls: .init(caFile: certificates.caFile)))
        // Another CA, or a host name the certificate does not name: refused.
        #expect(!(try await Self.connects(host: "localhost", port: port, tls: .init(caFile: certificates.otherCAFile))))
        #expect(!(try await Self.connects(host: "127.0.0.1", port: port, tls: .init(caFile: certificates.caFile))))
    }

    @Test func clientCertificateWhenTheBrokerDemandsOne() async throws {
        let certificates = try Self.makeCertificates()
        let (broker, port) = try Self.tlsBroker(certificates, requireClientCertificate: true)
        defer { broker.killAndWait() }
        try await Harness.waitUntil(timeout: 10, "the TLS broker listening") { Self.listening(port) }
        #expect(!(try await Self.connects(host: "localhost", port: port, tls: .init(caFile: certificates.caFile))))
        #expect(
            try await Self.connects(
                host: "localhost", port: port,
                tls: .init(
                    caFile: certificates.caFile, certificateFile: certificates.clientCertificateFile,
                    keyFile: certificates.clientKeyFile)))
    }

    @Test func postgresVerifyFull() async throws {
        let certificates = try Self.makeCertificates()
        let stack = try TestStack.startPrivate()
        defer { stack.stop() }
        // The server's key must belong to the database's owner and be private.
        for file in [certificates.serverCertificateFile, certificates.serverKeyFile, certificates.caFile] {
            try TestStack.run(["chown", "postgres:", file])
        }
        try TestStack.run(["chmod", "0600", certificates.serverKeyFile])
        try TestStack.run(["chmod", "0755", certificates.directory])
        let settings = """

            ssl = on
            ssl_cert_file = '\(certificates.serverCertificateFile)'
            ssl_key_file = '\(certificates.serverKeyFile)'

            """
        let conf = "\(stack.directory)/pg/postgresql.conf"
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: conf))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
        try stack.restartPostgres()

        func connect(host: String, rootCertificate: String) -> Bool {
            let url =
                "host=\(host) port=\(stack.postgresPort) user=postgres dbname=postgres "
                + "sslmode=verify-full sslrootcert=\(rootCertificate)"
            guard let connection = try? PostgresConnection(connectionString: url) else { return false }
            defer { connection.close() }
            return (try? connection.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"))?[0, 0] == "t"
        }
        #expect(connect(host: "localhost", rootCertificate: certificates.caFile))
        #expect(!connect(host: "localhost", rootCertificate: certificates.otherCAFile))
        #expect(!connect(host: "127.0.0.1", rootCertificate: certificates.caFile))
    }

    static func listening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
