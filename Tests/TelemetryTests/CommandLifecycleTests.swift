import Testing

@testable import Telemetry

/// The command lifecycle table and how a state report bears on a pending command.
struct CommandLifecycleTests {
    /// Every (status, event) pair, spelled out: the whole table, so any change to it is deliberate.
    static let table: [(CommandStatus, CommandEvent, CommandStatus?)] = [
        (.queued, .send, .sent), (.queued, .confirm, nil), (.queued, .timeOut, nil), (.queued, .expire, .expired),
        (.queued, .reject, .rejected), (.queued, .supersede, .superseded),
        (.sent, .send, nil), (.sent, .confirm, .confirmed), (.sent, .timeOut, .timedOut), (.sent, .expire, nil),
        (.sent, .reject, .rejected), (.sent, .supersede, .superseded),
    ]

    @Test(arguments: table.indices)
    func pendingStatusesFollowTheTable(_ index: Int) {
        let (status, event, expected) = Self.table[index]
        #expect(status.applying(event) == expected, "\(status) + \(event)")
    }

    @Test(arguments: CommandStatus.allCases.filter(\.isFinal))
    func finalStatusesAcceptNoEvent(_ status: CommandStatus) {
        for event in CommandEvent.allCases {
            #expect(status.applying(event) == nil, "\(status) + \(event)")
        }
    }

    /// The SQL guards come from here; the migration's supersede hard-codes queued and sent.
    @Test func guardsOfTheConditionalUpdates() {
        #expect(CommandEvent.send.appliesTo == [.queued])
        #expect(CommandEvent.confirm.appliesTo == [.sent])
        #expect(CommandEvent.timeOut.appliesTo == [.sent])
        #expect(CommandEvent.expire.appliesTo == [.queued])
        #expect(CommandEvent.supersede.appliesTo == [.queued, .sent])
        for event in CommandEvent.allCases {
            for status in event.appliesTo { #expect(status.applying(event) == event.target) }
        }
        #expect(CommandStatus.queued.resultName == "accepted")
        #expect(CommandStatus.timedOut.resultName == "timed_out")
    }

    struct ReportCase: Sendable, CustomTestStringConvertible {
        var status: CommandStatus
        var report: StateReport
        var expected: StateReportDecision
        var testDescription: String { "\(status) \(report) → \(expected)" }
    }

    @Test(arguments: [
        ReportCase(status: .sent, report: StateReport(state: .on), expected: .confirm),
        ReportCase(status: .sent, report: StateReport(state: .on, commandID: 7), expected: .confirm),
        // An anonymous report of the other state may predate the command: the timeout decides.
        ReportCase(status: .sent, report: StateReport(state: .off), expected: .none),
        ReportCase(
            status: .sent, report: StateReport(state: .off, commandID: 7),
            expected: .reject(reason: "contrary_state: the outlet answered command 7 with state off")),
        // A report naming another command says nothing about this one.
        ReportCase(status: .sent, report: StateReport(state: .on, commandID: 6), expected: .none),
        // Nothing was sent yet (held for an offline outlet).
        ReportCase(status: .queued, report: StateReport(state: .on), expected: .none),
        ReportCase(status: .confirmed, report: StateReport(state: .on), expected: .none),
    ])
    func stateReportDecisions(_ item: ReportCase) {
        #expect(
            StateReportDecision(status: item.status, commandID: 7, requested: .on, report: item.report)
                == item.expected)
    }
}
