import Config
import Foundation
import Logging
import NIOCore
import Observability
import TestSupport
import Testing

@testable import OwnerApp
@testable import Storage
@testable import Telemetry

/// The owners' app's rules as pure functions, table by table: what text may be stored and how it is printed,
/// claim keys as people type them, who the client is behind a proxy, the bearer scheme and JSON bodies.
struct OwnerAppRulesTests {
    static let name = OwnerText.Rule(maxScalars: 100, maxBytes: 400, allowsEmpty: false)
    static let description = OwnerText.Rule(maxScalars: 500, maxBytes: 2_000, allowsTabAndNewline: true)

    @Test(arguments: [
        ("Geladeira", name, nil),
        ("Café ☕ da manhã", name, nil),
        ("", name, OwnerText.Problem.empty),
        ("   ", name, .empty),
        ("a\u{0}b", name, .controlCharacter("\u{0}")),
        ("\u{1B}[2J", name, .controlCharacter("\u{1B}")),
        ("tab\there", name, .controlCharacter("\t")),
        ("del\u{7F}", name, .controlCharacter("\u{7F}")),
        ("csi\u{9B}31m", name, .controlCharacter("\u{9B}")),
        ("tab\tand\nnewline", description, nil),
        ("cr\r", description, .controlCharacter("\r")),
        ("e" + String(repeating: "\u{301}", count: 100), name, .tooManyScalars(limit: 100)),
        ("e" + String(repeating: "\u{301}", count: 99), name, nil),
        (String(repeating: "😀", count: 100), name, nil),
        (String(repeating: "😀", count: 101), name, .tooManyBytes(limit: 400)),
        (String(repeating: "a", count: 501), description, .tooManyScalars(limit: 500)),
    ])
    func ownerText(_ text: String, _ rule: OwnerText.Rule, _ expected: OwnerText.Problem?) {
        #expect(OwnerText.problem(text, rule) == expected)
    }

    @Test(arguments: [
        ("plain", "plain"), ("two\nlines", "two\\nlines"), ("\u{1B}]0;title\u{7}", "\\x1b]0;title\\x07"),
        ("c1\u{9B}", "c1\\x9b"), ("tab\t", "tab\\t"), ("nul\u{0}", "nul\\x00"), ("café", "café"),
    ])
    func inertText(_ text: String, _ expected: String) {
        #expect(OwnerText.inert(text) == expected)
    }

