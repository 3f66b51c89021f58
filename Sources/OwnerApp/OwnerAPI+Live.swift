import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /api/v1/live`: the page's live values as server-sent events (``LiveHub``).
extension OwnerAPI {
    /// Opens a stream of the caller's outlets: 401 without an active session (before anything is held), 429 when
    /// the owner has `app.max_live_streams_per_owner` open, 503 when the instance holds `app.max_live_streams` or
    /// streams are off; the page then polls. The stream starts with the outlets as the list route answers them.
    /// Its place is held until its response has ended or its connection closed; a client that does not read has
    /// its connection reset (``LiveConnection``).
    @Sendable func liveOutlets(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let token = try Self.token(request)
        guard let (session, outlets) = try await database.run({ try $0.sessionAndOutlets(token: token) }) else {
            throw HTTPError(.unauthorized)
        }
        guard live.settings.maxStreams > 0 else {
            throw HTTPError(
                .serviceUnavailable, headers: [.retryAfter: "300"],
                message: "live updates are off here (app.max_live_streams: 0); poll GET /api/v1/outlets")
        }
        let openedAt = Date()
        let connection = LiveConnection(channel: context.channel, settings: live.settings, metrics: metrics)
        switch live.open(session: session, outlets: outlets, now: openedAt, onEnd: { connection.streamEnded() }) {
        case .ownerLimit:
            throw HTTPError(
                .tooManyRequests, headers: [.retryAfter: "30"],
                message:
                    "at most \(live.settings.maxStreamsPerOwner) live streams per owner are open at once; close another page"
            )
        case .full:
            throw HTTPError(
                .serviceUnavailable, headers: [.retryAfter: "30"],
                message:
                    "this server holds all the live streams it may (app.max_live_streams); poll GET /api/v1/outlets")
        case .stopped:
            throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "5"], message: "the app is stopping")
        case .admitted(let id, let events):
            // The response may never start (its client left first): the connection's end frees the place then.
            let live = live
            context.channel.closeFuture.whenComplete { _ in live.close(id) }
            let first = LiveHub.opening(outlets, at: openedAt)
            let headers: HTTPFields = [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store",
                .xAccelBuffering: "no",
            ]
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    defer {
                        connection.responseDidEnd()
                        live.close(id)
                    }
                    try await connection.write(first, to: &writer)
                    // Ends when the hub ends the stream (session ended, server stopping), the connection closes or
                    // a write fails (the client left, or did not read in time).
                    for await event in events { try await connection.write(event, to: &writer) }
                    try await connection.finish(&writer)
                })
        }
    }
}
