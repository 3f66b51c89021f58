import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real mosquitto and a real PostgreSQL on loopback, started once per test process by
/// `scripts/stack` in a temporary directory and stopped when the process exits.
///
/// Tests never assume a server is running: the first call to ``TestStack/shared()`` starts both.
/// Each test isolates itself with its own database (``createDatabase()``) and its own MQTT topic
/// prefix (``uniqueName(_:)``), so tests can run in parallel against one stack.
public final class TestStack: Sendable {
    /// The folder holding the servers' data, logs and the `env` file.
    public let directory: String
    /// Superuser connection string of the `postgres` database.
    public let adminDatabaseURL: String
    /// `mqtt://127.0.0.1:PORT`, anonymous access allowed.
    public let mqttURL: String
    public let mqttPort: Int
    public let postgresPort: Int

    /// The package's root folder (where `Package.swift` is).
    public static let packageRoot: String = {
        // …/Tests/TestSupport/TestStack.swift → …
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }()

    private static let startResult: Result<TestStack, TestStackError> = {
        do {
            return .success(try TestStack.start())
        } catch let error as TestStackError {
            return .failure(error)
        } catch {
            return .failure(TestStackError(message: "\(error)"))
        }
    }()

    /// The stack of this test process, started on first use.
    public static func shared() throws -> TestStack {
        try startResult.get()
    }

    private init(directory: String, environment: [String: String]) throws {
        self.directory = directory
        guard let db = environment["OUTLETD_DATABASE_URL"], let mqtt = environment["OUTLETD_MQTT_URL"],
            let mqttPort = environment["OUTLETD_MQTT_PORT"].flatMap(Int.init),
            let pgPort = environment["OUTLETD_PG_PORT"].flatMap(Int.init)
        else {
            throw TestStackError(message: "scripts/stack start printed no usable environment: \(environment)")
        }
        self.adminDatabaseURL = db
        self.mqttURL = mqtt
        self.mqttPort = mqttPort
        self.postgresPort = pgPort
    }

    /// Starts a stack of its own (its own PostgreSQL and mosquitto), for tests that disrupt the servers
    /// (``restartPostgres(downFor:)``, ``restartMosquitto(downFor:)``) and so must not share them with tests running
    /// in parallel. Call ``stop()`` when done; it is also stopped when the process exits.
    public static func startPrivate() throws -> TestStack {
        try start()
    }

    /// Stops this stack's servers and removes its folder. Only for stacks from ``startPrivate()``.
    public func stop() {
        TestStackCleanup.stop(directory: directory)
    }

    private static func start() throws -> TestStack {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("outletd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        // Registered first, so that servers started by a half-failed `start` are stopped at exit too.
        TestStackCleanup.register(directory: directory)
        let output = try run(["\(packageRoot)/scripts/stack", "start", directory])
        var environment: [String: String] = [:]
        for line in output.split(separator: "\n") {
            // export NAME=VALUE  or  export NAME='VALUE'
            guard line.hasPrefix("export "), let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[line.index(line.startIndex, offsetBy: 7)..<equals])
            var value = String(line[line.index(after: equals)...])
            if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            environment[name] = value
        }
        return try TestStack(directory: directory, environment: environment)
    }

    /// Creates an empty database for one test and returns its connection string.
    public func createDatabase(prefix: String = "t") throws -> String {
        let name = Self.uniqueName(prefix).lowercased()
        try psql(adminDatabaseURL, "CREATE DATABASE \(name)")
        return "postgresql://postgres@127.0.0.1:\(postgresPort)/\(name)"
    }

    /// Runs SQL through `psql` and returns its unaligned, tuples-only output.
    @discardableResult
    public func psql(_ url: String, _ sql: String) throws -> String {
        try Self.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t", "-c", sql])
    }

    /// Stops PostgreSQL (fast shutdown), waits `seconds`, starts it again.
    public func restartPostgres(downFor seconds: Double = 0) throws {
        try Self.run(["\(Self.packageRoot)/scripts/stack", "pg-restart", directory, String(seconds)])
    }

    /// Stops PostgreSQL immediately (no checkpoint, every connection cut; it recovers from its WAL at start, as
    /// after `kill -9`) and starts it again.
    public func crashPostgres() throws {
        try Self.run(["\(Self.packageRoot)/scripts/stack", "pg-crash", directory])
    }

    /// Stops mosquitto gracefully (persistence on), waits `seconds`, starts it again.
    public func restartMosquitto(downFor seconds: Double = 0) throws {
        try Self.run(["\(Self.packageRoot)/scripts/stack", "mqtt-restart", directory, String(seconds)])
    }

    /// A name no other test in any process uses, e.g. for a topic prefix or a client id.
    public static func uniqueName(_ prefix: String) -> String {
        let random = UInt64.random(in: 0...UInt64.max)
        return "\(prefix)\(String(random, radix: 36))"
    }

