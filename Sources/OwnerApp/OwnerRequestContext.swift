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
/// (the login rate limit counts per address).
public struct OwnerRequestContext: AuthRequestContext, RemoteAddressRequestContext, RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: OwnerIdentity?
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        remoteAddress = source.channel.remoteAddress
    }

    /// Maximum request body: the API's bodies are a few hundred bytes.
    public var maxUploadSize: Int { 16 * 1024 }
}

/// Turns `Authorization: Bearer TOKEN` into an ``OwnerIdentity`` when the token's session is active (not expired,
/// not revoked, its user not disabled); otherwise the request goes on without one and `IsAuthenticatedMiddleware`
/// answers 401.
public struct BearerTokenAuthenticator: AuthenticatorMiddleware {
    public typealias Context = OwnerRequestContext
    let database: OwnerDatabase

    public func authenticate(request: Request, context: Context) async throws -> OwnerIdentity? {
        guard let bearer = request.headers.bearer, !bearer.token.isEmpty, bearer.token.utf8.count <= 256 else {
            return nil
        }
        let token = bearer.token
        guard let session = try await database.run({ try $0.session(token: token) }) else { return nil }
        return OwnerIdentity(session: session, token: token)
    }
}
