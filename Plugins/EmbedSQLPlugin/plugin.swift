import Foundation
import PackagePlugin

/// Embeds sql/ into the Storage module at build time: the migrations (sql/NNNN_name.sql) and the write path's
/// statements (sql/write/NAME.sql) become `Migration.embedded` and `WriteSQL`, so the binary carries its schema and
/// `outletd migrate` works from any directory. sql/ stays the one copy of the SQL: nothing generated is committed,
/// and a change to a file there rebuilds what depends on it.
@main
struct EmbedSQLPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sql = context.package.directoryURL.appending(path: "sql")
        let write = sql.appending(path: "write")
        func files(_ folder: URL) throws -> [URL] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
                .map { folder.appending(path: $0) }
        }
        let output = context.pluginWorkDirectoryURL
        return [
            .buildCommand(
                displayName: "Embedding sql/ into \(target.name)",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [sql.path, output.path],
                inputFiles: try files(sql) + files(write),
                outputFiles: [
                    output.appending(path: "EmbeddedMigrations.swift"),
                    output.appending(path: "EmbeddedWriteSQL.swift"),
                ])
        ]
    }
}
