import Foundation
import Telemetry
import Testing

@testable import Commands
@testable import Config
@testable import Daemon
@testable import Ingest
@testable import MessageSpool
@testable import Observability
@testable import Routing
@testable import Runtime
@testable import Storage
@testable import WritePath

@Suite struct MessageClassifierTests {
    static let registry: [String: RegisteredDevice] = [
        "plug-1": RegisteredDevice(id: 1, enabled: true, protocolName: "native"),
        "plug-off": RegisteredDevice(id: 2, enabled: false, protocolName: "native"),
    ]
    let classifier = MessageClassifier(topicPrefix: "site/outlets", limits: ValidationLimits())
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func classify(_ topic: String, _ payload: String) -> ClassifiedMessage {
        classifier.classify(
            RawMessage(topic: topic, payload: Array(payload.utf8), receivedAt: now),
            lookup: { Self.registry[$0] })
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var topic: String
        var payload: String
        var samples: Int
        var reasons: [RejectionReason]
        var unknownCode: String? = nil
        var testDescription: String { "\(topic) \(payload.prefix(40))" }
    }

    @Test(arguments: [
        Case(
            topic: "site/outlets/plug-1/telemetry", payload: #"{"voltage":227.1,"current":0.4}"#, samples: 1,
            reasons: []),
        Case(
            topic: "site/outlets/plug-off/telemetry", payload: #"{"voltage":227.1,"current":0.4}"#, samples: 0,
            reasons: [.disabledDevice]),
        Case(
            topic: "site/outlets/stranger/telemetry", payload: #"{"voltage":227.1,"current":0.4}"#, samples: 0,
            reasons: [.unknownDevice], unknownCode: "stranger"),
        Case(
            topic: "site/outlets/bad%code/telemetry", payload: #"{"voltage":1,"current":1}"#, samples: 0,
            reasons: [.invalidDeviceCode]),
        Case(topic: "site/outlets/plug-1/state", payload: "on", samples: 0, reasons: [.invalidTopic]),
        Case(topic: "other/plug-1/telemetry", payload: "{}", samples: 0, reasons: [.invalidTopic]),
        Case(topic: "site/outlets/plug-1/telemetry", payload: "{nope", samples: 0, reasons: [.malformedJSON]),
        Case(
            topic: "site/outlets/plug-1/telemetry",
            payload: #"[{"voltage":227,"current":1},{"voltage":999,"current":1},{"voltage":227,"current":2,"ts":"x"}]"#,
            samples: 1, reasons: [.outOfRange, .invalidTimestamp]),
    ])
    func classifies(_ example: Case) {
        let result = classify(example.topic, example.payload)
        #expect(result.samples.count == example.samples)
        #expect(result.rejections.map(\.reason) == example.reasons)
        #expect(result.unknownCode == example.unknownCode)
        #expect(result.samples.allSatisfy { $0.deviceID == 1 })
    }