    /// Runs a program, waits for it and returns its standard output; throws with its standard
    /// error when it exits non-zero.
    ///
    /// Uses `posix_spawn` + `waitpid` rather than Foundation's `Process`: `Process.waitUntilExit()` was seen to hang
    /// forever after the child had exited, and children spawned from Swift's threads inherited a signal mask with
    /// SIGTERM blocked, so the mosquitto daemon started by `scripts/stack` could never be stopped. Here the child
    /// gets an empty signal mask and default signal actions.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
        let merged = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }

        // Pipes are created close-on-exec under a lock shared by every spawn here, so no child spawned in
        // parallel by another test inherits our pipe ends (a daemon holding one would block our read forever).
        spawnLock.lock()
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        guard makeCloseOnExecPipe(&outputPipe) else {
            spawnLock.unlock()
            throw TestStackError(message: "pipe failed: \(errno)")
        }
        guard makeCloseOnExecPipe(&errorPipe) else {
            spawnLock.unlock()
            close(outputPipe[0])
            close(outputPipe[1])
            throw TestStackError(message: "pipe failed: \(errno)")
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        let spawned = Result { try ChildProcess.spawn(arguments, environment: merged, actions: &actions) }
        spawnLock.unlock()
        close(outputPipe[1])
        close(errorPipe[1])
        let pid: pid_t
        do {
            pid = try spawned.get()
        } catch {
            close(outputPipe[0])
            close(errorPipe[0])
            throw error
        }

        // Read both pipes until both are closed, so a chatty child cannot fill one and block.
        let (output, errorOutput) = readBoth(outputPipe[0], errorPipe[0])
        close(outputPipe[0])
        close(errorPipe[0])

        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw TestStackError(message: "waitpid failed: \(errno)") }
        }
        let exitCode = ChildProcess.exitCode(status)
        guard exitCode == 0 else {
            let message = String(decoding: errorOutput, as: UTF8.self)
            throw TestStackError(message: "\(arguments.joined(separator: " ")) exited \(exitCode): \(message)")
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static var spawnLock: NSLock { ChildProcess.spawnLock }

    private static func makeCloseOnExecPipe(_ descriptors: inout [Int32]) -> Bool {
        guard pipe(&descriptors) == 0 else { return false }
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        return true
    }

    private static func readBoth(_ first: Int32, _ second: Int32) -> ([UInt8], [UInt8]) {
        var buffers: [[UInt8]] = [[], []]
        var descriptors = [
            pollfd(fd: first, events: Int16(POLLIN), revents: 0),
            pollfd(fd: second, events: Int16(POLLIN), revents: 0),
        ]
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while descriptors.contains(where: { $0.fd >= 0 }) {
            if poll(&descriptors, nfds_t(descriptors.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in descriptors.indices where descriptors[index].fd >= 0 && descriptors[index].revents != 0 {
                let count = chunk.withUnsafeMutableBytes { read(descriptors[index].fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    buffers[index].append(contentsOf: chunk[0..<count])
                } else if count == 0 || errno != EINTR {
                    descriptors[index].fd = -1  // closed (or failed): poll ignores negative descriptors
                }
            }
        }
        return (buffers[0], buffers[1])
    }
}

/// A failure to start or use the test stack.
public struct TestStackError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { "TestStack: \(message)" }
}

/// Stops the stacks when the test process exits normally.
private enum TestStackCleanup {
    private static let state = LockedDirectories()

    static func register(directory: String) {
        if state.add(directory) {
            atexit {
                for directory in TestStackCleanup.state.removeAll() {
                    TestStackCleanup.stopNow(directory: directory)
                }
            }
        }
    }

    static func stop(directory: String) {
        if state.remove(directory) {
            stopNow(directory: directory)
        }
    }

    private static func stopNow(directory: String) {
        _ = try? TestStack.run(["\(TestStack.packageRoot)/scripts/stack", "stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The folders of running stacks; guarded by a lock, hence `@unchecked Sendable`.
private final class LockedDirectories: @unchecked Sendable {
    private let lock = NSLock()
    private var directories: [String] = []
    private var registeredExitHandler = false

    /// Adds a folder; returns `true` the first time anything is added (so the exit handler is installed once).
    func add(_ directory: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        directories.append(directory)
        defer { registeredExitHandler = true }
        return !registeredExitHandler
    }

    /// Removes a folder; returns whether it was there.
    func remove(_ directory: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let index = directories.firstIndex(of: directory) else { return false }
        directories.remove(at: index)
        return true
    }

    func removeAll() -> [String] {
        lock.lock()
        defer { lock.unlock() }
        defer { directories = [] }
        return directories
    }
}
