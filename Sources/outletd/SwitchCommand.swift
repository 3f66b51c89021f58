import ArgumentParser
import Commands
import Config
import Daemon
import Foundation
import Observability
import Postgres
import Runtime
import Storage
import Telemetry

/// `outletd switch CODE on|off|toggle [--wait]`: one command from a terminal, through the same lifecycle as MQTT
/// and SQL requests (it records the command; the running outletd sends and confirms it).
/// `outletd switch CODE status`: the outlet's availability and state and its newest commands.
struct SwitchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch", abstract: "Switch an outlet on or off (a running outletd sends the command).")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "The outlet's code.") var code: String
    @Argument(help: "on, off or toggle; status shows the outlet's state and newest commands.") var state: String
    @Flag(help: "Wait for the outcome (confirmed, timed out, expired, superseded…) and print how long it took.")
    var wait = false
    @Option(help: "With --wait: give up waiting after this many seconds.") var timeout: Double = 330
    @Option(help: "Who asks (stored in the audit trail). Default: $USER.") var by: String?
    @OptionGroup var output: OutputOptions
    @Option(help: "With status: how many of the newest commands to show.") var limit: Int = 10

    func run() throws {
        if state.lowercased() == "status" {
            let status = try options.withDatabase { connection in
                try CommandStore(connection: connection).switchStatus(code: code, limit: max(1, limit))
            }
            guard let status else {
                printError("error: no device \(code) is registered")
                throw ExitCode.failure
            }
            print(output.format == .json ? try JSONOutput.render(Self.object(status)) : Self.describe(status))
            return
        }
        guard let value = SwitchRequestValue(rawValue: state.lowercased()) else {
            throw ValidationError("state must be on, off, toggle or status, not \"\(state)\"")
        }
        let requestedBy = by ?? ProcessInfo.processInfo.environment["USER"] ?? "cli"
        let succeeded = try options.withDatabase { connection -> Bool in
            // Listen first, so no transition between the insert and the wait is missed.
            try connection.listen(CommandListener.channel)
            let store = CommandStore(connection: connection)
            let id = try store.enqueue(
                code: code, requested: value, source: .cli, requestedBy: requestedBy, requestID: nil)
            guard var record = try store.find(id) else { throw DeviceStoreError(message: "command \(id) vanished") }
            if record.status == .rejected {
                print(try describe(record))
                return false
            }
            guard wait else {
                // The relay may already have sent it; without --wait the outcome is "accepted".
                if output.format == .json {
                    print(try JSONOutput.render(Self.object(record, status: "accepted")))
                } else {
                    print("command \(id): \(code) \(record.state?.rawValue ?? value.rawValue) accepted")
                }
                return true
            }
            if output.format == .text {
                print("command \(id): \(code) \(record.state?.rawValue ?? value.rawValue), waiting for the outlet…")
            }
            let deadline = Date().addingTimeInterval(timeout)
            while !record.status.isFinal && Date() < deadline {
                _ = try connection.waitForNotifications(timeout: .milliseconds(250))
                record = try store.find(id) ?? record
            }
            print(try describe(record))
            return record.status == .confirmed
        }
        if !succeeded { throw ExitCode.failure }
    }

    /// The record as `--format` asks.
    func describe(_ record: CommandRecord) throws -> String {
        output.format == .json ? try JSONOutput.render(Self.object(record)) : Self.describe(record)
    }

    /// `--format json`: the command's id, outlet, state, status (`accepted` while queued), reason, times and, once
    /// finished, the milliseconds from request to outcome.
    static func object(_ record: CommandRecord, status: String? = nil) -> [String: Any] {
        var latency: Double?
        if let finished = record.finishedAt, let requested = record.requestedAt {
            latency = (finished.timeIntervalSince(requested) * 1_000).rounded()
        }
        return [
            "id": record.id, "code": record.code, "requested": record.requested,
            "state": JSONOutput.value(record.state?.rawValue),
            "status": status ?? (record.status == .queued ? "accepted" : record.status.rawValue),
            "reason": JSONOutput.value(record.reason), "requested_at": JSONOutput.value(record.requestedAt),
            "finished_at": JSONOutput.value(record.finishedAt), "latency_ms": JSONOutput.value(latency),
        ]
    }

    /// `kitchen-1: online, reported on, desired on`, then a table of the newest commands.
    static func describe(_ status: SwitchStatus) -> String {
        let availability = status.online.map { $0 ? "online" : "offline" } ?? "availability unknown"
        var text = "\(status.code): \(availability), reported \(status.reported?.rawValue ?? "-"), "
        text += "desired \(status.desired?.rawValue ?? "-")\n"
        let rows = status.commands.map { record -> [String] in
            var latency = "-"
            if let finished = record.finishedAt, let requested = record.requestedAt {
                latency = "\(Int((finished.timeIntervalSince(requested) * 1_000).rounded())) ms"
            }
            return [
                String(record.id), record.requested, record.state?.rawValue ?? "-",
                record.status == .queued ? "accepted" : record.status.rawValue, record.source,
                record.requestedBy ?? "", record.requestedAt.map(Format.timestamp) ?? "", latency, record.reason ?? "",
            ]
        }
        text += TextTable.render(
            header: ["ID", "ASKED", "STATE", "STATUS", "SOURCE", "BY", "REQUESTED AT", "TOOK", "REASON"], rows: rows)
        return text + "\n\(status.commands.count) command\(status.commands.count == 1 ? "" : "s") shown"
    }

    /// `--format json` of `status`.
    static func object(_ status: SwitchStatus) -> [String: Any] {
        [
            "code": status.code, "online": status.online.map { $0 as Any } ?? NSNull(),
            "reported_state": JSONOutput.value(status.reported?.rawValue),
            "desired_state": JSONOutput.value(status.desired?.rawValue),
            "commands": status.commands.map { record -> [String: Any] in
                var entry = object(record)
                entry["source"] = record.source
                entry["requested_by"] = JSONOutput.value(record.requestedBy)
                return entry
            },
        ]
    }

    /// `command 12: kitchen-1 on confirmed after 23 ms`, with the reason when there is one.
    static func describe(_ record: CommandRecord) -> String {
        var line = "command \(record.id): \(record.code) \(record.state?.rawValue ?? record.requested) "
        line += record.status == .queued ? "accepted" : record.status.rawValue
        if let finished = record.finishedAt, let requested = record.requestedAt {
            line += " after \(Int((finished.timeIntervalSince(requested) * 1_000).rounded())) ms"
        }
        if let reason = record.reason { line += " (\(OwnerText.inert(reason)))" }
        return line
    }
}
