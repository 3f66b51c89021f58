import CMosquitto

#if canImport(Glibc)
    import Glibc
#endif

/// An error from the MQTT module: what went wrong (``code``), a readable ``message`` taken from
/// libmosquitto (`mosquitto_strerror`, `mosquitto_reason_string`) or the system, and, when the
/// error came from libmosquitto, its raw ``libraryCode``.
///
/// The description never contains a password: messages name hosts and topics only.
public struct MQTTError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure, for code that wants to react to it (retry, give up, report).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The URL could not be parsed or uses an unsupported scheme.
        public static let invalidURL = Code("invalidURL")
        /// The broker could not be reached (TCP refused) or refused the CONNECT (CONNACK reason code).
        public static let connectionRefused = Code("connectionRefused")
        /// The operation needs a connection and there is none (`MOSQ_ERR_NO_CONN`), or the connection
        /// was lost (`MOSQ_ERR_CONN_LOST`).
        public static let noConnection = Code("noConnection")
        /// The broker broke the MQTT protocol or sent a malformed packet.
        public static let protocolError = Code("protocolError")
        /// The payload is larger than MQTT or the broker allows.
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// A TLS failure (TLS is not supported yet; reserved).
        public static let tls = Code("tls")
        /// Any other libmosquitto error; see ``MQTTError/libraryCode``.
        public static let library = Code("library")
        /// A wait ran out of time.
        public static let timeout = Code("timeout")
        /// The client has not been started.
        public static let notStarted = Code("notStarted")
        /// The client has been stopped; a stopped client cannot be started again.
        public static let stopped = Code("stopped")
        /// The broker's host name could not be resolved (`MOSQ_ERR_EAI`, `MOSQ_ERR_LOOKUP`).
        public static let hostNotFound = Code("hostNotFound")
        /// An argument was rejected: bad topic, filter, QoS, client id or option value
        /// (`MOSQ_ERR_INVAL`, `MOSQ_ERR_MALFORMED_UTF8`, …).
        public static let invalidArgument = Code("invalidArgument")

        public var description: String { name }
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, in words, with the library's or system's explanation.
    public var message: String
    /// The `MOSQ_ERR_*` value, or the MQTT v5 reason code for CONNACK/PUBACK/DISCONNECT failures; `nil`
    /// when the error did not come from libmosquitto.
    public var libraryCode: Int32?

    /// Creates an error.
    public init(code: Code, message: String, libraryCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.libraryCode = libraryCode
    }

    public var description: String {
        "MQTTError.\(code): \(message)"
    }
}

extension MQTTError {
    /// The one place where a libmosquitto return value becomes Swift: `MOSQ_ERR_SUCCESS` passes, anything
    /// else throws an error whose message is `context: mosquitto_strerror(rc)`.
    ///
    /// Call it right after the C call: for `MOSQ_ERR_ERRNO` the message comes from `errno`.
    static func check(_ returnCode: Int32, _ context: @autoclosure () -> String) throws(MQTTError) {
        guard returnCode != MOSQ_ERR_SUCCESS.rawValue else { return }
        throw MQTTError(libraryReturnCode: returnCode, context: context())
    }

    /// Wraps a `MOSQ_ERR_*` value. Reads `errno` for `MOSQ_ERR_ERRNO`, so create it right after the call.
    init(libraryReturnCode returnCode: Int32, context: String) {
        let savedErrno = errno
        var explanation = Self.libraryMessage(returnCode)
        var code: Code
        switch returnCode {
        case MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_KEEPALIVE.rawValue:
            code = .noConnection
        case MOSQ_ERR_CONN_REFUSED.rawValue, MOSQ_ERR_AUTH.rawValue:
            code = .connectionRefused
        case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue, MOSQ_ERR_DUPLICATE_PROPERTY.rawValue,
            MOSQ_ERR_TOPIC_ALIAS_INVALID.rawValue:
            code = .protocolError
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue, MOSQ_ERR_OVERSIZE_PACKET.rawValue:
            code = .payloadTooLarge
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue, MOSQ_ERR_OCSP.rawValue:
            code = .tls
        case MOSQ_ERR_EAI.rawValue, MOSQ_ERR_LOOKUP.rawValue:
            code = .hostNotFound
        case MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue, MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue,
            MOSQ_ERR_RETAIN_NOT_SUPPORTED.rawValue:
            code = .invalidArgument
        case MOSQ_ERR_TIMEOUT.rawValue:
            code = .timeout
        case MOSQ_ERR_ERRNO.rawValue:
            explanation = String(cString: strerror(savedErrno))
            switch savedErrno {
            case ECONNREFUSED, ECONNRESET, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT:
                code = .connectionRefused
            default:
                code = .library
            }
        default:
            code = .library
        }
        self.init(code: code, message: "\(context): \(explanation)", libraryCode: returnCode)
    }

    /// Wraps a failed MQTT v5 reason code (CONNACK, PUBACK, SUBACK, DISCONNECT; values of 0x80 and up).
    init(reasonCode: Int32, context: String, code: Code) {
        self.init(code: code, message: "\(context): \(Self.reasonMessage(reasonCode))", libraryCode: reasonCode)
    }

    /// `mosquitto_strerror`, as a Swift string.
    static func libraryMessage(_ returnCode: Int32) -> String {
        guard let text = mosquitto_strerror(returnCode) else { return "libmosquitto error \(returnCode)" }
        return String(cString: text)
    }

    /// `mosquitto_reason_string`, as a Swift string.
    static func reasonMessage(_ reasonCode: Int32) -> String {
        guard let text = mosquitto_reason_string(reasonCode) else { return "reason code \(reasonCode)" }
        return String(cString: text)
    }
}
