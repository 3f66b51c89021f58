import Foundation
import Testing

@testable import Telemetry

/// `appendUTF8(of:maxCount:)`: the bytes `string.utf8.prefix(maxCount)` has, appended in one copy.
struct AppendUTF8Tests {
    static let cases: [(string: String, maxCount: Int)] = [
        ("", .max), ("outlets/plug-1/telemetry", .max), ("outlets/plug-1/telemetry", 7), ("abc", 0), ("abc", 3),
        ("Küche/steckdose-€", .max), ("Küche", 2),  // a limit inside a two-byte character cuts it, as prefix does
        (String(repeating: "x", count: 70_000), 65_535), (NSString(string: "bridged/topic") as String, 7),
        (String("a substring's base"[...].dropFirst(2)), .max),
    ]

    @Test(arguments: cases)
    func appendsTheUTF8PrefixAfterWhatIsThere(_ string: String, _ maxCount: Int) {
        var bytes: [UInt8] = [0xFF, 0x00]
        bytes.appendUTF8(of: string, maxCount: maxCount)
        #expect(bytes == [0xFF, 0x00] + Array(string.utf8.prefix(maxCount)))
    }
}
