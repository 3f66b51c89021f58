/// How an ``MQTTClient`` reaches its broker and what session it asks for.
///
/// The defaults suit a durable subscriber: MQTT v5, clean start off and a one-day Session Expiry
/// Interval, so the broker keeps the subscriptions and queues QoS 1 messages while the client is away.
public struct MQTTConfiguration: Sendable {
    /// Broker host name or IP address (IPv6 without brackets).
    public var host: String = "127.0.0.1"
    /// Broker TCP port.
    public var port: Int = 1883
    /// User name sent in CONNECT, if any.
    public var username: String?
    /// Password sent in CONNECT, if any. Never logged: use ``redactedURL`` in logs.
    public var password: String?
    /// The client identifier; with ``cleanStart`` false it names the session the broker keeps for us,
    /// so it must be stable per instance and unique among the broker's clients.
    public var clientID: String
    /// Whether to discard any stored session on every connect (MQTT v5 Clean Start).
    public var cleanStart: Bool = false
    /// How long, in seconds, the broker keeps the session after the connection ends (MQTT v5 CONNECT
    /// property). With ``cleanStart`` false the broker keeps the session and queues QoS 1 messages while we
    /// are away. 0 ends the session with the connection.
    public var sessionExpiryInterval: UInt32 = 86_400
    /// Keepalive in seconds (at least 5): the broker drops us after 1.5 × this without traffic.
    public var keepAliveSeconds: Int = 30
    /// First reconnect delay in seconds (at least 1).
    public var reconnectDelayMin: Int = 1
    /// Longest reconnect delay in seconds; the delay grows from ``reconnectDelayMin`` up to this
    /// (`mosquitto_reconnect_delay_set` with backoff on).
    public var reconnectDelayMax: Int = 30
    /// In-flight QoS 1/2 messages the broker may send us before waiting for our acknowledgements
    /// (1…65535, CONNECT Receive Maximum). A blocked `onMessage` fills this window; the broker then queues.
    public var receiveMaximum: Int = 1_000
    /// Our in-flight outgoing QoS 1/2 publishes (1…65535); further publishes wait in libmosquitto's queue.
    public var sendMaximum: Int = 1_000
    /// Message the broker publishes if our connection dies without a DISCONNECT.
    public var will: MQTTMessage.Will? = nil
    /// TLS to the broker (`mqtts://`); nil for plain TCP.
    public var tls: TLS? = nil

    /// TLS settings. The broker's certificate is always verified, host name included.
    public struct TLS: Sendable, Equatable {
        /// PEM file of the CA(s) that signed the broker's certificate; nil trusts the system's CAs
        /// (`/etc/ssl/certs`).
        public var caFile: String?
        /// PEM client certificate and its key, for brokers that authenticate clients by certificate.
        public var certificateFile: String?
        public var keyFile: String?

        public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// A configuration for `127.0.0.1:1883` with all defaults.
    public init(clientID: String) {
        self.clientID = clientID
    }

    /// Parses `mqtt://[user[:password]@]host[:port][/]`.
    ///
    /// The port defaults to 1883 (8883 for `mqtts://`, which turns on ``tls`` with the system's CAs);
    /// user and password are percent-decoded; IPv6 hosts are written in brackets (`mqtt://[::1]:1883`).
    public init(url: String, clientID: String) throws(MQTTError) {
        self.init(clientID: clientID)
        let parsed = try MQTTURLParser.parse(url)
        host = parsed.host
        port = parsed.port
        username = parsed.username
        password = parsed.password
        if parsed.tls { tls = TLS() }
    }

    /// The broker URL with the password replaced by `***`, for logs.
    public var redactedURL: String {
        var text = tls == nil ? "mqtt://" : "mqtts://"
        if let username {
            text += MQTTURLParser.percentEncode(username)
            if password != nil { text += ":***" }
            text += "@"
        } else if password != nil {
            text += ":***@"
        }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)"
        return text
    }
}

/// Parsing of `mqtt://` URLs, separate so that it stays pure and testable.
enum MQTTURLParser {
    struct Parsed: Equatable {
        var host: String
        var port: Int
        var username: String?
        var password: String?
        var tls = false
    }

    static func parse(_ url: String) throws(MQTTError) -> Parsed {
        // Never put `url` itself into an error message: it may carry a password.
        guard let schemeEnd = url.range(of: "://") else {
            throw invalid("expected mqtt://[user[:password]@]host[:port]")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        let tls: Bool
        switch scheme {
        case "mqtt", "tcp":
            tls = false
        case "mqtts", "ssl", "tls":
            tls = true
        default:
            throw invalid("unsupported scheme \"\(scheme)\", expected mqtt:// or mqtts://")
        }
        var authority = url[schemeEnd.upperBound...]
        if let slash = authority.firstIndex(of: "/") {
            guard authority[slash...] == "/" else { throw invalid("a path is not supported") }
            authority = authority[..<slash]
        }
        guard !authority.contains("?"), !authority.contains("#") else {
            throw invalid("query and fragment are not supported")
        }

        var username: String?
        var password: String?
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                username = try percentDecode(userInfo[..<colon], what: "user name")
                password = try percentDecode(userInfo[userInfo.index(after: colon)...], what: "password")
            } else {
                username = try percentDecode(userInfo, what: "user name")
            }
            if username == "" { username = nil }
        }

        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("unterminated [ in IPv6 host") }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let rest = hostPort[hostPort.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid("unexpected text after ]") }
                portText = rest.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
            guard !host.contains(":") else { throw invalid("IPv6 hosts must be written in brackets") }
        } else {
            host = hostPort
        }
        guard !host.isEmpty else { throw invalid("empty host") }
        guard !host.contains(where: { $0 == " " || $0 == "%" || $0 == "@" }) else {
            throw invalid("bad character in host")
        }

        var port = tls ? 8883 : 1883
        if let portText {
            guard let value = Int(portText), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                (1...65_535).contains(value)
            else {
                throw invalid("port must be a number from 1 to 65535")
            }
            port = value
        }
        return Parsed(host: String(host), port: port, username: username, password: password, tls: tls)
    }

    private static func invalid(_ reason: String) -> MQTTError {
        MQTTError(code: .invalidURL, message: "invalid MQTT URL: \(reason)")
    }

    static func percentDecode(_ text: Substring, what: String) throws(MQTTError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw invalid("bad percent-encoding in \(what)")
            }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw invalid("\(what) is not valid UTF-8 after percent-decoding")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func percentEncode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += byte < 16 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return result
    }
}
