import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The application server's key pair of Web Push (VAPID, RFC 8292): an ECDSA P-256 key that signs a short-lived JWT
/// on every push request. Its public half is the page's `applicationServerKey`: a browser's subscription is bound to
/// it, so losing or changing the key ends every subscription (push services answer 403 or 410).
public struct VAPIDKey: Sendable {
    let privateKey: P256.Signing.PrivateKey

    init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// A new random key.
    public static func generate() -> VAPIDKey {
        VAPIDKey(privateKey: P256.Signing.PrivateKey())
    }

    /// The key from its PEM form (PKCS #8 `PRIVATE KEY` or SEC 1 `EC PRIVATE KEY`).
    public init(pemRepresentation: String) throws {
        privateKey = try P256.Signing.PrivateKey(pemRepresentation: pemRepresentation)
    }

    /// PKCS #8 PEM: what ``loadOrCreate(path:)`` keeps.
    public var pemRepresentation: String { privateKey.pemRepresentation }

    /// The public key, uncompressed (65 bytes), base64url: the page's `applicationServerKey` and the `k` of the
    /// `Authorization` header.
    public var publicKeyBase64URL: String { Base64URL.encode(privateKey.publicKey.x963Representation) }

    /// The key kept at `path`; when there is none, a new one written there (mode 0600) first. Two processes that
    /// start at once end up with the same key: the file appears whole or not at all (a hard link of a finished
    /// temporary file), and the one that loses the race reads the winner's. Instances on different hosts must share
    /// the file (or the same content), since a browser's subscription names one key.
    public static func loadOrCreate(path: String) throws -> VAPIDKey {
        if let existing = try load(path: path) { return existing }
        let key = generate()
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw VAPIDKeyError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        defer { unlink(temporary) }
        let bytes = Array(key.pemRepresentation.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else { throw VAPIDKeyError("cannot write \(temporary)") }
        if link(temporary, path) != 0 {
            guard errno == EEXIST, let winner = try load(path: path) else {
                throw VAPIDKeyError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            return winner
        }
        return key
    }

    /// The key at `path`, nil when there is no file.
    static func load(path: String) throws -> VAPIDKey? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        do {
            return try VAPIDKey(pemRepresentation: pem)
        } catch {
            throw VAPIDKeyError("\(path) holds no P-256 private key in PEM form")
        }
    }

    /// A VAPID JWT (ES256) for the push service at `audience` (its origin), valid until `expiresAt`.
    func token(audience: String, subject: String, expiresAt: Date) throws -> String {
        let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims: [String: Any] = ["aud": audience, "exp": Int(expiresAt.timeIntervalSince1970), "sub": subject]
        let claimsJSON = try JSONSerialization.data(
            withJSONObject: claims, options: [.sortedKeys, .withoutEscapingSlashes])
        let signingInput = header + "." + Base64URL.encode(claimsJSON)
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// A VAPID key that could not be read or kept.
public struct VAPIDKeyError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
