import Foundation
import Testing

@testable import MQTT

/// `publish(…, deferred: true)` queues without waking the network thread; `flush()` wakes it once for all of them
/// (`outletd simulate` publishes a fleet's readings so). Nothing deferred may be lost or reordered, and a deferred
/// publish nobody flushes still leaves at the thread's next turn.
@Suite("MQTTClient deferred publishes against a real mosquitto")
struct DeferredPublishTests {
    @Test func deferredPublishesArriveInOrderAfterOneFlush() async throws {
        try await withPublisherAndSubscriber("deferred") { clients in
            let (prefix, publisher, collector) = (clients.prefix, clients.publisher, clients.collector)
            let count = 5_000
            for index in 0..<count {
                try publisher.publish("\(prefix)/seq", payload: Array(String(index).utf8), qos: 1, deferred: true)
            }
            publisher.flush()
            #expect(await collector.waitFor(count, on: "\(prefix)/seq", timeout: .seconds(60)))
            #expect(await eventually(timeout: .seconds(30)) { publisher.acknowledgedCount >= UInt64(count) })
            let numbers = collector.messages(on: "\(prefix)/seq").map {
                Int(String(decoding: $0.payload, as: UTF8.self))
            }
            let inOrder = numbers == (0..<count).map { Optional($0) }
            #expect(inOrder, "messages missing, duplicated or out of order")
            #expect(publisher.acknowledgedCount == UInt64(count))
        }
    }

    @Test func anUnflushedDeferredPublishLeavesAtTheNextTurn() async throws {
        try await withPublisherAndSubscriber("unflushed") { clients in
            let (prefix, publisher, collector) = (clients.prefix, clients.publisher, clients.collector)
            // An idle connection: the thread's next turn is its poll's timeout (a second), not a packet read.
            try publisher.publish("\(prefix)/once", payload: Array("late".utf8), qos: 1, deferred: true)
            #expect(await collector.waitFor(1, on: "\(prefix)/once", timeout: .seconds(5)))
            #expect(await eventually(timeout: .seconds(5)) { publisher.acknowledgedCount == 1 })
        }
    }
}
