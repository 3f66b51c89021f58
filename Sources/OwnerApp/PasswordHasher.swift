import Foundation
import HummingbirdBcrypt
import Runtime

/// Hashes and checks owners' passwords with bcrypt. A password is never stored, logged or returned plain.
///
/// bcrypt reads at most 72 bytes and stops at a NUL, so a longer password, or one with a NUL, would share its hash
/// with others. Such passwords are refused when set (``problem(_:)``) and never log in (``verify(_:hash:)``).
public enum PasswordHasher {
    /// bcrypt's cost: 2^12 rounds, about 0.2 s on one core of the reference machine.
    public static let cost: UInt8 = 12
    /// The most bytes of UTF-8 bcrypt reads.
    public static let maximumBytes = 72
    /// The fewest Unicode scalars of a password.
    public static let minimumLength = 8

    /// The bcrypt hash of `password` (`$2b$12$…`).
    public static func hash(_ password: String) -> String {
        Bcrypt.hash(password, cost: cost)
    }

    /// Whether `password` matches `hash`. A password bcrypt would read only in part never matches.
    public static func verify(_ password: String, hash: String) -> Bool {
        guard isWhole(password) else { return false }
        return Bcrypt.verify(password, hash: hash)
    }

    /// Why `password` cannot be set, or nil.
    public static func problem(_ password: String) -> String? {
        if password.unicodeScalars.contains("\0") { return "a password must not contain a NUL character" }
        if password.utf8.count > maximumBytes {
            return "a password may have at most \(maximumBytes) bytes of UTF-8 (bcrypt reads no more)"
        }
        if password.unicodeScalars.count < minimumLength {
            return "a password needs at least \(minimumLength) characters"
        }
        return nil
    }

    /// Whether bcrypt reads all of `password`: no NUL and at most ``maximumBytes``.
    static func isWhole(_ password: String) -> Bool {
        password.utf8.count <= maximumBytes && !password.unicodeScalars.contains("\0")
    }
}

extension PasswordHasher {
    /// A hash of a random password no one knows, checked when the user name does not exist so that such a login
    /// costs the same time as a wrong password.
    static let decoy: String = hash((0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 36) }.joined())
}

/// Checks passwords on threads of its own, never on the database's or Swift's cooperative pool: a few logins
/// cannot delay other owners' queries. At most `threads` checks run and `queueLength` wait; one more is refused at
/// once (``Busy``, a 503) instead of queueing behind them.
final class PasswordChecker: Sendable {
    /// Refused: every thread is busy and the queue is full.
    struct Busy: Error {}

    private struct Job: Sendable {
        let run: @Sendable () -> Void
    }

    private struct State: Sendable {
        var jobs: [Job] = []
        var stopped = false
    }

    let queueLength: Int
    private let state = Guarded(State())

    init(threads: Int, queueLength: Int) {
        self.queueLength = queueLength
        for index in 0..<max(1, threads) {
            let thread = Thread { [state] in Self.work(state) }
            thread.name = "outletd-password-\(index + 1)"
            thread.start()
        }
    }

    /// Whether `password` matches `hash` (``PasswordHasher/verify(_:hash:)``), checked on one of the threads.
    func verify(_ password: String, hash: String) async throws -> Bool {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let job = Job { continuation.resume(returning: PasswordHasher.verify(password, hash: hash)) }
            let accepted = state.update { state -> Bool in
                guard !state.stopped, state.jobs.count < queueLength else { return false }
                state.jobs.append(job)
                return true
            }
            if !accepted { continuation.resume(throwing: Busy()) }
        }
    }

    /// Whether a check asked now would be refused (every thread busy, the queue full). A hint that spares the
    /// database a login that could not be checked; ``verify(_:hash:)`` decides.
    var isFull: Bool {
        state.withLock { $0.jobs.count >= queueLength }
    }

    /// Lets the threads end once the queue is empty.
    func stop() {
        state.update { $0.stopped = true }
    }

    private static func work(_ state: Guarded<State>) {
        while true {
            let job = state.wait(until: nil, for: { !$0.jobs.isEmpty || $0.stopped }) { state, _ -> Job? in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            guard let job else { return }
            job.run()
        }
    }
}
