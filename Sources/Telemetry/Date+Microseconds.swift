import Foundation

extension Date {
    /// Microseconds between 1970-01-01T00:00:00Z and Foundation's reference date 2001-01-01T00:00:00Z.
    private static let referenceDateMicrosecondsSince1970: Int64 = 978_307_200_000_000
    /// The largest magnitude, in microseconds, converted without clamping (about ±290 000 years).
    private static let microsecondLimit = 9.2e18

    /// Whole microseconds since 1970-01-01T00:00:00Z, rounded to nearest (PostgreSQL's `timestamptz` precision).
    /// Clamped to about ±9.2e18 so that no date, however absurd, can trap.
    public var microsecondsSince1970: Int64 {
        // Work from the reference date, which is what `Date` stores, to avoid a second rounding.
        let microseconds = (timeIntervalSinceReferenceDate * 1_000_000).rounded()
        guard microseconds.isFinite else {
            return microseconds > 0 ? Int64.max : (microseconds < 0 ? Int64.min : 0)
        }
        let clamped = Int64(Swift.min(Swift.max(microseconds, -Self.microsecondLimit), Self.microsecondLimit))
        return clamped.addingReportingOverflow(Self.referenceDateMicrosecondsSince1970).partialValue
    }

    /// The canonical date for a whole number of microseconds since 1970-01-01T00:00:00Z. Every date the decoders
    /// produce is built this way; convert database timestamps with it too, so that equal instants compare equal.
    ///
    /// `Date(microsecondsSince1970: m).microsecondsSince1970 == m` holds while the instant is within 2^32 seconds of
    /// 2001 (years 1865–2137); further out a `Date` (a `Double` of seconds) cannot hold every microsecond and the
    /// result is the nearest instant it can hold.
    public init(microsecondsSince1970: Int64) {
        let sinceReference = microsecondsSince1970.subtractingReportingOverflow(
            Self.referenceDateMicrosecondsSince1970)
        let microseconds =
            sinceReference.overflow
            ? Double(microsecondsSince1970) - 978_307_200_000_000
            : Double(sinceReference.partialValue)
        self.init(timeIntervalSinceReferenceDate: microseconds / 1_000_000)
    }

    /// This date rounded to whole microseconds, in canonical form (see ``init(microsecondsSince1970:)``).
    public var roundedToMicroseconds: Date {
        Date(microsecondsSince1970: microsecondsSince1970)
    }
}

extension Date {
    /// Microseconds since 1970, `timeIntervalSince1970 × 10⁶` rounded to the nearest, clamped to `Int64`: the
    /// encoding of a time in spool records and in the writer's binary `COPY` (both must agree bit for bit, or a
    /// record read back would carry another instant).
    public var epochMicroseconds: Int64 {
        let value = (timeIntervalSince1970 * 1_000_000).rounded()
        guard !value.isNaN else { return Int64.min }
        if value >= 9.2e18 { return Int64.max }
        if value <= -9.2e18 { return Int64.min }
        return Int64(value)
    }
}
