import Foundation
import TestSupport
import Testing

@testable import Observability

/// What a newcomer types first: `outletd --version`, completions, JSON output, and the errors that say what to do.
@Suite struct CLITests {
    /// The version and commit the build embedded: the header scripts/build-info wrote, else "dev".
    static func embeddedBuild() throws -> BuildInfo {
        let header = "\(TestStack.packageRoot)/Sources/CBuildInfo/generated/build_info.h"
        guard let text = try? String(contentsOfFile: header, encoding: .utf8) else {
            return BuildInfo(version: "dev", commit: "dev")
        }
        func value(_ name: String) throws -> String {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("#define \(name) ") }),
                let open = line.firstIndex(of: "\""), let close = line.lastIndex(of: "\""), open < close
            else { throw HarnessError("\(name) missing from \(header)") }
            return String(line[line.index(after: open)..<close])
        }
        return BuildInfo(version: try value("OUTLETD_VERSION"), commit: try value("OUTLETD_COMMIT"))
    }

    @Test func versionNamesTheVersionAndCommit() throws {
        let output = try TestStack.run([try OutletdProcess.executable(), "--version"])
        let build = try Self.embeddedBuild()
        #expect(output == "outletd \(build.version) (commit \(build.commit))\n")
        #expect(BuildInfo.current == build)
    }

    @Test func buildInfoScriptReadsVersionFileAndGit() throws {
        let root = TestStack.packageRoot
        let header = try TestStack.run(["\(root)/scripts/build-info", "--print"])
        let version = try String(contentsOfFile: "\(root)/VERSION", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(header.contains("#define OUTLETD_VERSION \"\(version)\"\n"))
        let commit = try TestStack.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(header.contains("#define OUTLETD_COMMIT \"\(commit)"))
    }
}
