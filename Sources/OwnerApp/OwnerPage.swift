import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The owner's page: the HTML, CSS and JavaScript of Web/ (index.html, app.css, app.js and the files they include),
/// compiled into the binary by Plugins/EmbedWebPlugin (no npm, no CDN, nothing fetched from elsewhere, no file read
/// at run time), served at `/`, `/app.css` and `/app.js`. It talks only to ``OwnerAPI``.
public enum OwnerPage {
    /// One file as served: its content type, its entity tag (a hash of the body, made at build time) and its body.
    struct File: Sendable {
        let contentType: String
        let entityTag: String
        let body: String
    }

    /// The page's policy: its own script and style only (no inline script or style), nothing from elsewhere.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    /// Adds `GET` of every file in ``files``. `Cache-Control: no-cache` has the browser ask each time, and the
    /// entity tag lets it keep its copy (`304 Not Modified`) until a build changes the file.
    public static func register(on router: Router<some RequestContext>) {
        for (path, file) in files {
            let body = ByteBuffer(string: file.body)
            let headers: HTTPFields = [
                .contentType: file.contentType, .cacheControl: "no-cache", .eTag: file.entityTag,
                .contentSecurityPolicy: contentSecurityPolicy,
            ]
            router.get(RouterPath(path)) { request, _ -> Response in
                if matches(request.headers[values: .ifNoneMatch], entityTag: file.entityTag) {
                    var unchanged = headers
                    unchanged[.contentType] = nil
                    return Response(status: .notModified, headers: unchanged)
                }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
            }
        }
    }

    /// Whether `If-None-Match` values name `entityTag` (or `*`), compared weakly as RFC 9110 asks.
    static func matches(_ ifNoneMatch: [String], entityTag: String) -> Bool {
        ifNoneMatch.flatMap { $0.split(separator: ",") }.contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == entityTag
        }
    }
}
