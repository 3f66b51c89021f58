import Foundation
import TestSupport
import Testing

@testable import MQTT

/// `publish(…, deferred: true)` queues without waking the network thread; `flush()` wakes it once for all of them
/// (`outletd simulate` publishes a fleet's readings so). Nothing deferred may be lost or reordered, and a deferred
/// publish nobody flushes still leaves at the thread's next turn.
@Suite("MQTTClient deferred publishes against a real mosquitto")
struct DeferredPublishTests {
    @Test func deferredPublishesArriveInOrderAfterOneFlush() async throws {
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("deferred")
            let collector = MessageCollector()
            let subscriber = try await startSubscriber(
                configuration(stack), filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: collector)
            defer { subscriber.stop() }
            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))

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
        try await withBroker { stack in
            let prefix = TestStack.uniqueName("unflushed")
            let collector = MessageCollector()
            let subscriber = try await startSubscriber(
                configuration(stack), filter: "\(prefix)/#", probeTopic: "\(prefix)/probe", collector: collector)
            defer { subscriber.stop() }
            let publisher = try MQTTClient(configuration: configuration(stack)) { _ in }
            defer { publisher.stop() }
            try publisher.start()
            try await publisher.waitUntilConnected(timeout: .seconds(10))

            // An idle connection: the thread's next turn is its poll's timeout (a second), not a packet read.
            try publisher.publish("\(prefix)/once", payload: Array("late".utf8), qos: 1, deferred: true)
            #expect(await collector.waitFor(1, on: "\(prefix)/once", timeout: .seconds(5)))
            #expect(await eventually(timeout: .seconds(5)) { publisher.acknowledgedCount == 1 })
        }
    }
}
