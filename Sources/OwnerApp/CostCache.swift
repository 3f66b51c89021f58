import Foundation
import Runtime
import Storage

/// The cost figures of an outlet's detail for its default period (today), kept for ``lifetimeSeconds`` per owner and
/// outlet; and their slow part (the month before today and the standby, ``OwnedOutletCostBase``) kept for
/// ``baseLifetimeSeconds``, so that past the lifetime only today is priced again. Pricing reads the month's hourly
/// rollups and the tariff's pieces (month to date, the projection, the standby): 10–15 ms of PostgreSQL per outlet,
/// against well under a millisecond for the rest of the detail, and the page asks for the detail every 3 s. Within the
/// lifetime the money shown may miss the last minute's energy, a late reading or a new tariff version; past it, the
/// next poll prices today again, and the days before within the base's lifetime (an hour: a late reading for an earlier
/// day, a new tariff version for past days or a changed standby shows within it). A period asked for (`from`, `to`) is
/// always priced afresh.
///
/// An entry is served only to the owner it was priced for, after the request's own query found that owner's outlet
/// (``OwnerStore/outlet(userID:code:)``), so a released outlet's figures never reach its next owner; claiming, updating
/// or releasing an outlet forgets its entries. The entries are bounded (``maxEntries``): past it, the expired ones go,
/// then every one.
final class CostCache: Sendable {
    struct Key: Hashable, Sendable {
        var userID: Int64
        var code: String
        var from: Date
        var to: Date
    }

    private let costs: Entries<OwnedOutletCost>
    private let bases: Entries<OwnedOutletCostBase>

    /// `lifetimeSeconds` for the figures, `baseLifetimeSeconds` for their slow part (0: nothing kept); at most
    /// `maxEntries` of each.
    init(lifetimeSeconds: Double, baseLifetimeSeconds: Double = 3_600, maxEntries: Int = 100_000) {
        costs = Entries(lifetimeSeconds: lifetimeSeconds, maxEntries: maxEntries)
        bases = Entries(lifetimeSeconds: baseLifetimeSeconds, maxEntries: maxEntries)
    }

    /// The figures priced for `key` within the lifetime, or nil.
    func cost(_ key: Key, now: Date = Date()) -> OwnedOutletCost? { costs.value(key, now: now) }

    /// Keeps `cost` as priced for `key` at `pricedAt`.
    func store(_ cost: OwnedOutletCost, for key: Key, pricedAt: Date) { costs.store(cost, for: key, at: pricedAt) }

    /// The slow part priced for `key` within its lifetime, or nil.
    func base(_ key: Key, now: Date = Date()) -> OwnedOutletCostBase? { bases.value(key, now: now) }

    /// Keeps `base` as priced for `key` at `pricedAt`.
    func store(_ base: OwnedOutletCostBase, for key: Key, pricedAt: Date) { bases.store(base, for: key, at: pricedAt) }

    /// Today's cost figures of `key`'s outlet (`from`, `to`: its local today): those kept, within their lifetime;
    /// else today priced anew with the month before today and the standby, kept or priced by `store`. Nil when the
    /// outlet is not `key.userID`'s.
    func today(_ key: Key, pricing store: OwnerStore) throws -> OwnedOutletCost? {
        if let cached = cost(key) { return cached }
        let pricedAt = Date()
        let base: OwnedOutletCostBase
        if let cached = self.base(key) {
            base = cached
        } else {
            guard let priced = try store.costBase(userID: key.userID, code: key.code, todayStart: key.from) else {
                return nil
            }
            self.store(priced, for: key, pricedAt: pricedAt)
            base = priced
        }
        guard
            let priced = try store.cost(
                userID: key.userID, code: key.code, todayStart: key.from, todayEnd: key.to, base: base)
        else { return nil }
        self.store(priced, for: key, pricedAt: pricedAt)
        return priced
    }

    /// Forgets every entry of outlet `code` (it was claimed, changed or released).
    func forget(code: String) {
        costs.forget(code: code)
        bases.forget(code: code)
    }

    /// Values by key, each served within `lifetimeSeconds` of when it was stored; at most `maxEntries` (past it,
    /// the expired go, then every one).
    private final class Entries<Value: Sendable>: Sendable {
        struct Entry: Sendable {
            var value: Value
            var storedAt: Date
        }

        let lifetimeSeconds: Double
        let maxEntries: Int
        private let entries = Guarded([Key: Entry]())

        init(lifetimeSeconds: Double, maxEntries: Int) {
            self.lifetimeSeconds = lifetimeSeconds
            self.maxEntries = maxEntries
        }

        func value(_ key: Key, now: Date) -> Value? {
            guard lifetimeSeconds > 0 else { return nil }
            return entries.withLock { entries in
                guard let entry = entries[key], now.timeIntervalSince(entry.storedAt) < lifetimeSeconds else {
                    return nil
                }
                return entry.value
            }
        }

        func store(_ value: Value, for key: Key, at storedAt: Date) {
            guard lifetimeSeconds > 0 else { return }
            entries.withLock { entries in
                if entries.count >= maxEntries {
                    let limit = storedAt.addingTimeInterval(-lifetimeSeconds)
                    entries = entries.filter { $0.value.storedAt > limit }
                    if entries.count >= maxEntries { entries = [:] }
                }
                entries[key] = Entry(value: value, storedAt: storedAt)
            }
        }

        func forget(code: String) {
            entries.withLock { entries in entries = entries.filter { $0.key.code != code } }
        }
    }
}
