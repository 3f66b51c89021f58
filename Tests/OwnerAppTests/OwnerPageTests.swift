import Foundation
import OwnerApp
import ServiceTestSupport
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

    /// The build tool behind Plugins/EmbedWebPlugin, built beside the tests (or under .build/debug).
    static func embedWeb() throws -> String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("EmbedWeb").path
        for candidate in [beside, "\(TestStack.packageRoot)/.build/debug/EmbedWeb"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw HarnessError("EmbedWeb not built (swift build --build-tests builds it)")
    }

    /// Runs EmbedWeb on a folder of `files` (name → text); the generated Swift, or the error it exits with.
    static func embed(_ files: [String: String]) throws -> Result<String, any Error> {
        let folder = NSTemporaryDirectory() + "outletd-web-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder + "/Web", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (name, text) in files { try text.write(toFile: "\(folder)/Web/\(name)", atomically: true, encoding: .utf8) }
        let tool = try embedWeb()
        return Result {
            try TestStack.run([tool, folder + "/Web", folder + "/EmbeddedPage.swift"])
            return try String(contentsOfFile: folder + "/EmbeddedPage.swift", encoding: .utf8)
        }
    }

    @Test func theBuildToolPutsIncludesInPlaceIndentedAsTheirLine() throws {
        let swift = try Self.embed([
            "index.html": "<body>\n  <!-- include part.html -->\n</body>\n", "part.html": "<p>a</p>\n<p>b</p>\n",
            "app.js": "(function () {\n  // include more.js\n})();\n", "more.js": "var a = \"\\\"\";\n",
            "app.css": "/* include more.css */\n", "more.css": "p { margin: 0; }\n",
        ]).get()
        #expect(swift.contains(#"body: "<body>\n  <p>a</p>\n  <p>b</p>\n</body>\n""#), "\(swift)")
        #expect(swift.contains(#"body: "(function () {\n  var a = \"\\\"\";\n})();\n""#), "\(swift)")
        #expect(swift.contains(#"body: "p { margin: 0; }\n""#), "\(swift)")
        #expect(swift.contains(#""/": File("#) && swift.contains(#""/app.js": File("#))
        #expect(!swift.contains("more.js") && !swift.contains("part.html"), "an included file is not served")
    }

    @Test func theBuildToolRefusesAMissingIncludeACycleAndAnUnknownKindOfFile() throws {
        let broken: [(files: [String: String], reason: String)] = [
            (["index.html": "<!-- include nowhere.html -->\n"], "includes nowhere.html, which is not in"),
            (["app.js": "// include a.js\n", "a.js": "// include b.js\n", "b.js": "// include a.js\n"], "cycle"),
            (["index.html": "<p></p>\n", "logo.png": "not text"], "logo.png: not .html, .css or .js"),
        ]
        for (files, reason) in broken {
            guard case .failure(let error) = try Self.embed(files) else {
                Issue.record("\(files.keys.sorted()) embedded")
                continue
            }
            #expect("\(error)".contains(reason), "\(error)")
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
            // The Web Push worker is a file of its own at the root (so that its scope is the whole page), a script.
            let worker = try await app.send("GET", "/sw.js")
            #expect(worker.status == 200 && worker.body.contains(#"addEventListener("push""#))
            #expect(worker.headers.lowercased().contains("content-type: text/javascript"))
            #expect(page.body.contains(#"<div id="alert-rules""#) && script.body.contains("pushManager.subscribe"))
            // The pieces are not pages of their own.
            for piece in [
                "/live.js", "/automations.js", "/automations.html", "/automations.css", "/alerts.js", "/alerts.html",
                "/alert-rules.html",
            ] {
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
