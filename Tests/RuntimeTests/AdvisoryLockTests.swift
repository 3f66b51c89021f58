import Foundation
import Runtime
import TestSupport
import Testing

/// Every advisory lock key is one of ``AdvisoryLock``'s, and no two uses share one: a shared key makes two unrelated
/// jobs wait for (or skip) each other. The SQL's two-key locks are read from sql/, so a key written there and not
/// listed fails here.
@Suite struct AdvisoryLockTests {
    @Test func noTwoUsesShareAKey() {
        let single = AdvisoryLock.Single.allCases.map(\.rawValue)
        #expect(Set(single).count == single.count, "\(single)")
        let pair = AdvisoryLock.Pair.allCases.map(\.rawValue)
        #expect(Set(pair).count == pair.count, "\(pair)")
    }

    @Test func theSQLTakesOnlyListedKeys() throws {
        let directory = "\(TestStack.packageRoot)/sql"
        let listed = Set(AdvisoryLock.Pair.allCases.map(\.rawValue))
        var found: [Int32] = []
        let pattern = try Regex(#"advisory_(?:xact_)?lock(?:_shared)?\((\d+),"#)
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".sql") {
            let text = try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
            for match in text.matches(of: pattern) {
                guard let key = Int32(String(match.output[1].substring ?? "")) else { continue }
                found.append(key)
                #expect(listed.contains(key), "\(file) takes advisory lock key \(key), not in AdvisoryLock.Pair")
            }
        }
        #expect(found.count >= 4, "the SQL's keys were not found: \(found)")
        // Swift sources take no key of their own beside the enum.
        let sources = "\(TestStack.packageRoot)/Sources"
        let literal = try Regex(#"advisory_\w*lock\w*\(\d"#)
        let enumerator = FileManager.default.enumerator(atPath: sources)
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let text = try String(contentsOfFile: "\(sources)/\(path)", encoding: .utf8)
            #expect(text.firstMatch(of: literal) == nil, "\(path) writes an advisory lock key as a number")
        }
    }
}