    /// The API's JSON writes strings straight into the response's bytes, exactly as ``jsonString(_:)`` does.
    @Test(arguments: [
        "", "Fridge", "Geladeira da cozinha é nova", "quote \" backslash \\", "tab\tnew\nline\r", "nul \u{0}",
        "del \u{7F}", "c1 \u{85} \u{9F}", "latin \u{A0}\u{C0}\u{FF}", "emoji 🔌", "separators \u{2028}\u{2029}",
    ])
    func jsonOutputWritesStringsAsJSONStringDoes(_ text: String) {
        #expect(JSONOutput.string(text).text == jsonString(text))
        #expect(
            JSONOutput.object([(text, .array([.string(text), .null, .integer(-3)]))]).text
                == "{\(jsonString(text)):[\(jsonString(text)),null,-3]}")
    }

    /// A live event writes each outlet straight into its buffer: byte for byte what the list route's answer gives.
    @Test(arguments: [
        OwnedOutlet(
            code: "sim-0001", name: "Fridge", description: "", online: true, state: .on, powerWatts: 95.25,
            updatedAt: Date(timeIntervalSince1970: 1_795_000_000.25), timeZone: "America/Fortaleza"),
        OwnedOutlet(
            code: "K7QF", name: "quote \" nul \u{0} c1 \u{85}", description: "tab\tline\n🔌", online: nil, state: nil,
            powerWatts: nil, updatedAt: nil, timeZone: "UTC"),
        OwnedOutlet(
            code: "x", name: "Geladeira é", description: "\u{2028}", online: false, state: .off,
            powerWatts: .infinity, updatedAt: Date(timeIntervalSince1970: 0), timeZone: "Asia/Kolkata"),
        OwnedOutlet(
            code: "y", name: "n", description: "d", online: true, state: .on, powerWatts: -0.0004,
            updatedAt: Date(timeIntervalSince1970: 1_795_000_000.9996), timeZone: "UTC"),
    ])
    func outletJSONIsWrittenAsItsAnswerIs(_ outlet: OwnedOutlet) throws {
        var buffer = ByteBuffer()
        OwnerAPI.write(outlet, to: &buffer)
        #expect(String(buffer: buffer) == (try JSONOutputEncoder().encode(OutletAnswer(outlet)).text))
    }

    @Test func liveEventCarriesTheListAsOneLineOfData() throws {
        let outlets = [
            OwnedOutlet(
                code: "a", name: "line\nbreak", description: "", online: true, state: .on, powerWatts: 1,
                updatedAt: nil, timeZone: "UTC"),
            OwnedOutlet(
                code: "b", name: "B", description: "", online: nil, state: nil, powerWatts: nil, updatedAt: nil,
                timeZone: "UTC"),
        ]
        let at = Date(timeIntervalSince1970: 1_795_000_000.123)
        let list = try JSONOutputEncoder().encode(outlets.map(OutletAnswer.init)).text
        let data = "{\"at\":\"\(JSONOutput.timestamp(at))\",\"outlets\":\(list)}"
        let expected = "id: 1795000000123\nevent: outlets\ndata: \(data)\n\n"
        #expect(String(buffer: LiveHub.event(outlets, LiveHub.Stamp(at))) == expected)
        #expect(String(buffer: LiveHub.event([], LiveHub.Stamp(at))).contains("\"outlets\":[]}\n\n"))
    }

    @Test func jsonEscapesDELAndC1() {
        #expect(jsonString("a\u{7F}b\u{85}c\u{1B}") == #""a\u007fb\u0085c\u001b""#)
        #expect(OwnerText.inertJSON("{\"n\":\"x\u{9B}y\"}") == #"{"n":"x\u009by"}"#)
    }

    @Test(
        arguments: [
            ("K7QF-3MZP-X2CD", "K7QF3MZPX2CD"), ("k7qf3mzpx2cd", "K7QF3MZPX2CD"), ("K7QF 3MZP X2CD", "K7QF3MZPX2CD"),
            ("O0IL-1111-1111", "00111111111" + "1"), ("K7QF-3MZP-X2C", nil), ("K7QF-3MZP-X2CDE", nil),
            ("K7QF-3MZP-X2CU", nil), ("K7QF-3MZP-X2C!", nil), ("K7QF-3MZP-X2CÉ", nil), ("", nil),
        ] as [(String, String?)])
    func claimKeysAsPeopleTypeThem(_ typed: String, _ stored: String?) {
        #expect(ClaimKey.normalized(typed) == stored)
    }

    @Test func claimKeysPrintInGroupsAndSplitFromTheirCode() {
        #expect(ClaimKey.display("K7QF3MZPX2CD") == "K7QF-3MZP-X2CD")
        #expect(ClaimKey.splitCombined("kitchen-1:K7QF-3MZP-X2CD")! == ("kitchen-1", "K7QF-3MZP-X2CD"))
        #expect(ClaimKey.splitCombined("kitchen-1") == nil)
    }

    @Test(arguments: [
        // No trusted proxy: the header is never read.
        ("203.0.113.9", ["1.2.3.4"], "", "203.0.113.9"),
        // The proxy appends what it saw; what the client wrote before it is not believed.
        ("127.0.0.1", ["1.2.3.4, 203.0.113.9"], "127.0.0.1", "203.0.113.9"),
        ("127.0.0.1", ["1.2.3.4", "203.0.113.9, 10.0.0.2"], "127.0.0.1, 10.0.0.0/8", "203.0.113.9"),
        // Every hop trusted: the leftmost.
        ("127.0.0.1", ["10.0.0.7, 10.0.0.2"], "127.0.0.1, 10.0.0.0/8", "10.0.0.7"),
        // A peer that is no trusted proxy speaks for itself.
        ("198.51.100.1", ["1.2.3.4"], "127.0.0.1", "198.51.100.1"),
        // Garbage stops the walk at the last address believed.
        ("127.0.0.1", ["1.2.3.4, unknown"], "127.0.0.1", "127.0.0.1"),
        ("::1", ["2001:db8::7"], "::1", "2001:db8::7"),
        ("::ffff:127.0.0.1", ["192.0.2.5"], "127.0.0.0/8", "192.0.2.5"),
        ("127.0.0.1", [], "127.0.0.1", "127.0.0.1"),
    ])
    func clientAddress(_ peer: String, _ forwarded: [String], _ trusted: String, _ expected: String) throws {
        let proxies = try IPNetwork.list(trusted)
        #expect(
            ClientAddressMiddleware.client(peer: peer, forwardedFor: forwarded, trustedProxies: proxies) == expected)
    }

    @Test func networksParseAndRefuseWhatTheyAreNot() throws {
        #expect(IPNetwork("10.0.0.0/8")?.contains("10.255.1.2") == true)
        #expect(IPNetwork("10.0.0.0/8")?.contains("11.0.0.1") == false)
        #expect(IPNetwork("192.168.1.7")?.contains("192.168.1.8") == false)
        #expect(IPNetwork("fd00::/8")?.contains("fd12::1") == true)
        #expect(IPNetwork("fd00::/8")?.description == "fd00::/8")
        for bad in ["10.0.0.0/33", "10.0.0/8", "example.com", "::1/129", "1.2.3.4/-1", ""] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        #expect(throws: ConfigurationKeyError.self) { try IPNetwork.list("127.0.0.1, nope") }
    }

    @Test(
        arguments: [
            ("Bearer abc-_.~+/=", "abc-_.~+/="), ("bearer abc", "abc"), ("BEARER abc", "abc"), ("Basic abc", nil),
            ("Bearer", nil), ("Bearer ", nil), ("Bearer a\u{0}b", nil),
            ("Bearer " + String(repeating: "a", count: 257), nil),
        ] as [(String, String?)])
    func bearerScheme(_ header: String, _ token: String?) {
        #expect(BearerTokenAuthenticator.bearerToken(header) == token)
    }

    @Test(arguments: [
        ("application/json", true), ("Application/JSON; charset=utf-8", true), (" application/json ;x=y", true),
        ("text/plain", false), ("application/jsonp", false), ("application/x-www-form-urlencoded", false),
    ])
    func onlyJSONBodies(_ contentType: String, _ accepted: Bool) {
        #expect(OwnerAPI.isJSON(contentType) == accepted)
    }

    @Test func failedAttemptsAreCountedAtOnceAndForgivenOnSuccess() {
        let limiter = FailureLimiter(windowSeconds: 60, maxKeys: 4)
        let limit = FailureLimiter.Limit(kind: "owner", maxFailures: 2)
        var tickets: [FailureLimiter.Ticket] = []
        for _ in 0..<2 {
            guard case .granted(let ticket) = limiter.reserve([(limit, "a")]) else {
                Issue.record("refused too early")
                return
            }
            tickets.append(ticket)
        }
        guard case .refused(let seconds, let kind) = limiter.reserve([(limit, "a")]) else {
            Issue.record("a third attempt passed")
            return
        }
        #expect(kind == "owner" && (1...60).contains(seconds))
        limiter.forgive(tickets[0])
        #expect(limiter.count("a") == 1)
        // Past its bound the oldest keys go, so invented keys cost bounded memory.
        for key in ["b", "c", "d", "e", "f"] { _ = limiter.reserve([(limit, key)]) }
        #expect(["b", "c", "d", "e", "f", "a"].map { limiter.count($0) }.reduce(0, +) <= 4)
    }

    /// A log handler that keeps what it is given.
    struct CapturingHandler: LogHandler {
        let lines: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            lines.value.append(([event.message.description] + fields).joined(separator: " "))
        }
    }

    @Test func textLogsWriteControlCharactersOut() {
        let lines = Locked<[String]>([])
        let logger = Logger(label: "test") { _ in InertLogHandler(CapturingHandler(lines: lines)) }
        logger.warning(
            "renamed \u{1B}[2J", metadata: ["name": "a\nforged line", "list": .array(["\u{9B}"])])
        // swift-log quotes an array's elements as Swift literals: the escaped text's backslash comes out doubled.
        #expect(lines.value == [#"renamed \x1b[2J list=["\\x9b"] name=a\nforged line"#])
    }
}
