import Foundation
import PackagePlugin

/// Embeds sql/ at build time: into Storage the migrations (sql/NNNN_name.sql) as `Migration.embedded`, so the binary
/// carries its schema and `outletd migrate` works from any directory; into WritePath the write path's statements
/// (sql/write/NAME.sql) as `WriteSQL`. sql/ stays the one copy of the SQL: nothing generated is committed, each
/// statement is generated once, into the one target that runs it, and a change to a file there rebuilds what
/// depends on it.
@main
struct EmbedSQLPlugin: BuildToolPlugin {
    struct UnknownTarget: Error, CustomStringConvertible {
        var name: String
        var description: String { "EmbedSQLPlugin embeds sql/ into Storage or WritePath, not \(name)" }
    }

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sql = context.package.directoryURL.appending(path: "sql")
        func files(_ folder: URL) throws -> [URL] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
                .map { folder.appending(path: $0) }
        }
        let output = context.pluginWorkDirectoryURL
        let (kind, inputs, generated): (String, [URL], String)
        switch target.name {
        case "Storage": (kind, inputs, generated) = ("migrations", try files(sql), "EmbeddedMigrations.swift")
        case "WritePath":
            (kind, inputs, generated) = ("write", try files(sql.appending(path: "write")), "EmbeddedWriteSQL.swift")
        default: throw UnknownTarget(name: target.name)
        }
        return [
            .buildCommand(
                displayName: "Embedding sql/ into \(target.name)",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [kind, sql.path, output.path],
                inputFiles: inputs,
                outputFiles: [output.appending(path: generated)])
        ]
    }
}
