import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One POST to an owner's URL (a webhook, a push service), the way every channel sends one: the URL checked by
/// `EndpointGuard` now, the connection made to the address it checked (not to whatever the name resolves to a moment
/// later), no redirect followed, the whole exchange within `timeout`.
struct HTTPDelivery {
    /// What came back: the status, the headers, at most the first 4 KiB of the body.
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// The answer's body is read up to this many bytes (for a reason to show); the rest is dropped.
    static let bodyLimit = 4_096

    static func post(
        url: String, headers: HTTPHeaders, body: [UInt8], eventLoopGroup: any EventLoopGroup, allowPrivate: Bool,
        timeout: Duration
    ) async throws(DeliveryError) -> Answer {
        let endpoint = try await EndpointGuard.resolve(url: url, allowPrivate: allowPrivate)
        let client = HTTPClient(
            eventLoopGroup: eventLoopGroup,
            configuration: configuration(for: endpoint, allowPrivate: allowPrivate, timeout: timeout))
        let result: Result<Answer, DeliveryError>
        do {
            var request = HTTPClientRequest(url: endpoint.url.absoluteString)
            request.method = .POST
            request.headers = headers
            request.body = .bytes(body)
            let response = try await client.execute(request, deadline: .now() + .init(timeout))
            var received: [UInt8] = []
            for try await chunk in response.body {
                received.append(contentsOf: chunk.readableBytesView.prefix(bodyLimit - received.count))
                if received.count >= bodyLimit { break }
            }
            result = .success(Answer(status: Int(response.status.code), headers: response.headers, body: received))
        } catch {
            result = .failure(.retryable("no answer: \(describe(error))"))
        }
        try? await client.shutdown()
        return try result.get()
    }

    /// The client of one request: no redirect, no proxy, no decompression, `timeout` for connecting, writing and
    /// reading; the host's name pinned to the address just checked (with private addresses allowed, the resolver's own
    /// choice stands, and an address written in the URL needs no pinning).
    static func configuration(for endpoint: ResolvedEndpoint, allowPrivate: Bool, timeout: Duration)
        -> HTTPClient.Configuration
    {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(timeout), read: .init(timeout), write: .init(timeout)))
        configuration.decompression = .disabled
        configuration.proxy = nil
        if !allowPrivate, IPAddress(endpoint.host) == nil {
            configuration.dnsOverride = [endpoint.host: endpoint.pinned.description]
        }
        return configuration
    }

    /// An error's text without the URL (which may carry a token of its own).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: type(of: error)) + ": " + "\(error)".prefix(200)
    }

    /// The first line of an answer's body, for a reason (printable ASCII, at most 120 characters).
    static func snippet(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(400), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return String(line.filter { $0.isASCII && !$0.isNewline && ($0 == " " || !$0.isWhitespace) }.prefix(120))
    }
}
