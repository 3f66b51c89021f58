/// The result of decoding one MQTT message: the readings to store and what was rejected.
///
/// A decoder always yields at least one of the two for a telemetry message, or says why the message, sent by
/// a firmware in normal operation, carried nothing to store (``ignored``). Both may be non-empty when a JSON
/// array mixes valid and invalid elements: each element is judged alone, so bad ones never cost their neighbours.
public struct DecodedMessage: Sendable, Equatable {
    /// The valid readings, in payload order.
    public var readings: [Reading]
    /// The rejections, in payload order (``Rejection/index`` points into a JSON array).
    public var rejections: [Rejection]
    /// Readings left out because an earlier reading of the same message has the same time (the first wins).
    public var duplicates: Int
    /// Why a message without readings or rejections carried nothing to store.
    public var ignored: IgnoredKind?

    /// Creates a result; both lists default to empty.
    public init(
        readings: [Reading] = [], rejections: [Rejection] = [], duplicates: Int = 0, ignored: IgnoredKind? = nil
    ) {
        self.readings = readings
        self.rejections = rejections
        self.duplicates = duplicates
        self.ignored = ignored
    }

    /// A message that a firmware sends in normal operation and that carries no reading.
    public static func ignored(_ kind: IgnoredKind) -> DecodedMessage {
        DecodedMessage(ignored: kind)
    }

    /// A message rejected as a whole (``Rejection/index`` is `nil`).
    public static func rejected(_ reason: RejectionReason, _ detail: String) -> DecodedMessage {
        DecodedMessage(rejections: [Rejection(reason: reason, detail: detail)])
    }
}
