import Config
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import NIOCore
import Storage

/// Who a request comes from: the session its bearer token stands for, and the token (logout revokes it).
public struct OwnerIdentity: Sendable {
    public var session: OwnerSession
    public var token: String
}

/// What a route of the app may use: the identity the ``BearerTokenAuthenticator`` found, and the client's address
/// (the rate limits count per address), as ``ClientAddressMiddleware`` found it.
public struct OwnerRequestContext: AuthRequestContext, RemoteAddressRequestContext, RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: OwnerIdentity?
    public let remoteAddress: SocketAddress?
    /// The client's address: the connection's peer, or behind a trusted proxy the address it forwarded.
    public var clientAddress: String
    /// The connection the request came on (a live stream resets it when its client does not read).
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        channel = source.channel
        remoteAddress = source.channel.remoteAddress
        clientAddress = remoteAddress?.ipAddress ?? "unknown"
    }

    /// Maximum request body: the API's bodies are a few hundred bytes.
    public var maxUploadSize: Int { 16 * 1024 }
}

/// Sets ``OwnerRequestContext/clientAddress``: the connection's peer, unless the peer is one of
/// `app.trusted_proxies`; then the rightmost address of `X-Forwarded-For` that is not a trusted proxy (each proxy
/// appends the address it saw, so everything left of the first untrusted one could have been written by the
/// client). Without trusted proxies the header is never read.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = OwnerRequestContext
    let trustedProxies: [IPNetwork]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var context = context
        if !trustedProxies.isEmpty {
            let forwarded = request.headers[values: .xForwardedFor]
            context.clientAddress = Self.client(
                peer: context.clientAddress, forwardedFor: forwarded, trustedProxies: trustedProxies)
        }
        return try await next(request, context)
    }

    /// The client's address, from the peer and every `X-Forwarded-For` field in order.
    static func client(peer: String, forwardedFor fields: [String], trustedProxies: [IPNetwork]) -> String {
        func isTrusted(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address) } }
        guard isTrusted(peer) else { return peer }
        let hops = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        var client = peer
        for hop in hops.reversed() {
            // Not an address (garbage, `unknown`, a port): the chain cannot be followed past it.
            guard IPNetwork(hop) != nil, !hop.contains("/") else { return client }
            client = hop
            if !isTrusted(hop) { return hop }
        }
        return client
    }
}

/// Turns `Authorization: Bearer TOKEN` (the scheme in any case, RFC 9110) into an ``OwnerIdentity`` when the
/// token's session is active (not expired, not revoked, its user not disabled); otherwise the request goes on
/// without one and `IsAuthenticatedMiddleware` answers 401.
public struct BearerTokenAuthenticator: AuthenticatorMiddleware {
    public typealias Context = OwnerRequestContext
    let database: OwnerDatabase

    public func authenticate(request: Request, context: Context) async throws -> OwnerIdentity? {
        guard let token = Self.bearerToken(request.headers[.authorization]) else { return nil }
        guard let session = try await database.run({ try $0.session(token: token) }) else { return nil }
        return OwnerIdentity(session: session, token: token)
    }

    /// The token of an `Authorization` value of the bearer scheme, or nil. Tokens are base64url (43 characters
    /// from ``SessionToken``); anything longer than 256 bytes or outside the token68 alphabet is no token.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization, let space = authorization.firstIndex(of: " ") else { return nil }
        guard authorization[..<space].lowercased() == "bearer" else { return nil }
        let token = authorization[authorization.index(after: space)...].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.count <= 256,
            token.utf8.allSatisfy({ Self.token68.contains($0) })
        else { return nil }
        return token
    }

    private static let token68 = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=".utf8))
}
