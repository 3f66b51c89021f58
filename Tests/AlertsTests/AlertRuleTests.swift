import Alerts
import Testing

/// Each kind's parameters: defaults filled in, bounds kept, a parameter of another kind refused with its name.
@Suite struct AlertRuleTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var kind: AlertKind
        var parameters: AlertParameters
        var wholeFleet = false
        /// The stored parameters, or the reason the rule is refused.
        var expected: Result<AlertParameters, AlertRule.Problem>
        var testDescription: String { "\(kind.rawValue) \(parameters)" }
    }

    static let cases: [Case] = [
        // offline: `after` optional (automatic), 30 s … 7 days.
        Case(kind: .offline, parameters: .init(), expected: .success(.init(resolveAfterSeconds: 120))),
        Case(
            kind: .offline, parameters: .init(afterSeconds: 300),
            expected: .success(.init(afterSeconds: 300, resolveAfterSeconds: 120))),
        Case(
            kind: .offline, parameters: .init(afterSeconds: 29),
            expected: .failure(.outOfBounds(name: "after_seconds", bounds: "30…604800 s"))),
        Case(
            kind: .offline, parameters: .init(watts: 5),
            expected: .failure(.notAParameter(name: "watts", kind: .offline))),
        Case(
            kind: .offline, parameters: .init(resolveAfterSeconds: 86_401),
            expected: .failure(.outOfBounds(name: "resolve_after_seconds", bounds: "0…86400 s"))),
        // on-too-long: `for` defaults to an hour; `watts` optional.
        Case(
            kind: .onTooLong, parameters: .init(),
            expected: .success(.init(forSeconds: 3_600, resolveAfterSeconds: 60))),
        Case(
            kind: .onTooLong, parameters: .init(forSeconds: 1_800, watts: 800, resolveAfterSeconds: 0),
            expected: .success(.init(forSeconds: 1_800, watts: 800, resolveAfterSeconds: 0))),
        Case(
            kind: .onTooLong, parameters: .init(forSeconds: 59),
            expected: .failure(.outOfBounds(name: "for_seconds", bounds: "60…604800 s"))),
        Case(
            kind: .onTooLong, parameters: .init(watts: .nan),
            expected: .failure(.outOfBounds(name: "watts", bounds: "0.1…100000 W"))),
        Case(
            kind: .onTooLong, parameters: .init(amount: "3"),
            expected: .failure(.notAParameter(name: "amount", kind: .onTooLong))),
        // standby: `watts` required.
        Case(kind: .standby, parameters: .init(), expected: .failure(.missing(name: "watts", kind: .standby))),
        Case(
            kind: .standby, parameters: .init(watts: 4.5),
            expected: .success(.init(watts: 4.5, resolveAfterSeconds: 0))),
        Case(
            kind: .standby, parameters: .init(watts: 0.05),
            expected: .failure(.outOfBounds(name: "watts", bounds: "0.1…100000 W"))),
        // budget: `amount` required, decimal text, canonical when stored; all outlets allowed.
        Case(kind: .budget, parameters: .init(), expected: .failure(.missing(name: "amount", kind: .budget))),
        Case(
            kind: .budget, parameters: .init(amount: "0120.50"), wholeFleet: true,
            expected: .success(.init(amount: "120.50", resolveAfterSeconds: 0))),
        Case(kind: .budget, parameters: .init(amount: "0"), expected: .failure(.badAmount("0"))),
        Case(kind: .budget, parameters: .init(amount: "1e3"), expected: .failure(.badAmount("1e3"))),
        Case(kind: .budget, parameters: .init(amount: "-5"), expected: .failure(.badAmount("-5"))),
        Case(kind: .budget, parameters: .init(amount: "1.1234567"), expected: .failure(.badAmount("1.1234567"))),
        Case(kind: .budget, parameters: .init(amount: "12."), expected: .failure(.badAmount("12."))),
        Case(
            kind: .budget, parameters: .init(amount: "1000000001"),
            expected: .failure(.badAmount("1000000001"))),
        // command-failed: no parameters but resolve_after.
        Case(kind: .commandFailed, parameters: .init(), expected: .success(.init(resolveAfterSeconds: 0))),
        Case(
            kind: .commandFailed, parameters: .init(forSeconds: 60),
            expected: .failure(.notAParameter(name: "for_seconds", kind: .commandFailed))),
    ]

    @Test(arguments: cases) func validates(_ test: Case) {
        let result = Result { () throws(AlertRule.Problem) -> AlertParameters in
            try AlertRule.validated(kind: test.kind, parameters: test.parameters, wholeFleet: test.wholeFleet)
                .parameters
        }
        #expect(result == test.expected)
    }

    @Test func problemsSayWhatIsWrong() {
        #expect(AlertRule.Problem.missing(name: "watts", kind: .standby).description == "standby needs watts")
        #expect(
            AlertRule.Problem.notAParameter(name: "watts", kind: .offline).description
                == "watts is not a parameter of offline")
    }

    @Test(
        arguments: [
            (nil, nil, 60.0), (nil, 10.0, 60.0), (nil, 30.0, 90.0), (nil, 600.0, 1_800.0), (300, 600.0, 300.0),
            (nil, -1.0, 60.0),
        ] as [(Int?, Double?, Double)])
    func offlineAfterIsTheLargerOfThreeIntervalsAndAMinute(rule: Int?, usual: Double?, expected: Double) {
        #expect(AlertRule.offlineAfterSeconds(rule: rule, usualIntervalSeconds: usual) == expected)
    }

    @Test func holdIsOnTooLongsForOnly() throws {
        #expect(try AlertRule.validated(kind: .onTooLong, parameters: .init(forSeconds: 600)).holdSeconds == 600)
        #expect(try AlertRule.validated(kind: .offline, parameters: .init(afterSeconds: 600)).holdSeconds == 0)
    }
}

extension AlertRule.Problem: CustomTestStringConvertible {
    public var testDescription: String { description }
}
