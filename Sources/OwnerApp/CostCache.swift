import Foundation
import Runtime
import Storage

/// The cost figures of an outlet's detail for its default period (today), kept for ``lifetimeSeconds`` per owner
/// and outlet; and their slow part (the month before today and the standby, ``OwnedOutletCostBase``) kept for
/// ``baseLifetimeSeconds``, so that past the lifetime only today is priced again. Pricing reads the month's hourly rollups and the tariff's pieces (month to date, the projection, the
/// standby): 10–15 ms of PostgreSQL per outlet, against well under a millisecond for the rest of the detail, and the
/// page asks for the detail every 3 s. Within the lifetime the money shown may miss the last minute's energy, a
/// late reading or a new tariff version; past it, the next poll prices today again, and the days before within
/// the base's lifetime (an hour: a late reading for an earlier day, a new tariff version for past days or a
/// changed standby shows within it). A period asked for (`from`, `to`) is always priced afresh.
///
/// An entry is served only to the owner it was priced for, after the request's own query found that owner's outlet
/// (``OwnerStore/outlet(userID:code:)``), so a released outlet's figures never reach its next owner; claiming,
/// updating or releasing an outlet forgets its entries. The entries are bounded (``maxEntries``): past it, the
/// expired ones go, then every one.
final class CostCache: Sendable {
    struct Key: Hashable, Sendable {
        var userID: Int64
        var code: String
        var from: Date
        var to: Date
    }

    struct Entry: Sendable {
        var cost: OwnedOutletCost
        var pricedAt: Date
    }

    struct BaseEntry: Sendable {
        var base: OwnedOutletCostBase
        var pricedAt: Date
    }

    let lifetimeSeconds: Double
    let baseLifetimeSeconds: Double
    let maxEntries: Int
    private let entries = Guarded([Key: Entry]())
    private let bases = Guarded([Key: BaseEntry]())

    init(lifetimeSeconds: Double, baseLifetimeSeconds: Double = 3_600, maxEntries: Int = 100_000) {
        self.lifetimeSeconds = lifetimeSeconds
        self.baseLifetimeSeconds = baseLifetimeSeconds
        self.maxEntries = maxEntries
    }

    /// The slow part priced for `key` within its lifetime, or nil.
    func base(_ key: Key, now: Date = Date()) -> OwnedOutletCostBase? {
        guard baseLifetimeSeconds > 0 else { return nil }
        return bases.withLock { bases in
            guard let entry = bases[key], now.timeIntervalSince(entry.pricedAt) < baseLifetimeSeconds else {
                return nil
            }
            return entry.base
        }
    }

    /// Keeps `base` as priced for `key` at `pricedAt`.
    func store(_ base: OwnedOutletCostBase, for key: Key, pricedAt: Date) {
        guard baseLifetimeSeconds > 0 else { return }
        bases.withLock { bases in
            if bases.count >= maxEntries {
                let limit = pricedAt.addingTimeInterval(-baseLifetimeSeconds)
                bases = bases.filter { $0.value.pricedAt > limit }
                if bases.count >= maxEntries { bases = [:] }
            }
            bases[key] = BaseEntry(base: base, pricedAt: pricedAt)
        }
    }

    /// The figures priced for `key` within the lifetime, or nil.
    func cost(_ key: Key, now: Date = Date()) -> OwnedOutletCost? {
        guard lifetimeSeconds > 0 else { return nil }
        return entries.withLock { entries in
            guard let entry = entries[key], now.timeIntervalSince(entry.pricedAt) < lifetimeSeconds else { return nil }
            return entry.cost
        }
    }

    /// Keeps `cost` as priced for `key` at `pricedAt`.
    func store(_ cost: OwnedOutletCost, for key: Key, pricedAt: Date) {
        guard lifetimeSeconds > 0 else { return }
        entries.withLock { entries in
            if entries.count >= maxEntries {
                let limit = pricedAt.addingTimeInterval(-lifetimeSeconds)
                entries = entries.filter { $0.value.pricedAt > limit }
                if entries.count >= maxEntries { entries = [:] }
            }
            entries[key] = Entry(cost: cost, pricedAt: pricedAt)
        }
    }

    /// Forgets every entry of outlet `code` (it was claimed, changed or released).
    func forget(code: String) {
        entries.withLock { entries in entries = entries.filter { $0.key.code != code } }
        bases.withLock { bases in bases = bases.filter { $0.key.code != code } }
    }
}
