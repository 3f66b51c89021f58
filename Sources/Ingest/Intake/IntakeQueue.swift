import Foundation

/// The bounded hand-off between the MQTT network thread (producer) and the batch writer thread
/// (consumer).
///
/// `append` blocks while the queue is full: the MQTT callback then does not return, libmosquitto
/// sends no PUBACK, the broker's in-flight window to outletd fills and the broker queues — real
/// backpressure, nothing dropped. Both bounds (messages and payload bytes) are checked; one
/// message larger than the byte bound is still accepted into an empty queue so it cannot wedge.
///
/// All state sits behind one `NSCondition`, hence `@unchecked Sendable`.
public final class IntakeQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var messages: [RawMessage] = []
    private var head = 0
    private var bytes = 0
    private var closed = false
    private var waitingProducers = 0

    /// The message bound.
    public let maxMessages: Int
    /// The payload byte bound.
    public let maxBytes: Int

    public init(maxMessages: Int, maxBytes: Int) {
        precondition(maxMessages > 0 && maxBytes > 0, "IntakeQueue bounds must be positive")
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
    }

    /// Adds a message, waiting while the queue is full. Returns false (and drops nothing that was
    /// accepted before) when the queue was closed: the caller must not acknowledge the message.
    @discardableResult
    public func append(_ message: RawMessage) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !closed && count > 0 && (count >= maxMessages || bytes + message.payload.count > maxBytes) {
            waitingProducers += 1
            condition.wait()
            waitingProducers -= 1
        }
        guard !closed else { return false }
        messages.append(message)
        bytes += message.payload.count
        condition.broadcast()
        return true
    }

    /// Takes up to `maxCount` messages. Waits until at least one is there, the queue is closed, or
    /// `deadline` passes; then returns what is there without waiting more.
    public func take(upTo maxCount: Int, waitingUntil deadline: Date) -> [RawMessage] {
        condition.lock()
        defer { condition.unlock() }
        while count == 0 && !closed {
            if !condition.wait(until: deadline) { break }
        }
        let taken = min(maxCount, count)
        guard taken > 0 else { return [] }
        let slice = Array(messages[head..<(head + taken)])
        head += taken
        for message in slice { bytes -= message.payload.count }
        if head == messages.count {
            messages.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4_096 && head * 2 > messages.count {
            messages.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return slice
    }

    /// No more appends are accepted; blocked producers return false; the consumer drains the rest.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Whether ``close()`` was called and every message was taken.
    public var isClosedAndDrained: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed && count == 0
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// Messages waiting.
    public var depth: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    /// Payload bytes waiting.
    public var depthBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return bytes
    }

    private var count: Int { messages.count - head }
}
