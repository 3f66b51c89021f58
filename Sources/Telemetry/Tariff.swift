/// An energy tariff as an operator writes it (docs/ROLLUPS.md, "Cost"): a base price per kWh, optional time-of-day
/// bands on given weekdays, holidays on which no band applies, a per-kWh adder per month (Brazil's *bandeira
/// tarifária*), and taxes on everything. One version of it prices from ``validFrom`` until the next version's.
///
/// Money is decimal text exactly as written (`0.62`, `1.38`): PostgreSQL's `numeric` does the arithmetic, never
/// floating point. Cost of `kWh` at a minute = kWh × (band or base price + the month's adder) × (1 + taxes / 100).
public struct Tariff: Sendable, Equatable {

    /// A time-of-day band: its price applies on `days` from `fromMinute` to `toMinute` of the tariff's clock.
    public struct Band: Sendable, Equatable {
        public var name: String
        public var days: [Weekday]
        /// Minutes after local midnight, 0…1439.
        public var fromMinute: Int
        /// Minutes after local midnight, 1…1440 (`"24:00"`), after `fromMinute`.
        public var toMinute: Int
        public var pricePerKWh: String

        public init(name: String, days: [Weekday], fromMinute: Int, toMinute: Int, pricePerKWh: String) {
            self.name = name
            self.days = days
            self.fromMinute = fromMinute
            self.toMinute = toMinute
            self.pricePerKWh = pricePerKWh
        }
    }

    /// ISO 4217 code (`BRL`).
    public var currency: String
    /// The bands' clock (IANA name); nil: each outlet's own time zone.
    public var timeZone: String?
    /// The first day this version prices, `YYYY-MM-DD` in the tariff's clock.
    public var validFrom: String
    /// Price outside every band, per kWh.
    public var pricePerKWh: String
    /// In order: the first band that matches a minute wins (bands of one day never overlap).
    public var bands: [Band]
    /// `YYYY-MM-DD` days on which no band applies.
    public var holidays: [String]
    /// Per-kWh adders by month `YYYY-MM`, in month order.
    public var monthlyAdders: [(month: String, perKWh: String)]
    /// Taxes on everything, percent.
    public var taxesPercent: String

    public init(
        currency: String, timeZone: String?, validFrom: String, pricePerKWh: String, bands: [Band] = [],
        holidays: [String] = [], monthlyAdders: [(month: String, perKWh: String)] = [], taxesPercent: String = "0"
    ) {
        self.currency = currency
        self.timeZone = timeZone
        self.validFrom = validFrom
        self.pricePerKWh = pricePerKWh
        self.bands = bands
        self.holidays = holidays
        self.monthlyAdders = monthlyAdders
        self.taxesPercent = taxesPercent
    }

    public static func == (lhs: Tariff, rhs: Tariff) -> Bool {
        lhs.currency == rhs.currency && lhs.timeZone == rhs.timeZone && lhs.validFrom == rhs.validFrom
            && lhs.pricePerKWh == rhs.pricePerKWh && lhs.bands == rhs.bands && lhs.holidays == rhs.holidays
            && lhs.monthlyAdders.map(\.month) == rhs.monthlyAdders.map(\.month)
            && lhs.monthlyAdders.map(\.perKWh) == rhs.monthlyAdders.map(\.perKWh)
            && lhs.taxesPercent == rhs.taxesPercent
    }

    /// `HH:MM` (00:00–23:59, and 24:00 when `allowsEndOfDay`) as minutes after midnight, or nil.
    public static func minutes(_ text: String, allowsEndOfDay: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60
        else { return nil }
        if hour == 24 && minute == 0 && allowsEndOfDay { return 1_440 }
        return hour < 24 ? hour * 60 + minute : nil
    }

    /// `minutes` as `HH:MM`.
    public static func clock(_ minutes: Int) -> String {
        let hour = minutes / 60
        let minute = minutes % 60
        return (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }

    /// Whether `text` is a non-negative decimal (`0.62`, `12`, `0.01885`): what a price, adder or tax may be.
    public static func isDecimal(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 20 }) else {
            return false
        }
        return parts.allSatisfy { $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// The first pair of bands that overlap on a day they share, as indexes into ``bands``.
    public func firstOverlap() -> (Int, Int)? {
        for (index, band) in bands.enumerated() {
            for other in bands.indices where other > index {
                let shared = Set(band.days).intersection(bands[other].days)
                if !shared.isEmpty && band.fromMinute < bands[other].toMinute && bands[other].fromMinute < band.toMinute
                {
                    return (index, other)
                }
            }
        }
        return nil
    }
}
