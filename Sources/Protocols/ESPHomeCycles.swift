import Foundation
import Telemetry

/// Pairs an ESPHome node's separate sensor messages into one sample per update cycle (docs/ZIGBEE-ESPHOME.md, "ESPHome":
/// the rule).
///
/// A node publishes each sensor on its own topic, the sensors of one chip (power, voltage, current, power factor,
/// energy of a CSE7766 or HLW8012) one after the other when their update interval (or `throttle_average`) ends. A
/// cycle opens with the first value of an outlet and completes:
/// - when it holds every role the outlet's previous cycle held (its learned shape), at once;
/// - when a role it already holds arrives again (the next cycle began): completed without it, which opens the next;
/// - when ``expire(openedBefore:)`` finds it older than ``window``.
/// A completed cycle with a power (or a voltage and a current) is a sample at the receive time of its first value;
/// its counter is the cycle's energy or, when the energy comes on another interval, the last one the outlet reported
/// (kept, like a Shelly Gen2 counter). A cycle without a power is ``IgnoredKind/energyOnly`` (its counter kept) or
/// ``IgnoredKind/noPower``.
///
/// Pure and single-owner (the writer thread's `ForeignReadings` holds one), like ``ShellyGen1Polls``.
public struct ESPHomeCycles<Outlet: Hashable & Sendable>: Sendable {
    public typealias Role = ESPHomeProtocol.SensorRole

    /// How long a cycle waits for the rest of its values, seconds.
    public static var window: TimeInterval { 1 }

    /// A finished cycle of one outlet.
    public struct Completed: Sendable, Equatable {
        public var outlet: Outlet
        /// The cycle's values in stored units, the kept counter added when the cycle had none.
        public var values: [Role: Double]
        /// The receive time of the cycle's first value.
        public var receivedAt: Date
        /// Why it is no sample, or nil.
        public var ignored: IgnoredKind?
    }

    private struct Open: Sendable {
        var openedAt: Date
        var values: [Role: Double]
    }

    private var open: [Outlet: Open] = [:]
    private var shapes: [Outlet: Set<Role>] = [:]
    private var counters: [Outlet: Double] = [:]

    public init() {}

    /// When the oldest open cycle expires (`nil` when none is open).
    /// As ``ShellyGen1Polls/nextExpiry``: a plain loop, asked for every batch and every foreign message.
    public var nextExpiry: Date? {
        guard !open.isEmpty else { return nil }
        var oldest = Date.distantFuture
        for cycle in open.values where cycle.openedAt < oldest { oldest = cycle.openedAt }
        return oldest.addingTimeInterval(Self.window)
    }

    /// Whether any cycle waits for more values.
    public var isEmpty: Bool { open.isEmpty }

    /// A value of `outlet`, already in stored units, received at `at`.
    public mutating func add(_ value: Double, role: Role, of outlet: Outlet, at: Date) -> [Completed] {
        var completed: [Completed] = []
        var cycle = open[outlet] ?? Open(openedAt: at, values: [:])
        if cycle.values[role] != nil || at.timeIntervalSince(cycle.openedAt) > Self.window {
            completed.append(complete(cycle, outlet))
            cycle = Open(openedAt: at, values: [:])
        }
        cycle.values[role] = value
        if let shape = shapes[outlet], shape.isSubset(of: Set(cycle.values.keys)) {
            open[outlet] = nil
            completed.append(complete(cycle, outlet))
        } else {
            open[outlet] = cycle
        }
        return completed
    }

    /// Completes every cycle opened more than ``window`` before `time`, oldest first.
    public mutating func expire(openedBefore time: Date) -> [Completed] {
        let limit = time.addingTimeInterval(-Self.window)
        let expired = open.filter { $0.value.openedAt < limit }.sorted { $0.value.openedAt < $1.value.openedAt }
        for (outlet, _) in expired { open[outlet] = nil }
        return expired.map { complete($0.value, $0.key) }
    }

    /// Completes every open cycle (at shutdown, when nothing more will come).
    public mutating func completeAll() -> [Completed] {
        let all = open.sorted { $0.value.openedAt < $1.value.openedAt }
        open.removeAll()
        return all.map { complete($0.value, $0.key) }
    }

    private mutating func complete(_ cycle: Open, _ outlet: Outlet) -> Completed {
        var values = cycle.values
        if !values.isEmpty { shapes[outlet] = Set(values.keys) }
        if let energy = values[.energy] {
            counters[outlet] = energy
        } else if let counter = counters[outlet] {
            values[.energy] = counter
        }
        var ignored: IgnoredKind?
        if values[.power] == nil && (values[.voltage] == nil || values[.current] == nil) {
            ignored = cycle.values[.energy] != nil ? .energyOnly : .noPower
        }
        return Completed(outlet: outlet, values: values, receivedAt: cycle.openedAt, ignored: ignored)
    }
}
