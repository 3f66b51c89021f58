import Foundation

/// One of scripts/alert-receiver's receivers (Web Push, webhook, SMTP), written against packages by others, running
/// on 127.0.0.1 for one test; what it received is read back from its record file.
public final class AlertReceiver: Sendable {
    public let port: Int
    public let directory: String
    public let process: BackgroundProcess
    public var recordPath: String { "\(directory)/record.jsonl" }

    /// .build/alert-venv's Python, the environment made by scripts/alert-venv the first time a test needs it.
    public static let python: Result<String, ReceiverError> = {
        do {
            try TestStack.run(["\(TestStack.packageRoot)/scripts/alert-venv"])
            return .success("\(TestStack.packageRoot)/.build/alert-venv/bin/python3")
        } catch {
            return .failure(ReceiverError("scripts/alert-venv: \(error)"))
        }
    }()

    /// A fresh directory for a test's files.
    public static func makeDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + TestStack.uniqueName("outletd-alert-")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Starts `alert-receiver <mode> <arguments>` and waits until it listens.
    public init(_ mode: String, _ arguments: [String], directory: String? = nil) async throws {
        let python = try Self.python.get()
        self.directory = try directory ?? Self.makeDirectory()
        port = try freePort()
        process = try BackgroundProcess(
            [
                python, "\(TestStack.packageRoot)/scripts/alert-receiver", mode, "--port", String(port),
                "--record", "\(self.directory)/record.jsonl",
            ] + arguments,
            environment: ProcessInfo.processInfo.environment, logPath: "\(self.directory)/receiver.log")
        let deadline = Date().addingTimeInterval(60)
        while !process.output.contains("listening") {
            guard process.isRunning, Date() < deadline else {
                throw ReceiverError("alert-receiver \(mode) did not start: \(process.output)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    deinit {
        process.killAndWait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Every record so far.
    public func records() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: recordPath, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map {
            guard let object = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else {
                throw ReceiverError("not a JSON object: \($0)")
            }
            return object
        }
    }

    /// The records once there are at least `count` matching `filter` (waiting up to 30 s).
    public func records(atLeast count: Int, where filter: ([String: Any]) -> Bool = { _ in true }) async throws
        -> [[String: Any]]
    {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let found = try records().filter(filter)
            if found.count >= count { return found }
            guard Date() < deadline else {
                throw ReceiverError("\(found.count) records, not \(count): \(process.output)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String = "/") -> String {
        "http://127.0.0.1:\(port)\(path)"
    }
}

extension [String: Any] {
    /// A header's value, by name in any case.
    public func header(_ name: String) -> String? {
        guard let headers = self["headers"] as? [String: String] else { return nil }
        return headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// A receiver that did not start or did not receive what was expected.
public struct ReceiverError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
