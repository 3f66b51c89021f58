import Foundation
import Testing

@testable import Alerts

/// ``AlertBook``'s own decisions, without a database: what is refused before the store is asked (and so changes
/// nothing), and how the store's refusals read. The SQL behind the store is tested in AlertStoreTests and, through
/// the app, in OwnerAlertsTests.
@Suite struct AlertBookTests {
    /// A store that answers as told and records what it was asked.
    final class Store: AlertBookStore {
        var asked: [String] = []
        var setRuleAnswer: Result<AlertRuleRecord, AlertStoreRefusal> = .failure(.noSuchOutlet)
        var found = true

        func rules(_ scope: AlertScope, outlet: String?) throws -> [AlertRuleRecord] { [] }
        func setRule(
            _ scope: AlertScope, code: String?, rule: AlertRule, createdBy: String, operatorRule: Bool, maxRules: Int
        ) throws -> Result<AlertRuleRecord, AlertStoreRefusal> {
            asked.append("setRule \(rule.kind.rawValue) \(code ?? "all")")
            return setRuleAnswer
        }
        func removeRule(_ scope: AlertScope, id: Int64) throws -> Bool { found }
        func incidents(_ scope: AlertScope, openOnly: Bool, limit: Int) throws -> [AlertIncidentRecord] { [] }
        func openIncidentCount(_ scope: AlertScope) throws -> Int { 0 }
        func acknowledge(_ scope: AlertScope, id: Int64, by: String) throws -> Bool { found }
        func snooze(_ scope: AlertScope, id: Int64, until: Date?, by: String) throws -> Bool {
            asked.append("snooze \(id) \(until.map { String(Int($0.timeIntervalSince1970)) } ?? "off")")
            return found
        }
        func history(_ scope: AlertScope, incidentID: Int64?, limit: Int) throws -> [AlertHistoryRecord] { [] }
        func channels(_ scope: AlertScope) throws -> [AlertChannelRecord] { [] }
        func addChannel(_ scope: AlertScope, _ spec: AlertChannelSpec, maxChannels: Int) throws
            -> Result<AlertChannelRecord, AlertStoreRefusal>
        { .failure(.tooMany(what: "alert channels", limit: maxChannels)) }
        func setChannelEnabled(_ scope: AlertScope, id: Int64, enabled: Bool) throws -> Bool { found }
        func removeChannel(_ scope: AlertScope, id: Int64) throws -> Bool { found }
    }

    static func error(_ body: () throws -> Void) -> AlertBookError? {
        do { try body() } catch let error as AlertBookError { return error } catch { return nil }
        return nil
    }

    @Test(arguments: [
        ("asleep", nil as String?, AlertScope.owner(1), "kind: expected one of"),
        ("offline", nil, AlertScope.operatorWide, "name an outlet"),
        ("standby", "kitchen-1", AlertScope.owner(1), "standby needs watts"),
    ])
    func badRulesAreRefusedBeforeTheStoreIsAsked(kind: String, outlet: String?, scope: AlertScope, reason: String) {
        let store = Store()
        let error = Self.error {
            _ = try AlertBook(store).setRule(
                kind: kind, parameters: AlertParameters(), outlet: outlet, in: scope, by: "t", maxRules: 5)
        }
        guard case .invalid(let text)? = error else {
            Issue.record("\(kind): \(String(describing: error))")
            return
        }
        #expect(text.contains(reason), "\(text)")
        #expect(store.asked.isEmpty)
    }

    @Test func theStoresRefusalsReadAsNotFoundOrRefused() {
        let store = Store()
        let book = AlertBook(store)
        #expect(
            Self.error {
                _ = try book.setRule(
                    kind: "offline", parameters: .init(), outlet: "x-1", in: .owner(1), by: "t", maxRules: 5)
            } == .notFound("outlet"))
        #expect(store.asked == ["setRule offline x-1"])
        #expect(
            Self.error { _ = try book.addChannel(.init(kind: .email, target: "a@b.c"), in: .owner(1), maxChannels: 2) }
                == .refused(.tooMany(what: "alert channels", limit: 2)))
        store.found = false
        #expect(Self.error { try book.removeRule(7, in: .owner(1)) } == .notFound("alert rule"))
        #expect(Self.error { try book.acknowledge(7, in: .owner(1), by: "t") } == .notFound("alert"))
        #expect(Self.error { _ = try book.setChannelEnabled(7, false, in: .owner(1)) } == .notFound("alert channel"))
        #expect(Self.error { try book.removeChannel(7, in: .owner(1)) } == .notFound("alert channel"))
    }

    @Test(
        arguments: [
            (0, "snooze 3 off"), (3_600, "snooze 3 1003600"), (604_800, "snooze 3 1604800"), (604_801, nil), (-1, nil),
        ] as [(Int, String?)])
    func aSnoozeIsAtMostSevenDaysAndZeroEndsIt(seconds: Int, asked: String?) {
        let store = Store()
        let error = Self.error {
            try AlertBook(store).snooze(
                3, seconds: seconds, now: Date(timeIntervalSince1970: 1_000_000), in: .owner(1), by: "t")
        }
        if let asked {
            #expect(error == nil && store.asked == [asked])
        } else {
            #expect(error == .invalid("seconds: must be within 0…604800") && store.asked.isEmpty)
        }
    }
}
