/// One column of an outlet-day, packed as `outletd_packed` holds it (sql/0026_compact_days.sql says how it is read):
/// whole numbers x_i = base + unit × y_i, y the running sums (`deltaOrder` times) of r_i = low + z_i, the z_i
/// bit-packed `64 / width` to a 64-bit word; the r_i that do not fit listed apart (outliers); a NULL bitmap; for
/// doubles, the scale (x / scale is the double) and the doubles that are no whole number of 1 / scale (exact).
///
/// PostgreSQL computes the running sums in double precision, which is exact for whole numbers within ±2^53: the
/// encoder only chooses a form whose every y, partial sum and unit × y stays there (for delta order 2, read as
/// (i + 1) × S1_i − Σ j × r_j, both terms too), and falls back to the raw form (every r, or every double, listed)
/// where none does.
public struct PackedColumn: Equatable, Sendable {
    public var base: Int64 = 0
    public var unit: Int64 = 1
    public var deltaOrder = 0
    public var low: Int64 = 0
    public var width = 0
    public var scale: Double?
    public var words: [Int64]?
    public var present: [Int64]?
    public var outlierAt: [Int32]?
    public var outliers: [Int64]?
    public var exactAt: [Int32]?
    public var exact: [Double]?

    /// Every number listed as it is (outliers without positions), or every double (exact without positions).
    public var isRaw: Bool { (outlierAt == nil && outliers != nil) || (exactAt == nil && exact != nil) }

    /// The bytes it takes before PostgreSQL's row and array headers: what the encoder minimises.
    public var payloadBytes: Int {
        8 * ((words?.count ?? 0) + (present?.count ?? 0) + (outliers?.count ?? 0) + (exact?.count ?? 0))
            + 4 * ((outlierAt?.count ?? 0) + (exactAt?.count ?? 0))
    }
}

