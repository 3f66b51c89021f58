import ArgumentParser
import Config
import Daemon
import Foundation
import Logging
import Observability
import Postgres
import Runtime
import Storage
import Telemetry

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "Configuration file (YAML). Default: $OUTLETD_CONFIG, else /etc/outletd/outletd.yaml.")
    var config: String?

    /// The configuration file to read, if any.
    var configurationFile: String? {
        if let config { return config }
        if let fromEnvironment = ProcessInfo.processInfo.environment["OUTLETD_CONFIG"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        let system = "/etc/outletd/outletd.yaml"
        return FileManager.default.fileExists(atPath: system) ? system : nil
    }

    /// Loads the configuration or exits with every problem listed.
    func loadConfiguration() throws -> OutletdConfiguration {
        do {
            return try ConfigurationLoader().load(
                file: configurationFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError(error.description)
            throw ExitCode(78)  // EX_CONFIG
        }
    }

    /// Loads the configuration and sets up logging at its level.
    func bootstrap(label: String = "outletd") throws -> (OutletdConfiguration, Logger) {
        let configuration = try loadConfiguration()
        let level = Logger.Level(rawValue: configuration.logging.level) ?? .info
        LoggingBootstrap.once(json: configuration.logging.format == "json")
        var logger = Logger(label: label)
        logger.logLevel = level
        return (configuration, logger)
    }

    /// Loads the configuration, connects, runs `body` with the connection, closes it; errors become
    /// one readable line and exit code 1.
    func withDatabase<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let configuration = try loadConfiguration()
        let connection = try connect(configuration)
        defer { connection.close() }
        return try reportingErrors { try body(connection) }
    }

    /// A database connection for a CLI command, with a clear message when it fails.
    func connect(_ configuration: OutletdConfiguration) throws -> PostgresConnection {
        do {
            return try PostgresConnection(connectionString: configuration.database.url, applicationName: "outletd-cli")
        } catch {
            var message =
                "cannot connect to PostgreSQL at \(redactConnectionString(configuration.database.url)): "
                + error.oneLineMessage
            if configuration.database.url == OutletdConfiguration.Database.defaultURL {
                message += """

                    No database URL is set, so outletd tried its default. Set one, e.g.
                      export OUTLETD_DATABASE_URL='postgresql://outletd:PASSWORD@db.example:5432/outletd'
                    or database.url in the configuration file (--config FILE, $OUTLETD_CONFIG, \
                    /etc/outletd/outletd.yaml), or OUTLETD_DATABASE_URL_FILE for a file holding it.
                    """
            }
            printError(message)
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
    }
}

/// swift-log allows one bootstrap per process.
enum LoggingBootstrap {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var done = false  // guarded by `lock`

    static func once(json: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        done = true
        LoggingSystem.bootstrap { label in
            // Each Logger sets its own level.
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = .trace
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .trace
            return InertLogHandler(handler)
        }
    }
}

/// How a command that prints a table prints it: `text` for people, `json` for scripts (one JSON document).
enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}

/// `--format text|json`, for every command that prints a table.
struct OutputOptions: ParsableArguments {
    @Option(help: "text (a table for people) or json (for scripts).") var format: OutputFormat = .text
}

/// JSON for `--format json`: keys sorted, times in RFC 3339 (UTC), absent values as null, and every control
/// character inside a string escaped (`\u001b`, `\u009b`), so that a stored name cannot act on a terminal.
enum JSONOutput {
    /// A value JSONSerialization accepts: dates become RFC 3339 strings, nil becomes null.
    static func value(_ date: Date?) -> Any { date.map(Format.timestamp) ?? NSNull() }
    static func value(_ text: String?) -> Any { text ?? NSNull() }
    static func value(_ number: Double?) -> Any { number ?? NSNull() }

    /// `object` as one line of JSON.
    static func render(_ object: Any) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return OwnerText.inertJSON(String(decoding: data, as: UTF8.self))
    }
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Runs a CLI action, turning the project's errors into one readable line and exit code 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as ExitCode {
        throw error
    } catch let error as DeviceStoreError {
        printError("error: \(error.message)")
        throw ExitCode.failure
    } catch let error as PostgresError {
        printError("error: \(error.oneLineMessage)")
        throw ExitCode.failure
    } catch {
        printError("error: \(error)")
        throw ExitCode.failure
    }
}
