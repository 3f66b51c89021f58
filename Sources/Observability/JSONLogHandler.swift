import Foundation
import Logging
import Telemetry

/// A swift-log handler writing one JSON object per line to standard error, for log collectors:
/// `{"time":"…","level":"info","label":"outletd","source":"Ingest","message":"…","metadata":{…}}`.
///
/// Nothing here redacts: outletd never puts secrets in log messages or metadata (connection
/// strings are logged through `redactConnectionString` and `MQTTConfiguration.redactedURL`), and
/// a test runs the daemon with passwords in both URLs to hold that line.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public let label: String
    private let output: @Sendable (String) -> Void

    public init(label: String, output: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var line = "{\"time\":" + Self.quoted(Self.timestamp(Date()))
        line += ",\"level\":" + Self.quoted(event.level.rawValue)
        line += ",\"label\":" + Self.quoted(label)
        line += ",\"source\":" + Self.quoted(event.source)
        line += ",\"message\":" + Self.quoted(event.message.description)
        if !merged.isEmpty {
            line += ",\"metadata\":{"
            line += merged.sorted { $0.key < $1.key }.map { Self.quoted($0.key) + ":" + Self.json($0.value) }
                .joined(separator: ",")
            line += "}"
        }
        output(line + "}\n")
    }

    /// Writes to standard error in one `write` per line, so lines of concurrent threads never interleave.
    public static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(2, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): quoted(string)
        case .stringConvertible(let convertible): quoted(convertible.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            "{"
                + dictionary.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + json($0.value) }
                .joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal.
    static func quoted(_ string: String) -> String { jsonString(string) }

    /// RFC 3339 in UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let milliseconds = Int((date.timeIntervalSince1970 - Double(seconds)) * 1_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1_900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }
}
