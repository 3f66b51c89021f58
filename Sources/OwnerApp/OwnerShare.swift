import Foundation
import Hummingbird
import Runtime

/// What one owner may hold of the app's database at once (docs/SECURITY.md, "One owner cannot take the app's
/// database"): the app has a few database threads (``OwnerDatabase``) that serve every owner's queries in turn, so
/// without a bound one owner's requests, sent from many loops at once, would wait in front of everyone else's. Each
/// owner has at most ``Limits/requests`` requests in the app at once, and at most ``Limits/pricedPeriods`` of them
/// price a period of their own (`GET /api/v1/outlets/{code}?from=…&to=…`, up to a year of rollups); one more is
/// answered 429 with `Retry-After` at once, before it reaches the database.
///
/// A request is counted under its owner when its bearer token is known here (from its login on this instance, or
/// from an earlier request that looked its session up), else under the token itself until then. Tokens are kept
/// only as their hash (Swift's, seeded per process), at most ``maxTokens`` of them: past it they are all forgotten
/// and learned again.
final class OwnerShare: Sendable {
    /// How much of the app one owner may hold at once.
    struct Limits: Sendable {
        /// Requests of one owner in the app at once (the page makes two or three at a time).
        var requests = 8
        /// Of those, requests that price a period asked for (`from`, `to`).
        var pricedPeriods = 1
    }

    /// Whom a request is counted under.
    enum Key: Hashable, Sendable {
        case owner(Int64)
        case token(Int)
    }

    /// A request admitted: give it back with ``leave(_:)``.
    struct Ticket: Sendable {
        let key: Key
        let pricesPeriod: Bool
    }

    private struct State: Sendable {
        var requests: [Key: Int] = [:]
        var pricedPeriods: [Key: Int] = [:]
        var owners: [Int: Int64] = [:]
    }

    let limits: Limits
    let maxTokens: Int
    private let state = Guarded(State())

    init(limits: Limits = Limits(), maxTokens: Int = 100_000) {
        self.limits = limits
        self.maxTokens = maxTokens
    }

    /// The key `token`'s requests count under: its owner once known.
    func key(token: String) -> Key {
        let hash = token.hashValue
        return state.withLock { state in state.owners[hash].map { .owner($0) } ?? .token(hash) }
    }

    /// Remembers that `token` stands for a session of `userID`.
    func learn(token: String, userID: Int64) {
        let hash = token.hashValue
        state.withLock { state in
            guard state.owners[hash] != userID else { return }
            if state.owners.count >= maxTokens { state.owners = [:] }
            state.owners[hash] = userID
        }
    }

    /// Admits one more request of `key` (``Limits/requests``), or one more pricing of a period by a request already
    /// admitted (``Limits/pricedPeriods``); nil when `key` holds its share already.
    func admit(_ key: Key, pricesPeriod: Bool = false) -> Ticket? {
        state.withLock { state -> Ticket? in
            let limit = pricesPeriod ? limits.pricedPeriods : limits.requests
            let held = pricesPeriod ? state.pricedPeriods[key, default: 0] : state.requests[key, default: 0]
            guard held < limit else { return nil }
            if pricesPeriod { state.pricedPeriods[key] = held + 1 } else { state.requests[key] = held + 1 }
            return Ticket(key: key, pricesPeriod: pricesPeriod)
        }
    }

    /// Gives back what `ticket` held.
    func leave(_ ticket: Ticket) {
        state.withLock { state in
            if ticket.pricesPeriod {
                Self.decrement(&state.pricedPeriods, ticket.key)
            } else {
                Self.decrement(&state.requests, ticket.key)
            }
        }
    }

    /// Requests of `key` in the app now (for tests).
    func count(_ key: Key) -> Int {
        state.withLock { $0.requests[key, default: 0] }
    }

    /// The answer to a request beyond its owner's share.
    static func refusal(pricesPeriod: Bool) -> HTTPError {
        HTTPError(
            .tooManyRequests, headers: [.retryAfter: "1"],
            message: pricesPeriod
                ? "one period at a time: another of your requests is pricing one; try again in a second"
                : "too many of your requests at once; try again in a second")
    }

    private static func decrement(_ counts: inout [Key: Int], _ key: Key) {
        let left = counts[key, default: 0] - 1
        counts[key] = left > 0 ? left : nil
    }
}

/// Counts each request that carries a bearer token in its owner's share (``OwnerShare``), before anything else
/// is done for it (the session's look-up included), and answers 429 beyond it.
struct OwnerShareMiddleware: RouterMiddleware {
    typealias Context = OwnerRequestContext
    let share: OwnerShare

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let token = BearerTokenAuthenticator.bearerToken(request.headers[.authorization]) else {
            return try await next(request, context)
        }
        guard let ticket = share.admit(share.key(token: token)) else {
            throw OwnerShare.refusal(pricesPeriod: false)
        }
        defer { share.leave(ticket) }
        return try await next(request, context)
    }

    /// Behind the authenticator: tells the share whose session the request's token stands for, so that the token's
    /// next requests count under its owner.
    struct Learning: RouterMiddleware {
        typealias Context = OwnerRequestContext
        let share: OwnerShare

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
            async throws -> Response
        {
            if let identity = context.identity {
                share.learn(token: identity.token, userID: identity.session.userID)
            }
            return try await next(request, context)
        }
    }
}
