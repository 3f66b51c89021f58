import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starting child processes for tests with `posix_spawn`.
///
/// Children get an empty signal mask and default signal actions: threads of the test runner have
/// SIGTERM and friends blocked, and a child inheriting that mask could never be stopped with them.
enum ChildProcess {
    /// Serialises spawns with pipe creation, so no child inherits another spawn's pipe ends.
    static let spawnLock = NSLock()

    /// Spawns `arguments[0]` (looked up through `/usr/bin/env`) with the given file actions.
    static func spawn(
        _ arguments: [String], environment: [String: String], actions: inout posix_spawn_file_actions_t
    ) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaultSignals, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ["/usr/bin/env"] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let cEnvironment: [UnsafeMutablePointer<CChar>?] = envp.map { strdup($0) } + [nil]
        defer {
            for pointer in cArguments + cEnvironment { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else {
            throw TestStackError(message: "posix_spawn \(arguments) failed: \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// The exit code of a `waitpid` status (128 + signal number when killed by a signal).
    static func exitCode(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// A long-running child (a daemon under test) whose standard output and error go to a file.
public final class BackgroundProcess: @unchecked Sendable {
    // `exitStatus` is guarded by `lock`; `pid` and `logPath` never change.
    public let pid: pid_t
    public let logPath: String
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `arguments` with `environment` (the whole environment, not merged).
    public init(_ arguments: [String], environment: [String: String], logPath: String) throws {
        self.logPath = logPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        ChildProcess.spawnLock.lock()
        defer { ChildProcess.spawnLock.unlock() }
        pid = try ChildProcess.spawn(arguments, environment: environment, actions: &actions)
    }

    deinit {
        killAndWait()
    }

    /// Kills the child (SIGKILL) if it still runs and reaps it.
    public func killAndWait() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        lock.lock()
        exitStatus = ChildProcess.exitCode(status)
        lock.unlock()
    }

    /// Sends a signal.
    public func signal(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Whether the child has not exited yet (reaps it when it has).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid {
            exitStatus = ChildProcess.exitCode(status)
            return false
        }
        return result == 0
    }

    /// The exit code once the child has exited.
    public var exitCode: Int32? {
        _ = isRunning
        lock.lock()
        defer { lock.unlock() }
        return exitStatus
    }

    /// Waits up to `timeout` seconds for the child to exit; returns its exit code, or nil.
    public func waitForExit(timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let code = exitCode { return code }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return exitCode
    }

    /// Everything the child wrote so far.
    public var output: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }
}
