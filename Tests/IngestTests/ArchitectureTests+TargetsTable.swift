import Foundation
import Telemetry
import TestSupport
import Testing

/// README.md's targets table names every target of the package (the C libraries, the build tools and their plugins,
/// the benchmarks and the test support included) and nothing that is not one, so that a newcomer finds each target's
/// job in one place.
extension ArchitectureTests {
    /// The names in the first column of the README table that follows the architecture block (`` `A`, `B` | role``).
    static func readmeTargetsTable() throws -> Set<String> {
        let readme = try String(contentsOfFile: "\(TestStack.packageRoot)/README.md", encoding: .utf8)
        guard let mention = readme.range(of: "`ArchitectureTests` compares this block"),
            let header = readme.range(of: "\n| target | role |\n", range: mention.upperBound..<readme.endIndex)
        else { throw HarnessError("README.md has no `| target | role |` table after the architecture block") }
        var names = Set<String>()
        for line in readme[header.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 2, !cells[1].allSatisfy({ $0 == "-" }) else { continue }
            for name in cells[1].split(separator: ",") {
                names.insert(name.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(["`"])))
            }
        }
        return names
    }

    /// Every target of the package but the test targets: libraries, system libraries, executables and plugins.
    static func packageTargets() throws -> Set<String> {
        var names = Set<String>()
        for target in try dumpedTargets.get() {
            guard case .string(let name)? = target["name"], case .string(let type)? = target["type"], type != "test"
            else { continue }
            names.insert(name)
        }
        return names
    }

    @Test func readmeTargetsTableNamesEveryTarget() throws {
        let table = try Self.readmeTargetsTable()
        let targets = try Self.packageTargets()
        #expect(
            targets.subtracting(table).isEmpty,
            "targets missing from README.md's table: \(targets.subtracting(table).sorted())")
        #expect(
            table.subtracting(targets).isEmpty,
            "README.md's table names what is no target: \(table.subtracting(targets).sorted())")
    }
}
