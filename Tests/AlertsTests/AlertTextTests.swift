import Alerts
import Testing

/// Messages in both languages, and an owner's outlet name never carrying control characters into them.
@Suite struct AlertTextTests {
    @Test(arguments: [
        (AlertLanguage.en, "[outletd] Alert: Freezer is offline", "Alert: Freezer is offline.\nNo reading for 95 s."),
        (.ptBR, "[outletd] Alerta: Freezer está offline", "Alerta: Freezer está offline.\nSem leituras há 95 s."),
    ])
    func offlineOpened(language: AlertLanguage, subject: String, start: String) {
        let message = AlertText.message(
            .init(kind: .offline, event: .opened, outlet: "Freezer", observed: "95"), language: language)
        #expect(message.subject == subject)
        #expect(message.text.hasPrefix(start))
    }

    @Test func budgetOverAllOutletsNamesTheMoney() {
        let facts = AlertFacts(
            kind: .budget, event: .opened, outlet: nil, observed: "212.40", limit: "150", currency: "BRL")
        #expect(
            AlertText.message(facts, language: .en).subject
                == "[outletd] Alert: all outlets: this month will cost more than BRL 150")
        #expect(AlertText.message(facts, language: .ptBR).text.contains("Projeção do mês: BRL 212.40."))
    }

    @Test func everyKindAndEventHasTextInBothLanguages() {
        for kind in AlertKind.allCases {
            for event in AlertEventKind.allCases {
                let en = AlertText.message(.init(kind: kind, event: event, outlet: "x"), language: .en)
                let pt = AlertText.message(.init(kind: kind, event: event, outlet: "x"), language: .ptBR)
                #expect(en.subject != pt.subject, "\(kind) \(event)")
            }
        }
    }

    @Test func controlCharactersOfANameAreWrittenOut() {
        let message = AlertText.message(
            .init(kind: .offline, event: .resolved, outlet: "Iron\n\u{1b}[2J"), language: .en)
        #expect(!message.subject.unicodeScalars.contains { $0.value < 0x20 })
        #expect(message.subject.contains("Iron\\n\\x1b[2J"))
    }

    @Test(arguments: [(1, 30.0), (2, 60.0), (3, 120.0), (8, 3_600.0), (100, 3_600.0)])
    func retriesBackOff(attempts: Int, delay: Double) {
        #expect(AlertOutbox.retryDelaySeconds(afterAttempt: attempts) == delay)
    }

    @Test func aDeliveryStopsAfterMaxAttemptsOrAPermanentFailure() {
        let now = IncidentMachineTests.start
        #expect(AlertOutbox.afterFailure(attempts: 1, retryable: true, now: now) == now.addingTimeInterval(30))
        #expect(AlertOutbox.afterFailure(attempts: AlertOutbox.maxAttempts, retryable: true, now: now) == nil)
        #expect(AlertOutbox.afterFailure(attempts: 1, retryable: false, now: now) == nil)
    }
}
