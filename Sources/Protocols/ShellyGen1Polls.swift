import Foundation
import Telemetry

/// Pairs the two messages of one Shelly Gen1 poll, `relay/<n>/power` and `relay/<n>/energy`, so that a sample
/// carries the counter of its own poll (PROTOCOLS.md: one plain value per topic).
///
/// The firmware publishes a poll's values back to back (power, then energy). A poll opens with whichever of the
/// two arrives first and completes when the other arrives within ``window`` of it. It also completes, with what
/// it has, when the same value arrives again (the next poll began), or when ``expire(openedBefore:)`` finds it
/// older than the window. A completed poll with a power is a reading (its time is the power's receive time);
/// one with only a counter is ``IgnoredKind/energyOnly``.
///
/// Pure and single-owner (the writer thread's `ForeignReadings` holds one): a value type whose mutations return
/// what completed. Generic over the outlet's key so that it carries what the caller needs with the poll.
public struct ShellyGen1Polls<Outlet: Hashable & Sendable>: Sendable {
    /// How long a poll waits for its other half, seconds.
    public static var window: TimeInterval { 1 }

    /// A finished poll of one outlet.
    public struct Completed: Sendable, Equatable {
        public var outlet: Outlet
        /// W, when the poll had a power message.
        public var powerWatts: Double?
        /// The counter in watt-minutes, when the poll had an energy message with a value.
        public var energyWattMinutes: Double?
        /// The power's receive time (the counter's when there was no power).
        public var receivedAt: Date
    }

    private struct Open: Sendable {
        var openedAt: Date
        var power: (watts: Double, at: Date)?
        var energy: (wattMinutes: Double?, at: Date)?
    }

    private var open: [Outlet: Open] = [:]

    /// Creates an empty pairing.
    public init() {}

    /// When the oldest open poll expires (`nil` when none is open): the writer waits no longer for its half.
    /// Asked for every batch and every foreign message, mostly with none open: a plain loop (a key path here was
    /// built anew on every call, a tenth of live ingest's CPU).
    public var nextExpiry: Date? {
        guard !open.isEmpty else { return nil }
        var oldest = Date.distantFuture
        for poll in open.values where poll.openedAt < oldest { oldest = poll.openedAt }
        return oldest.addingTimeInterval(Self.window)
    }

    /// Whether any poll waits for its other half.
    public var isEmpty: Bool { open.isEmpty }

    /// A `relay/<n>/power` value (W) of `outlet`, received at `at`.
    public mutating func addPower(_ watts: Double, of outlet: Outlet, at: Date) -> [Completed] {
        var completed: [Completed] = []
        if var poll = open[outlet] {
            if poll.power == nil, let energy = poll.energy, at.timeIntervalSince(energy.at) <= Self.window {
                poll.power = (watts, at)
                open[outlet] = nil
                return [Self.complete(poll, outlet)]
            }
            completed.append(Self.complete(poll, outlet))
        }
        open[outlet] = Open(openedAt: at, power: (watts, at), energy: nil)
        return completed
    }

    /// A `relay/<n>/energy` value (watt-minutes; `nil` for an empty or `null` payload) of `outlet`.
    public mutating func addEnergy(_ wattMinutes: Double?, of outlet: Outlet, at: Date) -> [Completed] {
        var completed: [Completed] = []
        if var poll = open[outlet] {
            if poll.energy == nil, let power = poll.power, at.timeIntervalSince(power.at) <= Self.window {
                poll.energy = (wattMinutes, at)
                open[outlet] = nil
                return [Self.complete(poll, outlet)]
            }
            completed.append(Self.complete(poll, outlet))
        }
        open[outlet] = Open(openedAt: at, power: nil, energy: (wattMinutes, at))
        return completed
    }

    /// Completes every poll opened more than ``window`` before `time`, oldest first (ties by no set order).
    public mutating func expire(openedBefore time: Date) -> [Completed] {
        let limit = time.addingTimeInterval(-Self.window)
        let expired = open.filter { $0.value.openedAt < limit }.sorted { $0.value.openedAt < $1.value.openedAt }
        for (outlet, _) in expired { open[outlet] = nil }
        return expired.map { Self.complete($0.value, $0.key) }
    }

    /// Completes every open poll (at shutdown, when no other half can come).
    public mutating func completeAll() -> [Completed] {
        defer { open.removeAll() }
        return open.sorted { $0.value.openedAt < $1.value.openedAt }.map { Self.complete($0.value, $0.key) }
    }

    private static func complete(_ poll: Open, _ outlet: Outlet) -> Completed {
        Completed(
            outlet: outlet, powerWatts: poll.power?.watts, energyWattMinutes: poll.energy?.wattMinutes ?? nil,
            receivedAt: poll.power?.at ?? poll.energy?.at ?? poll.openedAt)
    }
}
