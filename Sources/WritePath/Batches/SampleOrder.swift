import Telemetry

/// A batch's samples by outlet, then time: sorted once, for everything the write path computes per
/// outlet. The samples are stored in this order (each outlet's readings of a batch side by side, as the
/// index of `samples` holds them), their running totals are summed in it (``OutletTotals``), and the
/// rollup deltas are computed from its runs (``RollupDeltas``).
struct SampleOrder {
    /// A sample's place in the batch, with what it is sorted by (16 bytes, not the whole sample).
    struct Key {
        var micros: Int64
        var deviceID: Int32
        var index: Int32
    }

    /// By outlet, then time; samples of one outlet at one time in no particular order.
    let keys: [Key]
    /// Whether two samples of one outlet share a time. The store keeps only one of them (which one is the
    /// database's to say: the one received first), so such a batch cannot go straight into `samples`.
    let hasRepeatedTimes: Bool
    /// How many outlets the samples are of: the number of ``runs``.
    let outletCount: Int

    init(_ samples: [DeviceSample]) {
        var keys = samples.indices.map {
            Key(
                micros: CopyBinaryEncoder.microseconds(samples[$0].reading.measuredAt), deviceID: samples[$0].deviceID,
                index: Int32($0))
        }
        keys.sort { ($0.deviceID, $0.micros) < ($1.deviceID, $1.micros) }
        self.keys = keys
        var outlets = keys.isEmpty ? 0 : 1
        var repeated = false
        for index in keys.indices.dropFirst() {
            if keys[index].deviceID != keys[index - 1].deviceID {
                outlets += 1
            } else if keys[index].micros == keys[index - 1].micros {
                repeated = true
            }
        }
        outletCount = outlets
        hasRepeatedTimes = repeated
    }

    /// The keys of each outlet, one run per outlet, in outlet order.
    var runs: Runs { Runs(rest: keys[...]) }

    struct Runs: Sequence, IteratorProtocol {
        var rest: ArraySlice<Key>

        mutating func next() -> ArraySlice<Key>? {
            guard let first = rest.first else { return nil }
            let end = rest.firstIndex { $0.deviceID != first.deviceID } ?? rest.endIndex
            defer { rest = rest[end...] }
            return rest[..<end]
        }
    }

    /// Each outlet's share of the batch for its running totals, when every sample is inserted.
    func outletTotals(of samples: [DeviceSample]) -> [OutletTotals] {
        var totals: [OutletTotals] = []
        totals.reserveCapacity(outletCount)
        for run in runs { totals.append(OutletTotals(run, of: samples)) }
        return totals
    }
}

/// What one outlet's samples of a batch add to its running totals (`device_power_totals`): a row of
/// `outletd_inserted_devices`, which the writer stages when every sample of the batch went straight into
/// `samples` (and `move_samples.sql` computes otherwise, from the rows it really inserted).
struct OutletTotals: Equatable {
    var deviceID: Int32
    var sampleCount: Int
    var firstMicros: Int64
    var lastMicros: Int64
    var powerSumWatts: Double
    var peakPowerWatts: Double
    /// The earliest of equal peaks.
    var peakMicros: Int64
}

extension OutletTotals {
    /// `run`: the outlet's keys, in time order (a run of ``SampleOrder``).
    init(_ run: ArraySlice<SampleOrder.Key>, of samples: [DeviceSample]) {
        let first = run[run.startIndex]
        self.init(
            deviceID: first.deviceID, sampleCount: run.count, firstMicros: first.micros,
            lastMicros: run[run.endIndex - 1].micros, powerSumWatts: 0, peakPowerWatts: -.infinity,
            peakMicros: first.micros)
        for key in run {
            let power = samples[Int(key.index)].reading.powerWatts
            powerSumWatts += power
            if power > peakPowerWatts {
                peakPowerWatts = power
                peakMicros = key.micros
            }
        }
    }

    /// A binary `COPY` row of `outletd_inserted_devices` (sql/write/copy_inserted_devices.sql).
    static func encode(_ totals: Self, _ encoder: inout CopyBinaryEncoder) {
        encoder.int32(totals.deviceID)
        encoder.int64(Int64(totals.sampleCount))
        encoder.timestamp(microseconds: totals.firstMicros)
        encoder.timestamp(microseconds: totals.lastMicros)
        encoder.double(totals.powerSumWatts)
        encoder.double(totals.peakPowerWatts)
        encoder.timestamp(microseconds: totals.peakMicros)
    }
}
