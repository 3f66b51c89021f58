import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /api/v1/live`: the page's live values as server-sent events (``LiveHub``).
extension OwnerAPI {
    /// Opens a stream of the caller's outlets: 401 without an active session (before anything is held), 429 when
    /// the owner has `app.max_live_streams_per_owner` open, 503 when the instance holds `app.max_live_streams` or
    /// streams are off; the page then polls. The stream starts with the outlets as the list route answers them.
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
        switch live.open(session: session, outlets: outlets, now: openedAt) {
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
        case .admitted(_, let events):
            let first = LiveHub.opening(outlets, at: openedAt)
            let headers: HTTPFields = [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store",
                .xAccelBuffering: "no",
            ]
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    try await writer.write(first)
                    // Ends when the hub ends the stream (session ended, server stopping) or a write fails (the
                    // client left); either way the stream's termination frees its slot.
                    for await event in events { try await writer.write(event) }
                    try await writer.finish(nil)
                })
        }
    }
}
