import Foundation
import Testing

@testable import Ingest

@Suite struct IntakeQueueTests {
    func message(_ n: Int, bytes: Int = 4) -> RawMessage {
        RawMessage(topic: "t/\(n)", payload: Array(repeating: UInt8(n % 256), count: bytes), receivedAt: Date())
    }

    @Test func deliversInOrderAndInBatches() {
        let queue = IntakeQueue(maxMessages: 100, maxBytes: 1 << 20)
        for n in 0..<10 { #expect(queue.append(message(n))) }
        let first = queue.take(upTo: 4, waitingUntil: Date())
        let rest = queue.take(upTo: 100, waitingUntil: Date())
        #expect(first.map(\.topic) == (0..<4).map { "t/\($0)" })
        #expect(rest.map(\.topic) == (4..<10).map { "t/\($0)" })
        #expect(queue.depth == 0)
    }

    @Test func takeWaitsUntilTheDeadlineWhenEmpty() {
        let queue = IntakeQueue(maxMessages: 10, maxBytes: 1 << 20)
        let started = Date()
        let taken = queue.take(upTo: 10, waitingUntil: started.addingTimeInterval(0.1))
        #expect(taken.isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.09)
    }

    @Test func producerBlocksWhileFullAndResumesWhenSpaceFrees() async {
        let queue = IntakeQueue(maxMessages: 2, maxBytes: 1 << 20)
        queue.append(message(0))
        queue.append(message(1))
        let appended = ThreadCompletion()
        Thread {
            queue.append(message(2))  // blocks: the queue is full
            appended.markFinished()
        }.start()
        try? await Task.sleep(for: .milliseconds(100))
        #expect(!appended.isFinished)
        #expect(queue.depth == 2)
        _ = queue.take(upTo: 1, waitingUntil: Date())
        await appended.wait()
        #expect(queue.take(upTo: 10, waitingUntil: Date()).map(\.topic) == ["t/1", "t/2"])
    }

    @Test func byteBoundBlocksToo() async {
        let queue = IntakeQueue(maxMessages: 100, maxBytes: 10)
        queue.append(message(0, bytes: 8))
        let appended = ThreadCompletion()
        Thread {
            queue.append(message(1, bytes: 8))
            appended.markFinished()
        }.start()
        try? await Task.sleep(for: .milliseconds(100))
        #expect(!appended.isFinished)
        #expect(queue.depthBytes == 8)
        _ = queue.take(upTo: 1, waitingUntil: Date())
        await appended.wait()
        #expect(queue.depthBytes == 8)
    }

    @Test func oversizedMessageStillEntersAnEmptyQueue() {
        let queue = IntakeQueue(maxMessages: 10, maxBytes: 10)
        #expect(queue.append(message(0, bytes: 100)))
        #expect(queue.depth == 1)
    }

    @Test func closeReleasesBlockedProducersAndKeepsWhatWasAccepted() async {
        let queue = IntakeQueue(maxMessages: 1, maxBytes: 1 << 20)
        queue.append(message(0))
        let result = Locked<Bool?>(nil)
        let done = ThreadCompletion()
        Thread {
            result.value = queue.append(message(1))
            done.markFinished()
        }.start()
        try? await Task.sleep(for: .milliseconds(50))
        queue.close()
        await done.wait()
        #expect(result.value == false)
        #expect(!queue.isClosedAndDrained)
        #expect(queue.take(upTo: 10, waitingUntil: Date()).map(\.topic) == ["t/0"])
        #expect(queue.isClosedAndDrained)
        #expect(queue.append(message(2)) == false)
    }
}
