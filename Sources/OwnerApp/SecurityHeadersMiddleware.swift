import HTTPTypes
import Hummingbird
import Logging

/// Headers every answer of the app carries, errors and 404s included: `X-Content-Type-Options: nosniff` (a
/// browser never reads a JSON answer as a script or page), `Referrer-Policy: no-referrer` and
/// `X-Frame-Options: DENY` (the page is never framed; its CSP says the same to newer browsers). Errors that are not
/// HTTP errors become a 500 here, logged with the route, so that they carry the headers too.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    static var headers: HTTPFields {
        [
            .xContentTypeOptions: "nosniff", .referrerPolicy: "no-referrer", .xFrameOptions: "DENY",
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            logger.error(
                "app request failed",
                metadata: ["path": "\(request.uri.path)", "error": "\(String(reflecting: error))"])
            response = try HTTPError(.internalServerError, message: "internal error").response(
                from: request, context: context)
        }
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}

extension HTTPField.Name {
    static let referrerPolicy = literal("Referrer-Policy")
    static let xFrameOptions = literal("X-Frame-Options")
    static let xForwardedFor = literal("X-Forwarded-For")
    /// A proxy that buffers responses (nginx does by default) would hold a live stream's events back: `no` asks it
    /// not to.
    static let xAccelBuffering = literal("X-Accel-Buffering")

    /// A field name written in the source, valid by construction.
    private static func literal(_ name: String) -> HTTPField.Name {
        guard let field = HTTPField.Name(name) else { preconditionFailure("not a field name: \(name)") }
        return field
    }
}
