/// One reading as `samples` returns it, its times in microseconds: `measuredAt` since its UTC day began, the others
/// after `measuredAt`.
public struct CompactReading: Equatable, Sendable {
    public var measuredAt: Int64
    public var receivedAfter: Int64
    public var deviceTimeAfter: Int64?
    public var voltage: Double?
    public var current: Double?
    public var power: Double
    public var powerFactor: Double?
    public var energy: Double?
    public var seq: Int64?

    public init(
        measuredAt: Int64, receivedAfter: Int64, deviceTimeAfter: Int64?, voltage: Double?, current: Double?,
        power: Double, powerFactor: Double?, energy: Double?, seq: Int64?
    ) {
        self.measuredAt = measuredAt
        self.receivedAfter = receivedAfter
        self.deviceTimeAfter = deviceTimeAfter
        self.voltage = voltage
        self.current = current
        self.power = power
        self.powerFactor = powerFactor
        self.energy = energy
        self.seq = seq
    }
}

/// An outlet-day packed column by column: one row of `samples_compact` (pure).
public struct CompactDay: Equatable, Sendable {
    public var readings: Int
    /// First and last measured_at, microseconds since the day began.
    public var firstAt: Int64
    public var lastAt: Int64
    public var measuredAt: PackedColumn
    public var receivedAt: PackedColumn
    public var deviceTime: PackedColumn
    public var voltage: PackedColumn
    public var current: PackedColumn
    public var power: PackedColumn
    public var powerFactor: PackedColumn
    public var energy: PackedColumn
    public var seq: PackedColumn

    /// The columns in the table's order.
    public var columns: [PackedColumn] {
        [measuredAt, receivedAt, deviceTime, voltage, current, power, powerFactor, energy, seq]
    }

    /// Microseconds a day holds; PostgreSQL turns microseconds into an interval in double precision, exact within
    /// ±2^53 (285 years): a device time further from its reading keeps its outlet-day in row form.
    static let microsecondsPerDay: Int64 = 86_400_000_000

    /// Packs `readings` (one outlet's, of one day, in time order, each time once), or nil when they cannot be
    /// (none, out of order, a time outside the day or too far from it): that outlet-day stays in row form.
    public init?(_ readings: [CompactReading]) {
        guard let first = readings.first, let last = readings.last else { return nil }
        let limit = ColumnCodec.exactLimit
        var previous = Int64.min
        for reading in readings {
            guard reading.measuredAt > previous, (0..<Self.microsecondsPerDay).contains(reading.measuredAt),
                abs(reading.receivedAfter) <= limit - Self.microsecondsPerDay,
                abs(reading.deviceTimeAfter ?? 0) <= limit - Self.microsecondsPerDay
            else { return nil }
            previous = reading.measuredAt
        }
        let measuredAt = ColumnCodec.integers(readings.map { $0.measuredAt }, orders: [2])
        // The SQL reads measured_at in delta order 2 only (bounded by the day, it always packs).
        guard measuredAt.deltaOrder == 2, !measuredAt.isRaw else { return nil }
        self.readings = readings.count
        firstAt = first.measuredAt
        lastAt = last.measuredAt
        self.measuredAt = measuredAt
        receivedAt = ColumnCodec.integers(readings.map { $0.receivedAfter }, orders: [0])
        deviceTime = ColumnCodec.integers(readings.map { $0.deviceTimeAfter }, orders: [0])
        voltage = ColumnCodec.doubles(readings.map { $0.voltage }, orders: [0, 1])
        current = ColumnCodec.doubles(readings.map { $0.current }, orders: [0, 1])
        power = ColumnCodec.doubles(readings.map { $0.power }, orders: [0, 1])
        powerFactor = ColumnCodec.doubles(readings.map { $0.powerFactor }, orders: [0, 1])
        energy = ColumnCodec.doubles(readings.map { $0.energy }, orders: [0, 1, 2])
        seq = ColumnCodec.integers(readings.map { $0.seq }, orders: [0, 1, 2])
    }
}

extension PackedColumn {
    /// The column as PostgreSQL reads an `outletd_packed` value in text: `(base,unit,…)`, arrays quoted, NULL empty.
    /// Doubles print their shortest form that reads back to the same bits (Swift's and PostgreSQL's float8 both
    /// round correctly).
    public var literal: String {
        func array<T>(_ values: [T]?, _ text: (T) -> String) -> String {
            guard let values else { return "" }
            return "\"{" + values.map(text).joined(separator: ",") + "}\""
        }
        let fields = [
            String(base), String(unit), String(deltaOrder), String(low), String(width),
            scale.map { "\($0)" } ?? "",
            array(words) { String($0) }, array(present) { String($0) }, array(outlierAt) { String($0) },
            array(outliers) { String($0) }, array(exactAt) { String($0) }, array(exact) { "\($0)" },
        ]
        return "(" + fields.joined(separator: ",") + ")"
    }
}
