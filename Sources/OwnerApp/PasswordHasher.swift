import HummingbirdBcrypt

/// Hashes and checks owners' passwords with bcrypt. A password is never stored, logged or returned plain.
public enum PasswordHasher {
    /// bcrypt's cost: 2^12 rounds, about 0.2 s on one core of the reference machine.
    public static let cost: UInt8 = 12

    /// The bcrypt hash of `password` (`$2b$12$…`).
    public static func hash(_ password: String) -> String {
        Bcrypt.hash(password, cost: cost)
    }

    /// Whether `password` matches `hash`.
    public static func verify(_ password: String, hash: String) -> Bool {
        Bcrypt.verify(password, hash: hash)
    }
}

extension PasswordHasher {
    /// A hash of a random password no one knows, checked when the user name does not exist so that such a login
    /// costs the same time as a wrong password.
    static let decoy: String = hash((0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 36) }.joined())
}
