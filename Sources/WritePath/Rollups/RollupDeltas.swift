import Telemetry

/// What a batch's samples add to their outlets' minute rollups, computed by the writer before
/// PostgreSQL merges it (docs/ROLLUPS.md, "How the write path maintains them").
///
/// For each outlet, its samples in the batch, in time order, form a chain: every sample adds itself
/// to its minute, and every segment between two consecutive samples adds its integral, covered
/// seconds and energy to the minute of the sample it starts at — the same definitions as the SQL
/// (`outletd_minute_rollups`), with the same arithmetic. What the batch cannot know, PostgreSQL
/// adds when it merges: the segment from the outlet's stored tail to the chain's first sample, and
/// whether every sample of the chain was really inserted (a chain with a replayed reading, or one
/// starting before the tail, is recomputed from the raw samples instead).
struct RollupDeltas: Equatable {
    /// One outlet's samples in the batch: how many, the first and last of them, the sum of its
    /// minutes (what the batch adds to the outlet's hour and day when they all fall in one hour),
    /// and where its minutes are.
    struct Chain: Equatable {
        var deviceID: Int32
        var sampleCount: Int
        var first: Point
        var last: Point
        var total: Minute
        /// Where the chain's minutes are in ``RollupDeltas/minutes``.
        var minuteIndices: Range<Int>
        /// How many minutes the samples fall in.
        var minuteCount: Int { minuteIndices.count }
        var firstMinuteIndex: Int { minuteIndices.lowerBound }
    }

    /// A sample's time (microseconds since the Unix epoch), power and energy counter.
    struct Point: Equatable {
        var micros: Int64
        var powerWatts: Double
        var energyWattHours: Double?
    }

    /// One outlet-minute's share of the batch, in the measures of `power_rollups_minute`.
    struct Minute: Equatable {
        var deviceID: Int32
        var bucketMicros: Int64
        var sampleCount = 0
        var powerSumWatts = 0.0
        var powerIntegralWattSeconds = 0.0
        var coveredSeconds = 0.0
        var energyWattHours = 0.0
        var minPowerWatts = Double.infinity
        var peakPowerWatts = -Double.infinity
        var peakMicros: Int64 = 0
        var minVoltageVolts: Double?
        var maxVoltageVolts: Double?
        var lastPowerWatts = 0.0
        var lastMicros: Int64 = 0
    }

    /// Outlets whose samples in the batch could be summarised (no two different ones at one time).
    var chains: [Chain] = []
    /// Their minutes, by outlet and time.
    var minutes: [Minute] = []

    static let microsPerMinute: Int64 = 60_000_000

    /// The energy, Wh, between two readings of an outlet's cumulative counter (`outletd_counter_energy`,
    /// migration 16): the increase; nothing for a decrease of at most max(1 Wh, 1 % of `from`), which is
    /// jitter (a rounding step, a counter restored a little behind); `to` after a larger decrease, a reset
    /// (the counter counts again from zero).
    static func counterEnergy(from: Double, to: Double) -> Double {
        if to >= from { return to - from }
        return from - to <= max(1, from * 0.01) ? 0 : to
    }

    /// `maxGapSeconds` is `rollup_settings.max_gap_seconds`: longer segments add no integral.
    init(_ samples: [DeviceSample], maxGapSeconds: Double) {
        self.init(samples, order: SampleOrder(samples), maxGapSeconds: maxGapSeconds)
    }

    /// `order`: the samples by outlet, then time (each outlet's samples are one run).
    init(_ samples: [DeviceSample], order: SampleOrder, maxGapSeconds: Double) {
        // One chain per outlet, and at least one minute each: their arrays are made once, at their size.
        chains.reserveCapacity(order.outletCount)
        minutes.reserveCapacity(order.outletCount)
        var run: [SampleOrder.Key] = []
        for outlet in order.runs {
            run.removeAll(keepingCapacity: true)
            run.append(contentsOf: outlet)
            // Two samples at one time are one row. When they agree on what the rollups read (a
            // replayed message) either may be the one stored; when they differ, which one the insert
            // keeps is not known here.
            guard Self.dropRepeats(&run, of: samples) else { continue }
            addChain(run, of: samples, maxGapSeconds: maxGapSeconds)
        }
    }

