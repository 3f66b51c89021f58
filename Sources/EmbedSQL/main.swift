import Foundation

// The build tool behind Plugins/EmbedSQLPlugin: `EmbedSQL migrations SQL_FOLDER OUTPUT_FOLDER` writes
// EmbeddedMigrations.swift (every sql/NNNN_name.sql, in version order, for Storage); `EmbedSQL write SQL_FOLDER
// OUTPUT_FOLDER` writes EmbeddedWriteSQL.swift (every sql/write/NAME.sql as `WriteSQL.name` in lowerCamelCase, and
// `WriteSQL.all` by file name, for WritePath).

/// `text` as a Swift string literal: every character that needs it escaped, so no SQL can end the literal.
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

func sqlFiles(in folder: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sql") }.sorted()
}

func write(_ text: String, to path: String) throws {
    // Unchanged output keeps its timestamp: nothing downstream rebuilds.
    if (try? String(contentsOfFile: path, encoding: .utf8)) == text { return }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

let arguments = CommandLine.arguments
guard arguments.count == 4, ["migrations", "write"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: EmbedSQL migrations|write SQL_FOLDER OUTPUT_FOLDER\n".utf8))
    exit(2)
}
let (kind, folder, output) = (arguments[1], arguments[2], arguments[3])

func embedMigrations() throws {
    var migrations = "// Generated at build time from sql/*.sql by Plugins/EmbedSQLPlugin. Edit sql/.\n\n"
    migrations +=
        "extension Migration {\n    /// Every migration in sql/, in version order.\n    static let embedded: [Migration] = [\n"
    for file in try sqlFiles(in: folder) {
        let base = String(file.dropLast(4))
        guard let separator = base.firstIndex(of: "_"), let version = Int(base[..<separator]) else {
            throw NSError(
                domain: "EmbedSQL", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(file): not NNNN_name.sql"])
        }
        let sql = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
        let name = base[base.index(after: separator)...]
        migrations += "        Migration(version: \(version), name: \(literal(String(name))), sql: \(literal(sql))),\n"
    }
    migrations += "    ]\n}\n"
    try write(migrations, to: "\(output)/EmbeddedMigrations.swift")
}

func embedWriteSQL() throws {
    var statements = "// Generated at build time from sql/write/*.sql by Plugins/EmbedSQLPlugin. Edit sql/write/.\n\n"
    statements += "/// The write path's SQL, one statement (or, for `session`, one script) per file of sql/write/.\n"
    statements += "enum WriteSQL {\n"
    var names: [(file: String, name: String)] = []
    for file in try sqlFiles(in: "\(folder)/write") {
        let parts = file.dropLast(4).split(separator: "_")
        let name = parts.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
        names.append((String(file.dropLast(4)), name))
        let sql = try String(contentsOfFile: "\(folder)/write/\(file)", encoding: .utf8)
        statements += "    static let \(name) = \(literal(sql))\n"
    }
    statements += "\n    /// Every statement by its file's name (for the test that compares them with sql/write/).\n"
    statements += "    static let all: [String: String] = [\n"
    for entry in names { statements += "        \(literal(entry.file)): \(entry.name),\n" }
    statements += "    ]\n}\n"
    try write(statements, to: "\(output)/EmbeddedWriteSQL.swift")
}

do {
    if kind == "migrations" { try embedMigrations() } else { try embedWriteSQL() }
} catch {
    FileHandle.standardError.write(Data("EmbedSQL: \(error.localizedDescription)\n".utf8))
    exit(1)
}
