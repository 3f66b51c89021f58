import Testing

@testable import Compaction

/// The packing of a column, without a database: every table's values come back from ``decode(_:count:)`` (the
/// arithmetic of sql/0026_compact_days.sql, written again here) bit for bit, in the form the table names, and no
/// larger than it should be. `CompactionTests` (IngestTests) checks the same against PostgreSQL's own reading.
@Suite struct ColumnCodecTests {
    /// The SQL's reading of a packed column: r from words or outliers, running sums by delta order, then
    /// base + unit × y (whole numbers; nil where absent).
    static func decodeIntegers(_ column: PackedColumn, count n: Int) -> [Int64?] {
        var r = [Int64](repeating: 0, count: n)
        for i in 0..<n {
            if column.outlierAt == nil, let outliers = column.outliers {
                r[i] = outliers[i]
            } else if let at = column.outlierAt, let index = at.firstIndex(of: Int32(i)) {
                r[i] = column.outliers?[index] ?? 0
            } else if column.width == 0 {
                r[i] = column.low
            } else {
                let per = 64 / column.width
                let word = UInt64(bitPattern: column.words?[i / per] ?? 0)
                let z = (word >> UInt64(i % per * column.width)) & ((1 << UInt64(column.width)) - 1)
                r[i] = column.low + Int64(z)
            }
        }
        // PostgreSQL sums in double precision, delta order 2 as (i + 1) × S1_i − Σ j × r_j.
        var y = r
        var s1: Double = 0
        var weighted: Double = 0
        for i in 0..<n {
            s1 += Double(r[i])
            weighted += Double(i) * Double(r[i])
            switch column.deltaOrder {
            case 0: y[i] = r[i]
            case 1: y[i] = Int64(s1)
            default: y[i] = Int64(Double(i + 1) * s1 - weighted)
            }
        }
        return (0..<n).map { i in
            if let present = column.present, (UInt64(bitPattern: present[i / 64]) >> UInt64(i % 64)) & 1 == 0 {
                return nil
            }
            return column.base + column.unit * y[i]
        }
    }

    static func decodeDoubles(_ column: PackedColumn, count n: Int) -> [Double?] {
        let whole = decodeIntegers(column, count: n)
        return (0..<n).map { i in
            guard let x = whole[i] else { return nil }
            if column.exactAt == nil, let exact = column.exact { return exact[i] }
            if let at = column.exactAt, let index = at.firstIndex(of: Int32(i)) { return column.exact?[index] }
            return Double(x) / (column.scale ?? .nan)
        }
    }

    static func bits(_ values: [Double?]) -> [UInt64?] { values.map { $0?.bitPattern } }

    /// The first r of a delta order is 0 where the others are not: one outlier is cheaper than a wider word.
    struct IntegerCase: Sendable, CustomTestStringConvertible {
        var what: String
        var values: [Int64?]
        var orders: [Int]
        /// Expected order, width and outliers; nil: the raw form.
        var form: (order: Int, width: Int, outliers: Int)?
        var testDescription: String { what }
    }

    static func series(_ count: Int, _ value: (Int) -> Int64?) -> [Int64?] { (0..<count).map(value) }

    static let integerCases: [IntegerCase] = [
        .init(what: "constant", values: series(500) { _ in 7 }, orders: [0, 1, 2], form: (0, 0, 0)),
        .init(
            what: "a counter by one", values: series(500) { Int64($0) + 1_000_000 }, orders: [0, 1, 2],
            form: (1, 0, 1)),
        .init(
            what: "a steady 10 s in microseconds", values: series(8_640) { Int64($0) * 10_000_000 }, orders: [2],
            form: (2, 0, 1)),
        .init(
            what: "10 s with a millisecond's jitter",
            values: series(1_000) { Int64($0) * 10_000_000 + Int64($0 * 7_919 % 1_000) * 1_000 }, orders: [2],
            form: (2, 11, 1)),
        .init(
            what: "small noise around a level", values: series(1_000) { 23_000 + Int64($0 * 31 % 17) },
            orders: [0, 1], form: (0, 5, 0)),
        .init(
            what: "one step in a quiet day", values: series(1_000) { $0 < 600 ? 0 : 200_000 + Int64($0 % 3) },
            orders: [0, 1], form: (1, 2, 1)),
        .init(
            what: "absent values", values: series(200) { $0 % 3 == 0 ? nil : Int64($0) }, orders: [0, 1, 2],
            form: (1, 2, 0)),
        .init(what: "all absent", values: series(100) { _ in nil }, orders: [0, 1, 2], form: (0, 0, 0)),
        .init(what: "extremes", values: [Int64.min, Int64.max, 0, -1, Int64.max - 1], orders: [0, 1, 2], form: nil),
        .init(what: "one reading", values: [42], orders: [0, 1, 2], form: (0, 0, 0)),
    ]

    @Test(arguments: integerCases)
    func integersComeBackAsTheyWere(_ test: IntegerCase) {
        let column = ColumnCodec.integers(test.values, orders: test.orders)
        #expect(Self.decodeIntegers(column, count: test.values.count) == test.values)
        if let form = test.form {
            #expect(column.deltaOrder == form.order, "order")
            #expect(column.width == form.width, "width")
            #expect((column.outlierAt?.count ?? 0) == form.outliers, "outliers")
        } else {
            #expect(column.isRaw)
        }
    }

    struct DoubleCase: Sendable, CustomTestStringConvertible {
        var what: String
        var values: [Double?]
        /// Expected scale and number of exact doubles; nil: the raw form.
        var form: (scale: Double, exact: Int)?
        var testDescription: String { what }
    }