/// Packs a column's values (pure; ``CompactDay`` calls it per column).
public enum ColumnCodec {
    /// Whole numbers PostgreSQL's double-precision running sums keep exact.
    static let exactLimit: Int64 = 1 << 53
    /// At most this many outliers per column: the SQL finds one with `= ANY`, a scan of the list per reading.
    static let maxOutliers = 32
    /// Widths above this go raw: a 64-bit word then holds one number anyway, and a mask of 2^63 overflows.
    static let maxWidth = 62
    /// The scales a double column may take, smallest first: whole units up to millionths.
    static let scales: [Double] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]

    /// Packs whole numbers (nil: absent), trying each of `orders` and keeping the smallest.
    public static func integers(_ values: [Int64?], orders: [Int]) -> PackedColumn {
        let present = bitmap(values)
        let filled = fill(values)
        var best: PackedColumn?
        for order in orders {
            guard var column = pack(filled, order: order) else { continue }
            column.present = present
            if column.payloadBytes < best?.payloadBytes ?? .max { best = column }
        }
        if let best { return best }
        return PackedColumn(present: present, outliers: filled)
    }

    /// Packs doubles (nil: absent): as whole numbers of the smallest scale at which most are exact, the others
    /// listed exactly; raw (every double listed) when that is smaller or nothing else fits.
    public static func doubles(_ values: [Double?], orders: [Int]) -> PackedColumn {
        let presentValues = values.compactMap { $0 }
        let scale = scales.first { scale in
            let misses = presentValues.lazy.filter { scaled($0, scale) == nil }.count
            return misses <= maxOutliers
        }
        var raw = PackedColumn(present: bitmap(values), exact: values.map { $0 ?? 0 })
        raw.scale = 1
        guard let scale else { return raw }
        var whole: [Int64?] = []
        whole.reserveCapacity(values.count)
        var exactAt: [Int32] = []
        var exact: [Double] = []
        for (index, value) in values.enumerated() {
            guard let value else {
                whole.append(nil)
                continue
            }
            if let number = scaled(value, scale) {
                whole.append(number)
            } else {
                // Absent for the packing (it repeats the previous number), listed exactly.
                whole.append(nil)
                exactAt.append(Int32(index))
                exact.append(value)
            }
        }
        let filled = fill(whole)
        var best: PackedColumn?
        for order in orders {
            guard var column = pack(filled, order: order) else { continue }
            column.present = bitmap(values)
            column.scale = scale
            if !exactAt.isEmpty {
                column.exactAt = exactAt
                column.exact = exact
            }
            if column.payloadBytes < best?.payloadBytes ?? .max { best = column }
        }
        guard let best, best.payloadBytes < raw.payloadBytes else { return raw }
        return best
    }

    /// `value × scale` as a whole number when dividing it back by `scale` in double precision gives `value`'s very
    /// bits (so -0 and NaN never do), within ±2^53.
    static func scaled(_ value: Double, _ scale: Double) -> Int64? {
        guard value.isFinite else { return nil }
        let product = (value * scale).rounded()
        guard abs(product) <= Double(exactLimit) else { return nil }
        let number = Int64(product)
        guard (Double(number) / scale).bitPattern == value.bitPattern else { return nil }
        return number
    }

    /// The NULL bitmap (bit set: a value), nil when every value is there.
    static func bitmap<T>(_ values: [T?]) -> [Int64]? {
        guard values.contains(where: { $0 == nil }) else { return nil }
        var words = [UInt64](repeating: 0, count: (values.count + 63) / 64)
        for (index, value) in values.enumerated() where value != nil {
            words[index / 64] |= 1 << UInt64(index % 64)
        }
        return words.map { Int64(bitPattern: $0) }
    }

    /// Absent values repeat the one before (the first present one before any), so they cost zeros.
    static func fill(_ values: [Int64?]) -> [Int64] {
        var last = values.first { $0 != nil }.flatMap { $0 } ?? 0
        return values.map { value in
            if let value { last = value }
            return last
        }
    }

    /// The column in delta order `order`, or nil when its numbers leave the range PostgreSQL sums exactly.
    static func pack(_ x: [Int64], order: Int) -> PackedColumn? {
        guard let first = x.first else { return PackedColumn(deltaOrder: order) }
        var unit: Int64 = 0
        for value in x {
            let (difference, overflow) = value.subtractingReportingOverflow(first)
            guard !overflow else { return nil }
            unit = gcd(unit, difference.magnitude)
        }
        if unit == 0 { unit = 1 }
        let y = x.map { ($0 &- first) / unit }
        let limit = exactLimit
        // Every y, and unit × y (added to base in double precision), within ±2^53; doubles' x are already.
        guard y.allSatisfy({ abs($0) <= limit && abs($0.multipliedReportingOverflow(by: unit).partialValue) <= limit })
        else { return nil }
        var r = y
        for _ in 0..<order {
            var previous: Int64 = 0
            for index in r.indices {
                let value = r[index]
                r[index] = value &- previous
                previous = value
                guard abs(r[index]) <= limit else { return nil }
            }
        }
        // Delta order 2 is read in one window as (i + 1) × S1_i − Σ j × r_j: both terms within ±2^53 too.
        if order == 2 {
            var s1: Int64 = 0
            var weighted: Int64 = 0
            for (index, value) in r.enumerated() {
                s1 += value
                let (term, overflow) = Int64(index).multipliedReportingOverflow(by: value)
                let (sum, overflowSum) = weighted.addingReportingOverflow(term)
                let (scaled, overflowScaled) = Int64(index + 1).multipliedReportingOverflow(by: s1)
                guard !overflow, !overflowSum, !overflowScaled, abs(sum) <= limit, abs(scaled) <= limit else {
                    return nil
                }
                weighted = sum
            }
        }
        var column = bitPack(r)
        column.base = first
        column.unit = unit
        column.deltaOrder = order
        return column
    }

    /// r packed at the width that costs least, counting the outliers a narrower width leaves.
    static func bitPack(_ r: [Int64]) -> PackedColumn {
        let sorted = r.sorted()
        let n = sorted.count
        var best: (cost: Int, low: Int64, width: Int)?
        for outliers in 0...min(maxOutliers, n - 1) {
            // The narrowest window holding n - outliers of the numbers.
            let span = n - outliers
            var window: (range: UInt64, low: Int64)?
            for start in 0...(n - span) {
                let (range, overflow) = sorted[start + span - 1].subtractingReportingOverflow(sorted[start])
                let magnitude = overflow ? UInt64.max : UInt64(range)
                if magnitude < window?.range ?? .max { window = (magnitude, sorted[start]) }
            }
            guard let window else { continue }
            let width = window.range == 0 ? 0 : 64 - window.range.leadingZeroBitCount
            guard width <= maxWidth else { continue }
            let words = width == 0 ? 0 : (n + 64 / width - 1) / (64 / width)
            let cost = 8 * words + 12 * outliers
            if cost < best?.cost ?? .max { best = (cost, window.low, width) }
        }
        guard let best else { return PackedColumn(outliers: r) }
        var column = PackedColumn(low: best.low, width: best.width)
        var outlierAt: [Int32] = []
        var outliers: [Int64] = []
        let limit = best.width == 0 ? 0 : (UInt64(1) << UInt64(best.width)) - 1
        var words: [UInt64] =
            best.width == 0 ? [] : Array(repeating: 0, count: (n + 64 / best.width - 1) / (64 / best.width))
        let perWord = best.width == 0 ? 0 : 64 / best.width
        for (index, value) in r.enumerated() {
            let (offset, overflow) = value.subtractingReportingOverflow(best.low)
            if overflow || offset < 0 || UInt64(offset) > limit {
                outlierAt.append(Int32(index))
                outliers.append(value)
            } else if best.width > 0 {
                words[index / perWord] |= UInt64(offset) << UInt64(index % perWord * best.width)
            }
        }
        if best.width > 0 { column.words = words.map { Int64(bitPattern: $0) } }
        if !outlierAt.isEmpty {
            column.outlierAt = outlierAt
            column.outliers = outliers
        }
        return column
    }

    static func gcd(_ a: Int64, _ b: UInt64) -> Int64 {
        var (x, y) = (UInt64(a), b)
        while y != 0 { (x, y) = (y, x % y) }
        return x > UInt64(Int64.max) ? 1 : Int64(x)
    }
}
