import Foundation
import Runtime
import Telemetry
import TestSupport

/// A client of a running app server (`url`: its database), with the passwords of the users `ana` and `bob` that
/// the app tests add.
public struct AppClient: Sendable {
    public init(url: String, port: Int) {
        self.url = url
        self.port = port
    }

    public let url: String
    public let port: Int
    public let passwords = ["ana": "ana-password-1", "bob": "bob-password-2"]

    /// One HTTP exchange with the app (on a thread of its own: the socket blocks).
    public func send(_ method: String, _ path: String, token: String? = nil, body: String? = nil) async throws
        -> AppResponse
    {
        let port = self.port
        return try await Blocking.run("app-test-http") {
            try AppResponse.exchange(port: port, method: method, path: path, token: token, body: body)
        }
    }

    public func login(_ user: String) async throws -> String {
        let response = try await send(
            "POST", "/api/v1/login", body: #"{"username":"\#(user)","password":"\#(passwords[user] ?? "")"}"#)
        guard response.status == 200, case .string(let token)? = response.json?["token"] else {
            throw HarnessError("login of \(user): \(response.status) \(response.body)")
        }
        return token
    }

    public func sql(_ statement: String) throws -> String {
        try Harness.scalar(url, statement)
    }

    /// A claim's body for `code` with its claim key (a made-up key for a code that is not registered).
    public func claimBody(_ code: String, _ name: String, description: String? = nil) throws -> String {
        let key = try sql("SELECT coalesce(max(claim_key), '00000000000Z') FROM devices WHERE code = '\(code)'")
        var body = #"{"code":"\#(code)","claim_key":"\#(key)","name":"\#(name)""#
        if let description { body += #","description":"\#(description)""# }
        return body + "}"
    }
}

/// An HTTP/1.1 answer, read to the end of the connection.
public struct AppResponse: Sendable {
    public var status: Int
    public var headers: String
    public var body: String
    public var json: JSONValue? { try? JSONParser.parse(Array(body.utf8)) }

    /// Sends one request to 127.0.0.1:`port` over a fresh connection (`Connection: close`).
    /// `headers` are sent as given (`Authorization`, `X-Forwarded-For`); `contentType` goes with a body (nil: none).
    public static func exchange(
        port: Int, method: String, path: String, token: String?, body: String?, headers: [String] = [],
        contentType: String? = "application/json"
    ) throws -> AppResponse {
        guard let fd = HTTPProbe.connect(port: port, timeoutSeconds: 15) else {
            throw HarnessError("cannot connect to 127.0.0.1:\(port)")
        }
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for header in headers { head += header + "\r\n" }
        let payload = Array((body ?? "").utf8)
        if body != nil, let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "Content-Length: \(payload.count)\r\n\r\n"
        let request = Array(head.utf8) + payload
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { throw HarnessError("send failed") }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received.append(contentsOf: chunk[0..<count])
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let headerEnd = text.range(of: "\r\n\r\n") else { throw HarnessError("no HTTP answer: \(text)") }
        let headers = String(text[..<headerEnd.lowerBound])
        let parts = (headers.split(separator: "\r\n").first ?? "").split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw HarnessError("no status: \(headers)") }
        var body = String(text[headerEnd.upperBound...])
        if headers.lowercased().contains("transfer-encoding: chunked") { body = Self.unchunk(body) }
        return AppResponse(status: status, headers: headers, body: body)
    }

    /// The body of a chunked transfer.
    public static func unchunk(_ text: String) -> String {
        var bytes = Array(text.utf8)[...]
        var body: [UInt8] = []
        while let lineEnd = bytes.firstRange(of: Array("\r\n".utf8)) {
            let size =
                Int(String(decoding: bytes[bytes.startIndex..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? 0
            if size == 0 { break }
            let start = lineEnd.upperBound
            let end = min(bytes.endIndex, start + size)
            body += bytes[start..<end]
            bytes = bytes[min(bytes.endIndex, end + 2)...]
        }
        return String(decoding: body, as: UTF8.self)
    }
}
