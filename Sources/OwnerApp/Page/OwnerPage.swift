import Hummingbird
import NIOCore

/// The owner's page: static HTML, CSS and JavaScript compiled into the binary (no npm, no CDN, nothing fetched
/// from elsewhere), served at `/`, `/app.css` and `/app.js`. It talks only to ``OwnerAPI``.
public enum OwnerPage {
    /// Path → (content type, body).
    static let files: [String: (contentType: String, body: String)] = [
        "/": ("text/html; charset=utf-8", indexHTML),
        "/app.css": ("text/css; charset=utf-8", appCSS),
        "/app.js": ("text/javascript; charset=utf-8", appJS),
    ]

    /// Adds `GET /`, `GET /app.css` and `GET /app.js`.
    public static func register(on router: Router<some RequestContext>) {
        for (path, file) in files {
            router.get(RouterPath(path)) { _, _ -> Response in
                Response(
                    status: .ok,
                    headers: [
                        .contentType: file.contentType, .cacheControl: "no-cache",
                        .contentSecurityPolicy:
                            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                            + "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
                    ],
                    body: .init(byteBuffer: ByteBuffer(string: file.body)))
            }
        }
    }
}