    @Test func rejectionsKeepTheTopicCodeAndArrayIndex() {
        let result = classify(
            "site/outlets/plug-1/telemetry", #"[{"voltage":227,"current":1},{"voltage":-3,"current":1}]"#)
        #expect(result.rejections.count == 1)
        #expect(result.rejections.first?.index == 1)
        #expect(result.rejections.first?.deviceCode == "plug-1")
        #expect(result.rejections.first?.topic == "site/outlets/plug-1/telemetry")
    }

    @Test func unknownDevicesPayloadIsNeverDecoded() {
        // Even a perfectly valid reading of an unknown code is not a sample.
        let result = classify("site/outlets/ghost/telemetry", #"{"voltage":227,"current":1}"#)
        #expect(result.samples.isEmpty)
        #expect(result.rejections.map(\.reason) == [.unknownDevice])
    }
}

@Suite struct BatchTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func message(_ topic: String, _ payload: String, at offset: Double = 0) -> RawMessage {
        RawMessage(topic: topic, payload: Array(payload.utf8), receivedAt: now.addingTimeInterval(offset))
    }

    func rejection(_ reason: RejectionReason) -> RejectedReading {
        RejectedReading(receivedAt: now, topic: "t", deviceCode: "c", reason: reason, detail: "d", index: nil)
    }

    @Test func countsEveryRejectionButStoresABoundedNumber() {
        var batch = Batch(maxStoredRejections: 3, payloadExcerptBytes: 8)
        for _ in 0..<5 {
            batch.add(ClassifiedMessage(rejections: [rejection(.malformedJSON)]), of: message("t", "{{{{"))
        }
        batch.add(
            ClassifiedMessage(rejections: [rejection(.outOfRange), rejection(.outOfRange)]), of: message("t", "x"))
        #expect(batch.rejectionCounts == [.malformedJSON: 5, .outOfRange: 2])
        #expect(batch.storedRejections.count == 3)
        #expect(batch.storedExcerpts.count == 3)
        #expect(batch.rowCount == 7)
        #expect(batch.messageCount == 6)
    }

    @Test func aggregatesPendingCodes() {
        var batch = Batch(maxStoredRejections: 10, payloadExcerptBytes: 8)
        let unknown = ClassifiedMessage(rejections: [rejection(.unknownDevice)], unknownCode: "ghost")
        batch.add(unknown, of: message("outlets/ghost/telemetry", "{}", at: 5))
        batch.add(unknown, of: message("outlets/ghost/telemetry", "{}", at: 1))
        batch.add(unknown, of: message("outlets/ghost/telemetry", "{}", at: 9))
        let sighting = batch.pending["ghost"]
        #expect(sighting?.messages == 3)
        #expect(sighting?.firstSeenAt == now.addingTimeInterval(5))
        #expect(sighting?.lastSeenAt == now.addingTimeInterval(9))
    }

    @Test(arguments: [
        ("abc", 8, "abc"),
        ("abcdefghij", 4, "abcd…"),
        ("a\u{0}b", 8, "a\u{2400}b"),
    ])
    func excerptIsBoundedAndPrintable(_ payload: String, _ limit: Int, _ expected: String) {
        #expect(Batch.excerpt(Array(payload.utf8), maxBytes: limit) == expected)
    }

    @Test func excerptOfInvalidUTF8DoesNotTrap() {
        let excerpt = Batch.excerpt([0xff, 0xfe, 0x41], maxBytes: 8)
        #expect(excerpt.hasSuffix("A"))
    }
}

@Suite struct RejectionLogLimiterTests {
    @Test func logsFirstThenOncePerIntervalWithTheSuppressedCount() {
        var limiter = RejectionLogLimiter(interval: 10)
        let start = Date(timeIntervalSince1970: 0)
        #expect(limiter.shouldLog(.malformedJSON, at: start) == 0)
        #expect(limiter.shouldLog(.malformedJSON, at: start.addingTimeInterval(1)) == nil)
        #expect(limiter.shouldLog(.malformedJSON, at: start.addingTimeInterval(2)) == nil)
        // Another reason has its own budget.
        #expect(limiter.shouldLog(.outOfRange, at: start.addingTimeInterval(3)) == 0)
        #expect(limiter.shouldLog(.malformedJSON, at: start.addingTimeInterval(10)) == 2)
        #expect(limiter.shouldLog(.malformedJSON, at: start.addingTimeInterval(11)) == nil)
    }
}

@Suite struct BackoffTests {
    @Test func doublesUpToTheCap() {
        var backoff = Backoff(initial: 1, maximum: 8)
        let delays = (0..<8).map { _ in backoff.nextDelay() }
        #expect(delays[0] >= 0.8 && delays[0] <= 1.2)
        #expect(delays[1] >= 1.6 && delays[1] <= 2.4)
        #expect(delays.allSatisfy { $0 <= 8 })
        #expect(delays[7] >= 6.4)
        backoff.reset()
        #expect(backoff.nextDelay() <= 1.2)
    }
}

@Suite struct RegistryMissPolicyTests {
    func ask(_ policy: inout RegistryMissPolicy, _ code: String, _ at: Date) -> Bool {
        policy.shouldLookUp(code, at: at)
    }

    @Test func boundsLookUpsPerSecondAndPerCode() {
        var policy = RegistryMissPolicy(lookupsPerSecond: 2, negativeSeconds: 2)
        let start = Date(timeIntervalSince1970: 0)
        let asked: [(String, Double, Bool)] = [
            ("a", 0, true), ("b", 0, true),
            ("c", 0, false),  // the bucket is empty
            ("c", 0.25, false),  // half a token
            ("c", 0.5, true),  // one token again
            ("a", 1, false),  // asked about "a" less than 2 s ago
            ("d", 1, true),
            ("a", 2.5, true),  // long enough ago, bucket refilled
        ]
        for (code, seconds, expected) in asked {
            #expect(ask(&policy, code, start.addingTimeInterval(seconds)) == expected, "\(code) at \(seconds) s")
        }
    }

    @Test func aFloodOfDistinctCodesIsCapped() {
        var policy = RegistryMissPolicy(lookupsPerSecond: 50, negativeSeconds: 2)
        let start = Date(timeIntervalSince1970: 0)
        let allowed = (0..<100_000).filter {
            policy.shouldLookUp("code-\($0)", at: start.addingTimeInterval(Double($0) / 100_000))
        }
        #expect(allowed.count <= 101)
    }
}
