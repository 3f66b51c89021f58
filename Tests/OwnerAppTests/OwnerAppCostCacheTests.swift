import Foundation
import Testing

@testable import OwnerApp
@testable import Storage

/// The detail's cost figures kept between polls (``CostCache``), and the polled routes that look their session up
/// in their own statement: neither serves another owner, nor anyone after logout.
@Suite struct OwnerAppCostCacheTests {
    static let cost = OwnedOutletCost(
        cost: "1.000000", currency: "BRL", monthToDateCost: "2.000000", projectedMonthCost: "3.000000",
        standbyWatts: 4, standbyMonthCost: "5.000000")
    static let day = (Date(timeIntervalSince1970: 1_795_000_000), Date(timeIntervalSince1970: 1_795_086_400))

    static func key(_ userID: Int64, _ code: String = "kit-1") -> CostCache.Key {
        CostCache.Key(userID: userID, code: code, from: day.0, to: day.1)
    }

    @Test func anEntryServesItsOwnerAndPeriodWithinItsLifetimeOnly() {
        let cache = CostCache(lifetimeSeconds: 60)
        let pricedAt = Date(timeIntervalSince1970: 1_795_040_000)
        cache.store(Self.cost, for: Self.key(1), pricedAt: pricedAt)
        #expect(cache.cost(Self.key(1), now: pricedAt.addingTimeInterval(59)) == Self.cost)
        #expect(cache.cost(Self.key(1), now: pricedAt.addingTimeInterval(60)) == nil)
        #expect(cache.cost(Self.key(2), now: pricedAt) == nil)
        #expect(cache.cost(Self.key(1, "kit-2"), now: pricedAt) == nil)
        var otherDay = Self.key(1)
        otherDay.from = Self.day.1
        #expect(cache.cost(otherDay, now: pricedAt) == nil)
    }

    @Test func forgettingAnOutletDropsEveryOwnersEntryOfIt() {
        let cache = CostCache(lifetimeSeconds: 60)
        let now = Date()
        cache.store(Self.cost, for: Self.key(1), pricedAt: now)
        cache.store(Self.cost, for: Self.key(2), pricedAt: now)
        cache.store(Self.cost, for: Self.key(1, "kit-2"), pricedAt: now)
        cache.forget(code: "kit-1")
        #expect(cache.cost(Self.key(1), now: now) == nil && cache.cost(Self.key(2), now: now) == nil)
        #expect(cache.cost(Self.key(1, "kit-2"), now: now) == Self.cost)
    }

    /// The slow part (the month before today, the standby) outlives the figures: an hour, per owner and outlet,
    /// forgotten with the outlet.
    @Test func theMonthBeforeTodayIsKeptLongerAndForgottenWithTheOutlet() {
        let cache = CostCache(lifetimeSeconds: 60, baseLifetimeSeconds: 3_600)
        let base = OwnedOutletCostBase(
            monthBeforeTodayCost: "12.3456789", standbyWatts: 2, standbyMonthCost: "1.000000")
        let pricedAt = Date(timeIntervalSince1970: 1_795_040_000)
        cache.store(base, for: Self.key(1), pricedAt: pricedAt)
        #expect(cache.base(Self.key(1), now: pricedAt.addingTimeInterval(3_599)) == base)
        #expect(cache.base(Self.key(1), now: pricedAt.addingTimeInterval(3_600)) == nil)
        #expect(cache.base(Self.key(2), now: pricedAt) == nil)
        cache.forget(code: "kit-1")
        #expect(cache.base(Self.key(1), now: pricedAt) == nil)
    }

    @Test func aLifetimeOfZeroKeepsNothingAndTheEntriesAreBounded() {
        let now = Date()
        let off = CostCache(lifetimeSeconds: 0)
        off.store(Self.cost, for: Self.key(1), pricedAt: now)
        #expect(off.cost(Self.key(1), now: now) == nil)
        let small = CostCache(lifetimeSeconds: 60, maxEntries: 2)
        for user in Int64(1)...3 { small.store(Self.cost, for: Self.key(user), pricedAt: now) }
        #expect(small.cost(Self.key(3), now: now) == Self.cost)
        #expect((1...2).filter { small.cost(Self.key(Int64($0)), now: now) != nil }.count <= 1)
    }

    /// Ana's detail is priced (and kept), she logs out: the list and the detail answer 401 at once. She logs in
    /// again and releases the outlet, bob claims it: his detail is his, and hers is a 404.
    @Test func logoutEndsThePolledRoutesAtOnceAndAReleasedOutletsFiguresStayWithNoOne() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await app.login("ana")
            #expect(
                try await app.send("POST", "/api/v1/outlets", token: ana, body: try app.claimBody("kit-1", "Fridge"))
                    .status == 201)
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1", token: ana).status == 200)
            #expect(try await app.send("GET", "/api/v1/outlets", token: ana).status == 200)
            #expect(try await app.send("POST", "/api/v1/logout", token: ana).status == 204)
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1", token: ana).status == 401)
            #expect(try await app.send("GET", "/api/v1/outlets", token: ana).status == 401)
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1?from=bad", token: ana).status == 401)

            let again = try await app.login("ana")
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1?from=bad", token: again).status == 400)
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1", token: again).status == 200)
            #expect(try await app.send("DELETE", "/api/v1/outlets/kit-1", token: again).status == 204)
            let bob = try await app.login("bob")
            #expect(
                try await app.send("POST", "/api/v1/outlets", token: bob, body: try app.claimBody("kit-1", "Lamp"))
                    .status == 201)
            let bobs = try await app.send("GET", "/api/v1/outlets/kit-1", token: bob)
            #expect(bobs.status == 200 && bobs.body.contains("Lamp") && !bobs.body.contains("Fridge"), "\(bobs.body)")
            #expect(try await app.send("GET", "/api/v1/outlets/kit-1", token: again).status == 404)
            let list = try await app.send("GET", "/api/v1/outlets", token: again)
            #expect(list.status == 200 && list.body == "[]", "\(list.body)")
        }
    }
}
