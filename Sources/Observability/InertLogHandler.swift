import Logging
import Telemetry

/// Wraps the text log handler so that a log line is always one line of inert text: control characters in the
/// message and in metadata (an owner's outlet name, a topic, a database error's detail) are written out as
/// `\n`, `\x1b` (``OwnerText/inert(_:)``). A forged line or a terminal escape in the log is then impossible;
/// the JSON handler gets the same from JSON's own escaping.
public struct InertLogHandler<Wrapped: LogHandler>: LogHandler {
    public var wrapped: Wrapped

    public init(_ wrapped: Wrapped) {
        self.wrapped = wrapped
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: OwnerText.inert(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.inert)
        wrapped.log(event: event)
    }

    static func inert(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(OwnerText.inert(text))
        case .stringConvertible(let value): .string(OwnerText.inert(value.description))
        case .array(let values): .array(values.map(inert))
        case .dictionary(let values): .dictionary(values.mapValues(inert))
        }
    }
}
