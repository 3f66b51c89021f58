import Foundation
import Telemetry
import TestSupport
import Testing

/// The module layout is the architecture: README.md's picture of the targets and their arrows must be the
/// package's own graph, so that neither drifts from the other.
@Suite struct ArchitectureTests {
    /// Targets that are not part of the daemon's picture: benchmarks, test support and the build tools that embed
    /// sql/ and the owner's page.
    static let outsideThePicture: Set<String> = [
        "broker-ceiling", "command-latency", "outletd-bench", "protocol-decode-bench", "EmbedSQL", "EmbedWeb",
    ]

    /// `Target → A, B` lines of the README block that follows the mention of this test.
    static func readmePicture() throws -> [String: Set<String>] {
        let readme = try String(contentsOfFile: "\(TestStack.packageRoot)/README.md", encoding: .utf8)
        guard let mention = readme.range(of: "`ArchitectureTests` compares this block"),
            let open = readme.range(of: "```text\n", range: mention.upperBound..<readme.endIndex),
            let close = readme.range(of: "```", range: open.upperBound..<readme.endIndex)
        else { throw HarnessError("README.md has no architecture block after the mention of ArchitectureTests") }
        var picture: [String: Set<String>] = [:]
        for line in readme[open.upperBound..<close.lowerBound].split(separator: "\n") {
            let sides = line.components(separatedBy: "→")
            guard sides.count == 2 else { throw HarnessError("not `Target → A, B`: \(line)") }
            let target = sides[0].trimmingCharacters(in: .whitespaces)
            picture[target] = Set(
                sides[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        return picture
    }

    /// The package's targets as `swift package dump-package` describes them, read once for the suite.
    static let dumpedTargets: Result<[[String: JSONValue]], any Error> = Result {
        // SwiftPM's build and its lock files (which it keeps in TMPDIR) in one directory, removed after.
        let scratch = NSTemporaryDirectory() + "outletd-dump-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let json = try TestStack.run(
            [
                "/usr/bin/env", "swift", "package", "--package-path", TestStack.packageRoot, "--scratch-path",
                scratch + "/build", "dump-package",
            ], environment: ["TMPDIR": scratch])
        guard case .object(let root) = try JSONParser.parse(Array(json.utf8)),
            case .array(let targets)? = root["targets"]
        else { throw HarnessError("unexpected dump-package output") }
        return targets.compactMap { if case .object(let target) = $0 { target } else { nil } }
    }

    /// Whether `target` is a library of the tests (TestSupport, ServiceTestSupport: under Tests/), not of the product.
    static func isTestSupport(_ target: [String: JSONValue]) -> Bool {
        if case .string(let path)? = target["path"] { path.hasPrefix("Tests/") } else { false }
    }

    /// Every regular and executable target with its dependencies on other targets of the package.
    static func packageGraph() throws -> [String: Set<String>] {
        var graph: [String: Set<String>] = [:]
        for target in try dumpedTargets.get() {
            guard case .string(let name)? = target["name"], case .string(let type)? = target["type"],
                type == "regular" || type == "executable", !Self.isTestSupport(target),
                !outsideThePicture.contains(name), case .array(let dependencies)? = target["dependencies"]
            else { continue }
            var internalDependencies = Set<String>()
            for case .object(let dependency) in dependencies {
                for kind in ["byName", "target"] {
                    if case .array(let values)? = dependency[kind], case .string(let dependencyName)? = values.first {
                        internalDependencies.insert(dependencyName)
                    }
                }
            }
            graph[name] = internalDependencies
        }
        return graph
    }

    @Test func readmePictureIsThePackageGraph() throws {
        let picture = try Self.readmePicture()
        let graph = try Self.packageGraph()
        #expect(
            Set(picture.keys) == Set(graph.keys),
            "targets: README \(picture.keys.sorted()), package \(graph.keys.sorted())")
        for (target, dependencies) in graph.sorted(by: { $0.key < $1.key }) {
            #expect(
                picture[target] == dependencies,
                "\(target): README \(picture[target]?.sorted() ?? []), package \(dependencies.sorted())")
        }
    }
}
