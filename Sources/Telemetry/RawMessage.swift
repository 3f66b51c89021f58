import Foundation

/// A message as it came from the broker, before any decoding: what a spool record holds.
public struct RawMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// When outletd's MQTT callback received it.
    public var receivedAt: Date

    public init(topic: String, payload: [UInt8], receivedAt: Date) {
        self.topic = topic
        self.payload = payload
        self.receivedAt = receivedAt
    }
}
