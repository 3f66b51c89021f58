import Foundation

// The build tool behind Plugins/EmbedWebPlugin: `EmbedWeb WEB_FOLDER OUTPUT_FILE` writes `OwnerPage.files`, every
// file of the folder that no other file includes, served at /NAME (index.html at /), with its includes in place.
//
// An include is a line that holds only a comment naming another file of the folder: `<!-- include a.html -->`,
// `/* include a.css */` or `// include a.js`. The line becomes that file's text, each line indented as the comment
// was. Only .html, .css and .js files; a file no other includes is served.

struct EmbedWebError: Error, CustomStringConvertible {
    let description: String
}

/// `text` as a Swift string literal: every character that needs it escaped, so no page text can end the literal.
func literal(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

/// The file a line includes, if the line is an include.
func included(by line: Substring) -> String? {
    let trimmed = line.trimmingCharacters(in: .whitespaces)
    for (open, close) in [("<!-- include ", "-->"), ("/* include ", "*/"), ("// include ", "")] {
        guard trimmed.hasPrefix(open), trimmed.hasSuffix(close) else { continue }
        let name = trimmed.dropFirst(open.count).dropLast(close.count).trimmingCharacters(in: .whitespaces)
        return name.isEmpty || name.contains("/") || name.contains(" ") ? nil : name
    }
    return nil
}

/// `file`'s text with its includes in place; `includedNames` collects every file included, `chain` stops a cycle.
func expand(
    _ file: String, in folder: String, chain: [String] = [], includedNames: inout Set<String>
) throws -> String {
    guard !chain.contains(file) else {
        throw EmbedWebError(description: "include cycle: \((chain + [file]).joined(separator: " → "))")
    }
    let text = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
    var lines: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        guard let name = included(by: line) else {
            lines.append(String(line))
            continue
        }
        guard FileManager.default.fileExists(atPath: "\(folder)/\(name)") else {
            throw EmbedWebError(description: "\(file) includes \(name), which is not in \(folder)")
        }
        includedNames.insert(name)
        let indent = String(line.prefix { $0 == " " })
        var body = try expand(name, in: folder, chain: chain + [file], includedNames: &includedNames)
        if body.hasSuffix("\n") { body.removeLast() }
        lines += body.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : indent + $0 }
    }
    return lines.joined(separator: "\n")
}

/// A strong validator for the body: FNV-1a, 64 bits, of its UTF-8 bytes (a cache's check, not a security one).
func entityTag(_ body: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in body.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
}

let contentTypes = [
    "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
]

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: EmbedWeb WEB_FOLDER OUTPUT_FILE\n".utf8))
    exit(2)
}
let (folder, output) = (arguments[1], arguments[2])
do {
    let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }.sorted()
    var includedNames = Set<String>()
    var expanded: [String: String] = [:]
    for name in names {
        guard let type = name.split(separator: ".").last, contentTypes[String(type)] != nil else {
            throw EmbedWebError(description: "\(folder)/\(name): not .html, .css or .js")
        }
        expanded[name] = try expand(name, in: folder, includedNames: &includedNames)
    }
    var swift = "// Generated at build time from Web/ by Plugins/EmbedWebPlugin. Edit Web/.\n\n"
    swift += "extension OwnerPage {\n"
    swift += "    /// Every file of Web/ that no other includes, by the path it is served at, its includes in place.\n"
    swift += "    static let files: [String: File] = [\n"
    for name in names where !includedNames.contains(name) {
        let body = expanded[name] ?? ""
        let contentType = contentTypes[String(name.split(separator: ".").last ?? "")] ?? ""
        let path = name == "index.html" ? "/" : "/\(name)"
        swift += "        \(literal(path)): File(\n"
        swift += "            contentType: \(literal(contentType)), entityTag: \(literal(entityTag(body))),\n"
        swift += "            body: \(literal(body))),\n"
    }
    swift += "    ]\n}\n"
    // Unchanged output keeps its timestamp: nothing downstream rebuilds.
    if (try? String(contentsOfFile: output, encoding: .utf8)) != swift {
        try swift.write(toFile: output, atomically: true, encoding: .utf8)
    }
} catch {
    FileHandle.standardError.write(Data("EmbedWeb: \(error)\n".utf8))
    exit(1)
}
