import Foundation

/// A throwaway certificate authority with a server certificate for `localhost` (and nothing
/// else: connecting to 127.0.0.1 must fail host name verification) and a client certificate,
/// made with the `openssl` command at test time.
public struct TestCertificates: Sendable {
    public let directory: String
    public var caFile: String { "\(directory)/ca.pem" }
    public var serverCertificateFile: String { "\(directory)/server.pem" }
    public var serverKeyFile: String { "\(directory)/server.key" }
    public var clientCertificateFile: String { "\(directory)/client.pem" }
    public var clientKeyFile: String { "\(directory)/client.key" }
    /// A second, unrelated CA: trusting it instead must fail.
    public var otherCAFile: String { "\(directory)/other-ca.pem" }

    public init(in directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func openssl(_ arguments: [String]) throws {
            try TestStack.run(["openssl"] + arguments)
        }
        for ca in ["ca", "other-ca"] {
            try openssl([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=outletd test \(ca)",
                "-keyout", "\(directory)/\(ca).key", "-out", "\(directory)/\(ca).pem",
            ])
        }
        for (name, subject, extensions) in [
            ("server", "/CN=localhost", "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth"),
            ("client", "/CN=outletd", "extendedKeyUsage=clientAuth"),
        ] {
            try openssl([
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", "\(directory)/\(name).key",
                "-out", "\(directory)/\(name).csr",
            ])
            try extensions.write(toFile: "\(directory)/\(name).ext", atomically: true, encoding: .utf8)
            try openssl([
                "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", caFile, "-CAkey", "\(directory)/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "\(directory)/\(name).ext",
                "-out", "\(directory)/\(name).pem",
            ])
        }
    }
}
