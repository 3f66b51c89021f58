import Alerts
import Foundation
import Testing

@testable import Daemon

/// A notice's id (webhook-id, the seed of Message-ID and of the push Topic) is the same on every retry of a delivery,
/// and differs for another alert that a new primary gives the same delivery id after a failover from a standby that
/// lacked the last commits (scripts/failover-test's local run sees such ids given again).
@Suite struct AlertNoticeTests {
    static func job(id: Int64, attempts: Int, occurredAt: Date, observed: String) -> AlertDeliveryJob {
        AlertDeliveryJob(
            id: id, attempts: attempts, incidentID: id, channelID: 1, channel: .webhook,
            target: "https://hooks.example/x", secret: nil, p256dh: nil, auth: nil, language: .en,
            facts: AlertFacts(kind: .offline, event: .opened, outlet: "Freezer", observed: observed, limit: "30"),
            occurredAt: occurredAt)
    }

    @Test func theIdIsStableAcrossRetriesAndNewForAnotherAlert() {
        let at = Date(timeIntervalSince1970: 1_796_547_600.123456)
        let first = AlertSenders.notice(Self.job(id: 42, attempts: 1, occurredAt: at, observed: "30"), pageURL: "")
        let retry = AlertSenders.notice(Self.job(id: 42, attempts: 3, occurredAt: at, observed: "30"), pageURL: "")
        let again = AlertSenders.notice(
            Self.job(id: 42, attempts: 1, occurredAt: at.addingTimeInterval(7), observed: "37"), pageURL: "")
        #expect(first.id == "outletd-delivery-42-1796547600123456")
        #expect(retry.id == first.id)
        #expect(again.id != first.id)
    }
}