    static func doubles(_ count: Int, _ value: (Int) -> Double?) -> [Double?] { (0..<count).map(value) }

    static let doubleCases: [DoubleCase] = [
        .init(what: "volts with one decimal", values: doubles(1_000) { Double(2_295 + $0 % 30) / 10 }, form: (10, 0)),
        .init(what: "whole watts", values: doubles(1_000) { Double(96 + $0 % 9) }, form: (1, 0)),
        .init(what: "milliamperes", values: doubles(1_000) { Double(420 + $0 % 50) / 1_000 }, form: (1_000, 0)),
        .init(
            what: "watt-hours by the thousandth", values: doubles(1_000) { Double($0 * 268) / 1_000 },
            form: (1_000, 0)),
        .init(what: "zeros with a negative zero", values: [0.0, -0.0, 0.0], form: (1, 1)),
        .init(what: "voltage × current", values: doubles(200) { 229.5 * (0.4 + Double($0) / 997) }, form: nil),
        .init(
            what: "absent and present", values: doubles(200) { $0 % 5 == 0 ? nil : Double($0) / 100 },
            form: (100, 0)),
        .init(
            what: "a few that are not whole units", values: doubles(300) { $0 % 100 == 0 ? 0.1 + 0.2 : Double($0) },
            form: (1, 3)),
        .init(what: "huge and tiny", values: [1e300, 5e-324, -1e-300, 12.5], form: nil),
    ]

    @Test(arguments: doubleCases)
    func doublesComeBackBitForBit(_ test: DoubleCase) {
        let column = ColumnCodec.doubles(test.values, orders: [0, 1, 2])
        #expect(Self.bits(Self.decodeDoubles(column, count: test.values.count)) == Self.bits(test.values))
        if let form = test.form {
            #expect(!column.isRaw)
            #expect(column.scale == form.scale, "scale")
            #expect((column.exactAt?.count ?? 0) == form.exact, "exact")
        } else {
            #expect(column.isRaw)
        }
    }

    /// Every form stays where PostgreSQL's double-precision sums are exact: counters near 2^53 go raw or order 0.
    @Test func largeCountersStayExact() {
        let near: [Int64?] = (0..<100).map { (1 << 53) - 50 + Int64($0) }
        let column = ColumnCodec.integers(near, orders: [0, 1, 2])
        #expect(Self.decodeIntegers(column, count: near.count) == near)
        let beyond: [Int64?] = (0..<100).map { (1 << 60) + Int64($0) * 1_000_003 }
        let wide = ColumnCodec.integers(beyond, orders: [0, 1, 2])
        #expect(Self.decodeIntegers(wide, count: beyond.count) == beyond)
    }

    /// A day of a steady outlet takes a few bytes a reading at most.
    @Test func aSteadyDayIsSmall() throws {
        let readings = (0..<8_640).map { (i: Int) -> CompactReading in
            let jitter: Int64 = Int64(i * 7_919 % 500) * 1_000
            let delay: Int64 = 2_000 + Int64(i * 104_729 % 40_000)
            let voltage: Double = Double(22_950 + i * 31 % 300) / 100
            let current: Double = Double(420 + i % 50) / 1_000
            let power: Double = Double(9_640 + i * 13 % 900) / 100
            return CompactReading(
                measuredAt: Int64(i) * 10_000_000 + jitter, receivedAfter: delay, deviceTimeAfter: 0,
                voltage: voltage, current: current, power: power, powerFactor: 0.97,
                energy: Double(i * 268) / 1_000, seq: Int64(i))
        }
        let day = try #require(CompactDay(readings))
        let sizes = day.columns.map { $0.payloadBytes }
        let bytes = sizes.reduce(0, +)
        #expect(Double(bytes) / Double(readings.count) < 8, "\(sizes)")
        #expect(Self.decodeIntegers(day.measuredAt, count: readings.count) == readings.map { $0.measuredAt })
    }

    /// What cannot be packed stays in row form: out of order, outside the day, a device time centuries away.
    @Test func unpackableDaysStayInRows() {
        func reading(_ at: Int64, deviceTimeAfter: Int64? = nil) -> CompactReading {
            CompactReading(
                measuredAt: at, receivedAfter: 0, deviceTimeAfter: deviceTimeAfter, voltage: nil, current: nil,
                power: 1, powerFactor: nil, energy: nil, seq: nil)
        }
        #expect(CompactDay([]) == nil)
        #expect(CompactDay([reading(20), reading(10)]) == nil)
        #expect(CompactDay([reading(10), reading(10)]) == nil)
        #expect(CompactDay([reading(-1)]) == nil)
        #expect(CompactDay([reading(86_400_000_000)]) == nil)
        #expect(CompactDay([reading(5, deviceTimeAfter: -(1 << 60))]) == nil)
        #expect(CompactDay([reading(5, deviceTimeAfter: -1_000_000_000)]) != nil)
    }

    /// The text PostgreSQL reads: NULL fields empty, arrays quoted, doubles in their shortest exact form.
    @Test func literalIsWhatPostgreSQLReads() {
        var column = PackedColumn(base: -5, unit: 10, deltaOrder: 1, low: -2, width: 3, scale: 100)
        column.words = [1, -1]
        column.exactAt = [4]
        column.exact = [0.30000000000000004]
        #expect(column.literal == #"(-5,10,1,-2,3,100.0,"{1,-1}",,,,"{4}","{0.30000000000000004}")"#)
        #expect(PackedColumn().literal == "(0,1,0,0,0,,,,,,,)")
    }
}
