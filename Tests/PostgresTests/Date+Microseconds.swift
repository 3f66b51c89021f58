import Foundation

extension Date {
    /// Exact microseconds since 1970 of a `Date` (the same split as the module, independent of `DateFormatter`).
    var microsecondsSince1970: Int64 {
        let sinceReference = timeIntervalSinceReferenceDate
        let whole = sinceReference.rounded(.down)
        return (Int64(whole) + 978_307_200) * 1_000_000 + Int64(((sinceReference - whole) * 1_000_000).rounded())
    }

    /// The `Date` nearest to a number of microseconds since 1970.
    init(microsecondsSince1970 microseconds: Int64) {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : -((-microseconds + 999_999) / 1_000_000)
        let fraction = microseconds - seconds * 1_000_000
        self.init(timeIntervalSinceReferenceDate: Double(seconds - 978_307_200) + Double(fraction) / 1_000_000)
    }
}
