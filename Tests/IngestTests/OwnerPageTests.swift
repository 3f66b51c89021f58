import Foundation
import OwnerApp
import TestSupport
import Testing

/// The owner's page lives in Sources/OwnerApp/Web as HTML, CSS and JavaScript, embedded at build time
/// (Plugins/EmbedWebPlugin), and is served with its includes in place and an entity tag.
@Suite(.serialized) struct OwnerPageTests {
    /// What only page text holds: markup, a script's functions and DOM calls, a style's rules.
    static let pageMarkers = [
        "<!doctype", "<html", "<script", "<section", "<label", "<div", "function (", "function(",
        "addEventListener(", "getElementById(", "document.createElement", "{ display:", "font-family:",
    ]

    @Test func noSwiftSourceOfTheOwnerAppHoldsThePage() throws {
        let root = "\(TestStack.packageRoot)/Sources/OwnerApp"
        let files = try #require(FileManager.default.subpathsOfDirectory(atPath: root) as [String]?)
        let swift = files.filter { $0.hasSuffix(".swift") }
        #expect(!swift.isEmpty)
        for file in swift {
            let text = try String(contentsOfFile: "\(root)/\(file)", encoding: .utf8).lowercased()
            for marker in Self.pageMarkers {
                #expect(!text.contains(marker), "\(file) holds page text (\(marker)): it belongs in Web/")
            }
        }
        for page in ["index.html", "app.css", "app.js"] {
            #expect(files.contains("Web/\(page)"), "no Web/\(page)")
        }
    }

    @Test func thePageIsServedWithItsIncludesInPlace() async throws {
        try await OwnerAppTests.withApp { app in
            let page = try await app.send("GET", "/")
            #expect(page.body.contains(#"<div id="automations""#))
            let script = try await app.send("GET", "/app.js")
            #expect(script.body.contains("function startLive()"))
            #expect(script.body.contains("var automationTexts"))
            let style = try await app.send("GET", "/app.css")
            #expect(style.body.contains(".automations {"))
            for file in [page, script, style] {
                #expect(!file.body.contains("include "), "an include left in place")
            }
            // The pieces are not pages of their own.
            for piece in ["/live.js", "/automations.js", "/automations.html", "/automations.css"] {
                #expect(try await app.send("GET", piece).status == 404, "\(piece)")
            }
        }
    }

    @Test func aBrowsersCopyIsKeptUntilTheFileChanges() async throws {
        try await OwnerAppTests.withApp { app in
            var tags = Set<String>()
            for path in ["/", "/app.css", "/app.js"] {
                let first = try await app.send("GET", path)
                let headers = first.headers.lowercased()
                #expect(headers.contains("cache-control: no-cache"), "\(path)")
                let tag = try #require(
                    first.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }.map {
                        $0.dropFirst("etag:".count).trimmingCharacters(in: .whitespaces)
                    }, "\(path): no ETag")
                #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count > 2, "\(tag)")
                tags.insert(tag)
                let again = try await AppResponse.exchange(
                    port: app.port, method: "GET", path: path, token: nil, body: nil,
                    headers: ["If-None-Match: \"other\", \(tag)"])
                #expect(again.status == 304, "\(path)")
                #expect(again.body.isEmpty)
                #expect(again.headers.lowercased().contains("content-security-policy: default-src 'self'"))
                #expect(again.headers.lowercased().contains("x-content-type-options: nosniff"))
                let changed = try await AppResponse.exchange(
                    port: app.port, method: "GET", path: path, token: nil, body: nil,
                    headers: ["If-None-Match: \"other\""])
                #expect(changed.status == 200, "\(path)")
                #expect(changed.body == first.body)
            }
            #expect(tags.count == 3)
        }
    }
}
