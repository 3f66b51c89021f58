import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The app listener's own limits on connections, so that no proxy is needed in front of it: at most
/// `app.max_connections` open at once, and none kept waiting for a request head (`app.header_timeout_seconds`).
/// Hummingbird's idle timeout (`app.idle_timeout_seconds`) closes the rest that stand idle. One ``ConnectionGuard``
/// a connection shares this count.
final class ConnectionLimits: Sendable {
    let maxConnections: Int
    let headerTimeout: TimeAmount
    let metrics: AppMetrics
    private let open = Atomic<Int>(0)

    init(maxConnections: Int, headerTimeoutSeconds: Double, metrics: AppMetrics) {
        self.maxConnections = maxConnections
        self.headerTimeout = .nanoseconds(Int64(headerTimeoutSeconds * 1e9))
        self.metrics = metrics
    }

    /// Counts a new connection in when there is room for it.
    func admit() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        guard now <= maxConnections else {
            open.subtract(1, ordering: .relaxed)
            return false
        }
        metrics.connections(now)
        return true
    }

    /// Counts an admitted connection out (it closed).
    func leave() {
        metrics.connections(open.subtract(1, ordering: .relaxed).newValue)
    }

    /// Connections admitted and not yet closed.
    var openConnections: Int { open.load(ordering: .relaxed) }
}

/// One connection's guard, first of the handlers Hummingbird adds after its HTTP decoder (so it sees request and
/// response parts):
///
/// - a connection beyond `app.max_connections` is answered at once, before its request is read: 503 with
///   `Retry-After` and the reason, `Connection: close`; its output is then closed, and the connection 2 s later
///   (or when the client closes first), so that the client reads the answer rather than a reset;
/// - a connection whose first request head is not complete `app.header_timeout_seconds` after it opened is closed
///   (later requests on a kept-alive connection are bounded by the idle timeout instead);
/// - an event stream (`GET /api/v1/live`) whose client closes its side is closed at once, so that its place is free
///   without waiting for a write to fail.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Not active yet.
        case starting
        /// Admitted; its first request head has not arrived.
        case awaitingHead
        /// Admitted, its first head read.
        case serving
        /// Beyond the limit: answered, its input ignored.
        case refused
        case closed
    }

    private let limits: ConnectionLimits
    private var state = State.starting
    private var timer: Scheduled<Void>?
    /// Whether the response being written is an event stream.
    private var streaming = false

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .refused, .closed:
            return
        case .awaitingHead:
            if case .head = unwrapInboundIn(data) {
                timer?.cancel()
                timer = nil
                state = .serving
            }
        case .starting, .serving:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            streaming = response.headerFields[.contentType]?.hasPrefix("text/event-stream") == true
        case .end:
            streaming = false
        case .body:
            break
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent, streaming || state == .refused {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func start(context: ChannelHandlerContext) {
        guard case .starting = state else { return }
        let loop = context.eventLoop.assumeIsolated()
        guard limits.admit() else {
            state = .refused
            limits.metrics.connectionClosed("refused")
            refuse(context: context)
            return
        }
        state = .awaitingHead
        timer = loop.scheduleTask(in: limits.headerTimeout) { [self] in
            guard case .awaitingHead = state else { return }
            limits.metrics.connectionClosed("header_timeout")
            context.close(promise: nil)
        }
    }

    /// Answers 503 with the reason, closes the output once it is written, and the connection 2 s later unless the
    /// client closed first.
    private func refuse(context: ChannelHandlerContext) {
        let message =
            "this server holds all the connections it may (app.max_connections: \(limits.maxConnections)); "
            + "try again shortly"
        let body = ByteBuffer(string: JSONOutput.object([("error", .object([("message", .string(message))]))]).text)
        var fields = SecurityHeadersMiddleware<OwnerRequestContext>.headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.contentLength] = String(body.readableBytes)
        fields[.retryAfter] = "5"
        fields[.connection] = "close"
        let head = HTTPResponse(status: .serviceUnavailable, headerFields: fields)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        let loop = context.eventLoop.assumeIsolated()
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            guard case .refused = state else { return }
            context.close(mode: .output, promise: nil)
            timer = loop.scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
        }
    }

    /// Counts a connection that was admitted out, once.
    private func finish() {
        timer?.cancel()
        timer = nil
        if case .awaitingHead = state { limits.leave() }
        if case .serving = state { limits.leave() }
        state = .closed
    }
}
