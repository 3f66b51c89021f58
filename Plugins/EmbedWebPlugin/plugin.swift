import Foundation
import PackagePlugin

/// Embeds a target's Web/ folder (the owner's page: HTML, CSS, JavaScript) into the target at build time as
/// `OwnerPage.files`, so the binary serves the page with no file read at run time. Web/ stays the one copy of the
/// page: nothing generated is committed, and a change to a file there rebuilds what depends on it.
@main
struct EmbedWebPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let web = target.directoryURL.appending(path: "Web")
        let files = try FileManager.default.contentsOfDirectory(atPath: web.path).filter { !$0.hasPrefix(".") }
            .sorted().map { web.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedPage.swift")
        return [
            .buildCommand(
                displayName: "Embedding Web/ into \(target.name)",
                executable: try context.tool(named: "EmbedWeb").url,
                arguments: [web.path, output.path],
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
