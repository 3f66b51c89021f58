import Foundation
import Telemetry

/// What one transaction writes: samples, the rejections to store and count, pending codes.
public struct Batch: Sendable {
    public private(set) var samples: [DeviceSample] = []
    /// Rejections kept for `rejected_messages` (the first `maxStoredRejections` of the batch).
    public private(set) var storedRejections: [RejectedReading] = []
    /// Payload excerpts of `storedRejections`, same order.
    public private(set) var storedExcerpts: [String] = []
    /// Every rejection of the batch, counted by reason.
    public private(set) var rejectionCounts: [RejectionReason: Int] = [:]
    /// Unknown codes: messages, first and last receive time, last topic.
    public private(set) var pending: [String: PendingSighting] = [:]
    /// Messages that went into the batch.
    public private(set) var messageCount = 0

    let maxStoredRejections: Int
    let payloadExcerptBytes: Int

    /// One unknown code's sightings within a batch.
    public struct PendingSighting: Sendable, Equatable {
        public var messages: Int
        public var firstSeenAt: Date
        public var lastSeenAt: Date
        public var lastTopic: String
    }

    /// `expectedRows`: room for that many samples is reserved at once (the writer passes `batch_max_rows`).
    /// A batch that fills then never holds its samples twice while the array grows, nor rounds its room up
    /// to a power of two; room it does not use costs no memory (an allocation this large is mapped, and
    /// untouched pages are not resident).
    public init(maxStoredRejections: Int, payloadExcerptBytes: Int, expectedRows: Int = 0) {
        self.maxStoredRejections = maxStoredRejections
        self.payloadExcerptBytes = payloadExcerptBytes
        samples.reserveCapacity(expectedRows)
    }

    /// Rows this batch writes or counts; the writer flushes at `batch_max_rows`.
    public var rowCount: Int { samples.count + rejectionCounts.values.reduce(0, +) }

    public var isEmpty: Bool { messageCount == 0 }

    /// Adds one classified message.
    public mutating func add(_ classified: ClassifiedMessage, of message: RawMessage) {
        messageCount += 1
        samples.append(contentsOf: classified.samples)
        if !classified.rejections.isEmpty {
            let excerpt = Self.excerpt(message.payload, maxBytes: payloadExcerptBytes)
            for rejection in classified.rejections {
                rejectionCounts[rejection.reason, default: 0] += 1
                guard storedRejections.count < maxStoredRejections else { continue }
                storedRejections.append(rejection)
                storedExcerpts.append(excerpt)
            }
        }
        if let code = classified.unknownCode {
            if var sighting = pending[code] {
                sighting.messages += 1
                sighting.lastSeenAt = max(sighting.lastSeenAt, message.receivedAt)
                sighting.lastTopic = message.topic
                pending[code] = sighting
            } else {
                pending[code] = PendingSighting(
                    messages: 1, firstSeenAt: message.receivedAt, lastSeenAt: message.receivedAt,
                    lastTopic: message.topic)
            }
        }
    }

    /// Adds the samples of readings that waited for a later message (``MessageClassifier/releaseHeld(before:)``):
    /// their messages are in this batch already.
    public mutating func addReleased(_ classified: ClassifiedMessage) {
        samples.append(contentsOf: classified.samples)
    }

    /// The first `maxBytes` of a payload as text (invalid UTF-8 replaced, NUL made visible).
    public static func excerpt(_ payload: [UInt8], maxBytes: Int) -> String {
        let cut = payload.prefix(maxBytes)
        var text = String(decoding: cut, as: UTF8.self)
        if text.contains("\0") { text = text.replacingOccurrences(of: "\0", with: "\u{2400}") }
        return payload.count > maxBytes ? text + "…" : text
    }
}
