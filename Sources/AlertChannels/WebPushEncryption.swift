import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291): the `aes128gcm` content coding (RFC 8188) with one record, keyed by
/// ECDH between a fresh P-256 key of ours and the browser's `p256dh`, mixed with its `auth` secret by HKDF-SHA-256.
public enum WebPushEncryption {
    /// The record size written in the header: one record holds the whole message.
    public static let recordSize: UInt32 = 4_096
    /// The header: salt (16), record size (4), key id length (1), our public key (65).
    public static let headerLength = 86
    /// The largest plaintext sent: push services take bodies of up to 4,096 bytes (RFC 8030 §7.2), and the record
    /// adds the header, a delimiter byte and the 16-byte tag.
    public static let maximumPlaintext = 4_096 - headerLength - 1 - 16

    /// `plaintext` encrypted for the browser whose public key (uncompressed, 65 bytes) and auth secret (16 bytes) are
    /// given, with a random salt and a fresh key pair.
    public static func encrypt(
        _ plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8]
    ) throws(DeliveryError) -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        return try encrypt(
            plaintext, userAgentPublicKey: userAgentPublicKey, authSecret: authSecret, salt: salt,
            ephemeralKey: P256.KeyAgreement.PrivateKey())
    }

    /// As ``encrypt(_:userAgentPublicKey:authSecret:)`` with the salt and our key pair given: only tests pass them
    /// (RFC 8291 Appendix A); reusing either for two messages would give the messages away.
    static func encrypt(
        _ plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8], salt: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey
    ) throws(DeliveryError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintext else {
            throw .permanent("the push message is \(plaintext.count) bytes; at most \(maximumPlaintext) fit")
        }
        guard authSecret.count == 16, salt.count == 16 else { throw .permanent("the auth secret is not 16 bytes") }
        let userAgentKey: P256.KeyAgreement.PublicKey
        do {
            userAgentKey = try P256.KeyAgreement.PublicKey(x963Representation: userAgentPublicKey)
        } catch {
            throw .permanent("the subscription's p256dh is not a P-256 public key")
        }
        do {
            let ecdhSecret = try ephemeralKey.sharedSecretFromKeyAgreement(with: userAgentKey)
                .withUnsafeBytes { Array($0) }
            let ourPublicKey = Array(ephemeralKey.publicKey.x963Representation)
            // RFC 8291 §3.4: PRK_key = HMAC(auth_secret, ecdh_secret); IKM = HMAC(PRK_key, key_info || 0x01).
            let keyInfo = Array("WebPush: info".utf8) + [0] + userAgentPublicKey + ourPublicKey
            let prkKey = hmac(key: authSecret, ecdhSecret)
            let ikm = hmac(key: prkKey, keyInfo + [1])
            // RFC 8188 §2.2: PRK = HMAC(salt, IKM); CEK and NONCE are its first expansions.
            let prk = hmac(key: salt, ikm)
            let contentKey = hmac(key: prk, Array("Content-Encoding: aes128gcm".utf8) + [0, 1]).prefix(16)
            let nonce = hmac(key: prk, Array("Content-Encoding: nonce".utf8) + [0, 1]).prefix(12)
            // One record, the last: the plaintext, the delimiter 0x02, no padding.
            let sealed = try AES.GCM.seal(
                plaintext + [2], using: SymmetricKey(data: contentKey), nonce: AES.GCM.Nonce(data: nonce))
            var header = salt
            header += withUnsafeBytes(of: recordSize.bigEndian) { Array($0) }
            header.append(UInt8(ourPublicKey.count))
            header += ourPublicKey
            return header + Array(sealed.ciphertext) + Array(sealed.tag)
        } catch {
            throw .permanent("encrypting the push message failed: \(error)")
        }
    }

    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}