    /// One outlet's samples, in time order, at distinct times.
    private mutating func addChain(_ run: [SampleOrder.Key], of samples: [DeviceSample], maxGapSeconds: Double) {
        let deviceID = run[0].deviceID
        let firstMinuteIndex = minutes.count
        func point(_ key: SampleOrder.Key) -> Point { Point(key.micros, samples[Int(key.index)].reading) }
        var minute = Minute(deviceID: deviceID, bucketMicros: Self.minuteStart(run[0].micros))
        var total = minute
        for position in run.indices {
            let key = run[position]
            let bucket = Self.minuteStart(key.micros)
            if bucket != minute.bucketMicros {
                minutes.append(minute)
                total.add(minute)
                minute = Minute(deviceID: deviceID, bucketMicros: bucket)
            }
            let reading = samples[Int(key.index)].reading
            minute.add(micros: key.micros, power: reading.powerWatts, voltage: reading.voltageVolts)
            if position + 1 < run.count {
                minute.addSegment(from: point(key), to: point(run[position + 1]), maxGapSeconds: maxGapSeconds)
            }
        }
        minutes.append(minute)
        total.add(minute)
        chains.append(
            Chain(
                deviceID: deviceID, sampleCount: run.count, first: point(run[0]), last: point(run[run.count - 1]),
                total: total, minuteIndices: firstMinuteIndex..<minutes.count))
    }

    /// The minutes between each chain's first and last (none for a chain of one or two minutes):
    /// the only ones PostgreSQL's short way needs staged.
    var middleMinutes: [Minute] {
        chains.flatMap { minutes[$0.minuteIndices.dropFirst().dropLast()] }
    }

    /// Each chain's first and last minute (one minute when they are the same): staged, with the
    /// ``middleMinutes``, only for the outlets the short way leaves.
    var endMinutes: [Minute] {
        chains.flatMap { chain in
            let (first, last) = ends(of: chain)
            return chain.minuteCount == 1 ? [first] : [first, last]
        }
    }

    /// A chain's first and last minute (the same one for a chain of one minute).
    private func ends(of chain: Chain) -> (first: Minute, last: Minute) {
        (minutes[chain.minuteIndices.lowerBound], minutes[chain.minuteIndices.upperBound - 1])
    }

    /// Removes samples at the time of the one before them when they carry the same power, voltage
    /// and counter; false when two samples at one time differ in any of those.
    static func dropRepeats(_ run: inout [SampleOrder.Key], of samples: [DeviceSample]) -> Bool {
        var kept = 0
        for index in run.indices {
            if kept > 0 && run[kept - 1].micros == run[index].micros {
                let (a, b) = (samples[Int(run[kept - 1].index)].reading, samples[Int(run[index].index)].reading)
                guard a.powerWatts == b.powerWatts, a.voltageVolts == b.voltageVolts,
                    a.energyWattHours == b.energyWattHours
                else { return false }
                continue
            }
            run[kept] = run[index]
            kept += 1
        }
        run.removeLast(run.count - kept)
        return true
    }

    /// The start of the UTC minute holding `micros`.
    static func minuteStart(_ micros: Int64) -> Int64 {
        let remainder = micros % microsPerMinute
        return micros - (remainder < 0 ? remainder + microsPerMinute : remainder)
    }

    /// A chain as a binary `COPY` row of `outletd_staging_chains`: after the columns below, its
    /// minute count, the start of its first minute and, `withEnds`, the measures of its first and
    /// last minute when it spans more than one (else NULL: its total is that minute), which the
    /// short way reads instead of staged minutes.
    func encode(_ chain: Chain, withEnds: Bool, _ encoder: inout CopyBinaryEncoder) {
        encoder.int32(chain.deviceID)
        encoder.int64(Int64(chain.sampleCount))
        func encode(_ point: Point) {
            encoder.int64(point.micros)
            encoder.double(point.powerWatts)
            encoder.double(point.energyWattHours)
        }
        encode(chain.first)
        encode(chain.last)
        encoder.int64(Self.minuteStart(chain.last.micros))
        Self.encodeMeasures(of: chain.total, &encoder)
        encoder.int64(Int64(chain.minuteCount))
        encoder.int64(Self.minuteStart(chain.first.micros))
        guard withEnds else { return }
        if chain.minuteCount > 1 {
            let (first, last) = ends(of: chain)
            Self.encodeMeasures(of: first, &encoder)
            Self.encodeMeasures(of: last, &encoder)
        } else {
            for _ in 0..<(2 * Self.measureCount) { encoder.null() }
        }
    }

