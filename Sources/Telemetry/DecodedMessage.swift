/// The result of decoding one MQTT message: the readings to store and what was rejected.
///
/// A decoder always yields at least one of the two for a telemetry message. Both may be non-empty when a JSON
/// array mixes valid and invalid elements: each element is judged alone, so bad ones never cost their neighbours.
public struct DecodedMessage: Sendable, Equatable {
    /// The valid readings, in payload order.
    public var readings: [Reading]
    /// The rejections, in payload order (``Rejection/index`` points into a JSON array).
    public var rejections: [Rejection]

    /// Creates a result; both lists default to empty.
    public init(readings: [Reading] = [], rejections: [Rejection] = []) {
        self.readings = readings
        self.rejections = rejections
    }

    /// A message rejected as a whole (``Rejection/index`` is `nil`).
    public static func rejected(_ reason: RejectionReason, _ detail: String) -> DecodedMessage {
        DecodedMessage(rejections: [Rejection(reason: reason, detail: detail)])
    }
}
