/// A message, or one reading of a JSON array, that was not stored, and why.
public struct Rejection: Sendable, Equatable, CustomStringConvertible {
    /// The machine-readable reason.
    public var reason: RejectionReason
    /// A human-readable explanation naming the field and the value, e.g. `voltage 612.0 V outside 0–500 V`.
    public var detail: String
    /// The element's position in a JSON array; `nil` when the whole message (or its single object) is rejected.
    public var index: Int?

    /// Creates a rejection; `index` defaults to `nil` (the whole message).
    public init(reason: RejectionReason, detail: String, index: Int? = nil) {
        self.reason = reason
        self.detail = detail
        self.index = index
    }

    /// `reason[index]: detail`, e.g. `out_of_range[3]: voltage 612.0 V outside 0–500 V`.
    public var description: String {
        if let index {
            return "\(reason.rawValue)[\(index)]: \(detail)"
        }
        return "\(reason.rawValue): \(detail)"
    }
}

/// A rejection is what the payload and command parsers fail with.
extension Rejection: Error {}