    /// A minute as a binary `COPY` row of `outletd_staging_minutes`.
    static func encode(_ minute: Minute, _ encoder: inout CopyBinaryEncoder) {
        encoder.int32(minute.deviceID)
        encoder.int64(minute.bucketMicros)
        encodeMeasures(of: minute, &encoder)
    }

    /// The measures a staged minute (or chain total, first or last minute) carries: the columns from
    /// `sample_count` to `last_us` of sql/write/session.sql.
    static let measureCount = 12

    /// A minute's (or a chain's total's) measures, in the column order of sql/write/session.sql
    /// (`sample_count`, `power_sum_watts`, …, `last_power_watts`, `last_us`).
    private static func encodeMeasures(of minute: Minute, _ encoder: inout CopyBinaryEncoder) {
        encoder.int64(Int64(minute.sampleCount))
        encoder.double(minute.powerSumWatts)
        encoder.double(minute.powerIntegralWattSeconds)
        encoder.double(minute.coveredSeconds)
        encoder.double(minute.minPowerWatts)
        encoder.double(minute.peakPowerWatts)
        encoder.int64(minute.peakMicros)
        encoder.double(minute.energyWattHours)
        encoder.double(minute.minVoltageVolts)
        encoder.double(minute.maxVoltageVolts)
        encoder.double(minute.lastPowerWatts)
        encoder.int64(minute.lastMicros)
    }
}

extension RollupDeltas.Point {
    init(_ micros: Int64, _ reading: Reading) {
        self.init(micros: micros, powerWatts: reading.powerWatts, energyWattHours: reading.energyWattHours)
    }
}

extension RollupDeltas.Minute {
    /// Adds a sample; samples come in time order, so the earliest of equal peaks stays.
    mutating func add(micros: Int64, power: Double, voltage: Double?) {
        sampleCount += 1
        powerSumWatts += power
        minPowerWatts = Swift.min(minPowerWatts, power)
        if power > peakPowerWatts {
            peakPowerWatts = power
            peakMicros = micros
        }
        if let voltage {
            minVoltageVolts = Swift.min(minVoltageVolts ?? voltage, voltage)
            maxVoltageVolts = Swift.max(maxVoltageVolts ?? voltage, voltage)
        }
        lastPowerWatts = power
        lastMicros = micros
    }

    /// Adds a later minute of the same outlet (for a chain's total): sums add, extremes compare,
    /// the earlier of equal peaks and the later last sample win.
    mutating func add(_ later: Self) {
        sampleCount += later.sampleCount
        powerSumWatts += later.powerSumWatts
        powerIntegralWattSeconds += later.powerIntegralWattSeconds
        coveredSeconds += later.coveredSeconds
        energyWattHours += later.energyWattHours
        minPowerWatts = Swift.min(minPowerWatts, later.minPowerWatts)
        if later.peakPowerWatts > peakPowerWatts {
            peakPowerWatts = later.peakPowerWatts
            peakMicros = later.peakMicros
        }
        if let low = later.minVoltageVolts { minVoltageVolts = Swift.min(minVoltageVolts ?? low, low) }
        if let high = later.maxVoltageVolts { maxVoltageVolts = Swift.max(maxVoltageVolts ?? high, high) }
        lastPowerWatts = later.lastPowerWatts
        lastMicros = later.lastMicros
    }

    /// Adds the segment from a sample of this minute to the outlet's next sample: the counter
    /// difference when both carry one (``RollupDeltas/counterEnergy(from:to:)``), else the trapezoid when the segment
    /// is no longer than the maximum gap (`outletd_minute_rollups`).
    mutating func addSegment(from start: RollupDeltas.Point, to end: RollupDeltas.Point, maxGapSeconds: Double) {
        let seconds = Double(end.micros - start.micros) / 1_000_000
        let covered = seconds <= maxGapSeconds
        if covered {
            powerIntegralWattSeconds += (start.powerWatts + end.powerWatts) / 2 * seconds
            coveredSeconds += seconds
        }
        if let from = start.energyWattHours, let to = end.energyWattHours {
            energyWattHours += RollupDeltas.counterEnergy(from: from, to: to)
        } else if covered {
            energyWattHours += (start.powerWatts + end.powerWatts) / 2 * seconds / 3600
        }
    }
}
