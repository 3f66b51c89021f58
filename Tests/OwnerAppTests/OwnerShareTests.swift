import Foundation
import Postgres
import Runtime
import TestSupport
import Testing

@testable import OwnerApp

/// One owner's share of the app (``OwnerShare``): a bounded number of requests at once, one of them pricing a
/// period, counted under the owner whichever of their tokens they come with; another owner is served meanwhile.
@Suite(.serialized) struct OwnerShareTests {
    @Test func anOwnerHoldsAtMostItsShareAndGetsItBackAsRequestsEnd() {
        let share = OwnerShare(limits: .init(requests: 3, pricedPeriods: 1))
        let ana = OwnerShare.Key.owner(1)
        let tickets = (0..<3).compactMap { _ in share.admit(ana) }
        #expect(tickets.count == 3 && share.admit(ana) == nil)
        #expect(share.admit(.owner(2)) != nil, "another owner has a share of their own")
        let period = share.admit(ana, pricesPeriod: true)
        #expect(period != nil && share.admit(ana, pricesPeriod: true) == nil)
        share.leave(tickets[0])
        #expect(share.admit(ana) != nil)
        if let period { share.leave(period) }
        #expect(share.admit(ana, pricesPeriod: true) != nil)
    }

    @Test func aTokenCountsUnderItsOwnerOnceKnownAndTheTokensKeptAreBounded() {
        let share = OwnerShare(limits: .init(requests: 2, pricedPeriods: 1), maxTokens: 2)
        #expect(share.key(token: "first") == share.key(token: "first"))
        #expect(share.key(token: "first") != share.key(token: "second"))
        share.learn(token: "first", userID: 7)
        share.learn(token: "second", userID: 7)
        #expect(share.key(token: "first") == .owner(7) && share.key(token: "second") == .owner(7))
        // Two tokens of one owner share one count.
        _ = share.admit(share.key(token: "first"))
        _ = share.admit(share.key(token: "second"))
        #expect(share.admit(share.key(token: "first")) == nil && share.count(.owner(7)) == 2)
        // Past the bound every token is forgotten, then learned again.
        share.learn(token: "third", userID: 8)
        #expect(share.key(token: "third") == .owner(8) && share.key(token: "first") != .owner(7))
    }

    /// Ana's year-long detail is held in the database (a lock on the tariffs, taken by the test): her second one
    /// at the same time is answered 429 with `Retry-After: 1` at once, without waiting for the first; bob's outlet
    /// list is answered meanwhile, by the database thread her second would have taken. Once the first is answered,
    /// her next year-long detail is priced. Before, the second waited in the database too, and with both of the
    /// app's database threads held by her, bob's list waited with them.
    @Test func anOwnerPricesOnePeriodAtATimeAndAnotherOwnerIsServedMeanwhile() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await OwnerAutomationTests.owner(app, "ana", claims: "kit-1")
            let bob = try await OwnerAutomationTests.owner(app, "bob", claims: "kit-2")
            let year = "/api/v1/outlets/kit-1?from=2025-12-01T00:00:00Z&to=2026-12-01T00:00:00Z"
            #expect(try await app.send("GET", year, token: ana).status == 200)
            // The lock is held until both answers are in, or 30 s whatever happens, so that a failing run ends.
            let (url, locked, answered) = (app.url, Locked(false), Locked(false))
            let holder = Task {
                let locker = try PostgresConnection(connectionString: url)
                defer { locker.close() }
                try locker.execute("BEGIN")
                try locker.execute("LOCK TABLE tariffs IN ACCESS EXCLUSIVE MODE")
                locked.value = true
                for _ in 0..<300 where !answered.value { try await Task.sleep(for: .milliseconds(100)) }
                try locker.execute("ROLLBACK")
            }
            try await Harness.waitUntil(timeout: 30, "the tariffs locked") { locked.value }
            let first = Task { try await app.send("GET", year, token: ana) }
            try await Harness.waitUntil(timeout: 30, "ana's first detail waiting for the lock") {
                (try? app.sql("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'tariffs'::regclass"))
                    == "1"
            }
            async let second = app.send("GET", year, token: ana)
            async let bobsList = app.send("GET", "/api/v1/outlets", token: bob)
            let (refused, list) = try await (second, bobsList)
            answered.value = true
            try await holder.value
            #expect(refused.status == 429, "\(refused.status) \(refused.body)")
            let retryAfter = refused.headers.split(separator: "\r\n").first {
                $0.lowercased().hasPrefix("retry-after:")
            }
            #expect(retryAfter?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) == "1")
            #expect(list.status == 200, "\(list.status) \(list.body)")
            #expect(try await first.value.status == 200)
            #expect(try await app.send("GET", year, token: ana).status == 200)
        }
    }
}
