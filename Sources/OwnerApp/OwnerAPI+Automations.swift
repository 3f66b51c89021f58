import Automations
import Foundation
import Hummingbird
import Postgres
import Storage
import Telemetry

/// An owner's automations (schedule, timer, over-power, idle) on their outlets, through ``AutomationBook`` with
/// the caller as ``AutomationActor/owner(id:name:)``: another owner's outlet or automation is the same 404 as one
/// that does not exist. Group limits are for operators (the CLI). Bodies and answers are the `Codable` types of
/// AutomationJSON.swift.
extension OwnerAPI {
    /// The kinds an owner may add, and the fields each takes besides `kind`.
    static let automationFields: [AutomationKind: [NewAutomationBody.CodingKeys]] = [
        .schedule: [.state, .at, .days], .timer: [.state, .inSeconds, .at],
        .overPower: [.watts, .forSeconds], .idle: [.watts, .forSeconds],
    ]
    /// Short text fields of an automation (`kind`, `state`, `at`, a day).
    static let automationTextRule = OwnerText.Rule(maxScalars: 64, maxBytes: 64, allowsEmpty: false)
    /// At most this many firings in one history answer.
    static let historyLimits = 1...200

    static func noAutomation() -> HTTPError {
        HTTPError(.notFound, message: "no such automation")
    }

    // MARK: Routes

    /// The automations of the session's owner, through ``AutomationBook`` on `connection`.
    static func book(_ connection: PostgresConnection) -> AutomationBook<AutomationStore> {
        AutomationBook(AutomationStore(connection: connection))
    }

    static func actor(_ context: OwnerRequestContext) throws -> AutomationActor {
        let session = try context.requireIdentity().session
        return .owner(id: session.userID, name: session.userName)
    }

    @Sendable func listAutomations(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let code = try Self.code(context)
        guard
            let records = try await database.run({ store -> [AutomationRecord]? in
                guard try store.outlet(userID: actor.ownerID ?? 0, code: code) != nil else { return nil }
                return try Self.book(store.connection).list(code: code, for: actor)
            })
        else { throw Self.noOutlet(code) }
        return try Self.answer(records.map(AutomationAnswer.init), request, context: context)
    }

    /// Adds an automation to the caller's outlet: 201 with it, 400 naming the field for a bad body (unknown
    /// fields too), 403 for a group limit, 404 for an outlet that is not theirs.
    @Sendable func addAutomation(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let code = try Self.code(context)
        let body = try await Self.decodeBody(
            NewAutomationBody.self, request, context: context, expectations: NewAutomationBody.expectations)
        let rule = try Self.automationRule(body, now: Date())
        // A timer's `in_seconds` counts from the database's clock, as the runner's and the CLI's do.
        let delay = try Self.wholeNumber(body.inSeconds, "in_seconds", AutomationRule.Limits.timerSeconds, "seconds")
        var draft = AutomationBook<AutomationStore>.Draft.rule(rule)
        if case .timer(let state, _) = rule, let delay { draft = .timer(state: state, afterSeconds: delay) }
        let added = draft
        let record = try await Self.refusingAsHTTP(code: code) {
            try await database.run { try Self.book($0.connection).add(added, code: code, by: actor) }
        }
        guard let record else { throw Self.noOutlet(code) }
        return try Self.answer(AutomationAnswer(record), status: .created, request, context: context)
    }

    @Sendable func showAutomation(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let id = try Self.automationID(context)
        guard let record = try await database.run({ try Self.book($0.connection).automation(id, for: actor) })
        else { throw Self.noAutomation() }
        return try Self.answer(AutomationAnswer(record), request, context: context)
    }

    /// `{"enabled": false}` pauses an automation, `true` resumes it (a schedule counts from now).
    @Sendable func updateAutomation(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let id = try Self.automationID(context)
        let body = try await Self.decodeBody(
            AutomationUpdateBody.self, request, context: context, expectations: AutomationUpdateBody.expectations)
        try Self.refuseUnknownFields(
            body.members, allowed: AutomationUpdateBody.CodingKeys.allCases.map(\.stringValue),
            of: "an automation's update")
        guard let enabled = body.enabled else { throw HTTPError(.badRequest, message: "enabled: required") }
        guard let record = try await database.run({ try Self.book($0.connection).setEnabled(id, enabled, for: actor) })
        else { throw Self.noAutomation() }
        return try Self.answer(AutomationAnswer(record), request, context: context)
    }

    @Sendable func removeAutomation(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let id = try Self.automationID(context)
        guard try await database.run({ try Self.book($0.connection).remove(id, for: actor) })
        else { throw Self.noAutomation() }
        return Response(status: .noContent)
    }

    /// What one of the caller's automations did, newest first (`?limit=`, 1–200, default 50).
    @Sendable func automationHistory(_ request: Request, context: OwnerRequestContext) async throws -> Response {
        let actor = try Self.actor(context)
        let id = try Self.automationID(context)
        var limit = 50
        if let text = request.uri.queryParameters["limit"] {
            guard text.utf8.count <= 3, let value = Int(text), Self.historyLimits.contains(value) else {
                throw HTTPError(
                    .badRequest,
                    message: "limit: expected a whole number from \(Self.historyLimits.lowerBound) to "
                        + "\(Self.historyLimits.upperBound)")
            }
            limit = value
        }
        let count = limit
        let found = try await database.run { store -> (AutomationRecord, [AutomationFiring])? in
            let book = Self.book(store.connection)
            guard let record = try book.automation(id, for: actor) else { return nil }
            return (record, try book.history(id, for: actor, limit: count))
        }
        guard let (record, firings) = found else { throw Self.noAutomation() }
        return try Self.answer(
            firings.map { AutomationFiringAnswer($0, zone: record.timeZone) }, request, context: context)
    }

    // MARK: Reading

    /// The `{id}` of the path; anything but a positive integer is a 404 like an unknown id.
    static func automationID(_ context: OwnerRequestContext) throws -> Int64 {
        let text = context.parameters.get("id") ?? ""
        guard text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(text),
            id > 0
        else { throw noAutomation() }
        return id
    }

    /// Runs `body`, turning the store's refusals into answers: the outlet not found (or another's) is the same 404
    /// as elsewhere, anything else it refuses (a rule out of bounds, too many automations) a 400 saying why.
    static func refusingAsHTTP<T>(code: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as AutomationError {
            if error.notFound { throw noOutlet(code) }
            throw HTTPError(.badRequest, message: error.message)
        }
    }

    static func refuseUnknownFields(_ members: Set<String>, allowed: [String], of what: String) throws {
        guard let unknown = members.filter({ !allowed.contains($0) }).min() else { return }
        let shown = OwnerText.inert(String(unknown.unicodeScalars.prefix(40)))
        throw HTTPError(
            .badRequest,
            message: "\(shown): not a field of \(what) (expected \(allowed.joined(separator: ", ")))")
    }

    /// The rule a POST body describes, checked whole; 400 naming the field, 403 for a group limit.
    static func automationRule(_ body: NewAutomationBody, now: Date) throws -> AutomationRule {
        let kindText = try text(body.kind, "kind", required: true) ?? ""
        guard let kind = AutomationKind(rawValue: kindText) else {
            throw HTTPError(.badRequest, message: "kind: expected schedule, timer, over-power or idle")
        }
        guard let fields = automationFields[kind] else {
            throw HTTPError(
                .forbidden, message: "kind: group-limit automations are for operators (outletd automation add)")
        }
        try refuseUnknownFields(
            body.members, allowed: ["kind"] + fields.map(\.stringValue), of: "an automation of kind \(kind.rawValue)")
        let rule: AutomationRule
        switch kind {
        case .schedule:
            let at = try text(body.at, "at", required: true) ?? ""
            guard let minute = Tariff.minutes(at, allowsEndOfDay: false) else {
                throw HTTPError(.badRequest, message: "at: expected a time HH:MM from 00:00 to 23:59, got \"\(at)\"")
            }
            rule = .schedule(state: try switchState(body.state), minute: minute, days: try days(body.days))
        case .timer:
            let state = try switchState(body.state)
            let seconds = try wholeNumber(body.inSeconds, "in_seconds", AutomationRule.Limits.timerSeconds, "seconds")
            let at = try text(body.at, "at", required: false)
            switch (seconds, at) {
            case (let seconds?, nil):
                rule = .timer(state: state, at: now.addingTimeInterval(Double(seconds)))
            case (nil, let at?):
                guard let instant = RFC3339.date(from: at), let year = Int(at.prefix(4)), years.contains(year) else {
                    throw HTTPError(
                        .badRequest,
                        message: "at: expected an RFC 3339 time with its offset, like 2026-12-01T07:00:00-03:00")
                }
                rule = .timer(state: state, at: instant)
            default:
                throw HTTPError(.badRequest, message: "in_seconds, at: give one of them")
            }
        case .overPower, .idle:
            guard let watts = body.watts else { throw HTTPError(.badRequest, message: "watts: required") }
            guard
                let hold = try wholeNumber(
                    body.forSeconds, "for_seconds", AutomationRule.Limits.holdSeconds, "seconds")
            else { throw HTTPError(.badRequest, message: "for_seconds: required") }
            rule = kind == .idle ? .idle(watts: watts, holdSeconds: hold) : .overPower(watts: watts, holdSeconds: hold)
        case .groupLimit:
            throw HTTPError(.forbidden, message: "kind: group-limit automations are for operators")
        }
        if let problem = rule.problem(now: now) { throw HTTPError(.badRequest, message: problem) }
        return rule
    }

    /// A short text member checked against ``automationTextRule``: nil when absent or null, unless `required`.
    static func text(_ value: String?, _ field: String, required: Bool) throws -> String? {
        guard let value else {
            if required { throw HTTPError(.badRequest, message: "\(field): required") }
            return nil
        }
        if let problem = OwnerText.problem(value, automationTextRule) {
            throw HTTPError(.badRequest, message: "\(field): \(problem)")
        }
        return value
    }

    static func switchState(_ value: String?) throws -> SwitchState {
        guard let state = SwitchState(rawValue: try text(value, "state", required: true) ?? "") else {
            throw HTTPError(.badRequest, message: "state: must be on or off")
        }
        return state
    }

    /// `days`: names (`mon` … `sun`), ranges (`mon-fri`) or `daily`, as a list or one string; every day when absent.
    static func days(_ value: NewAutomationBody.DayList?) throws -> [Weekday] {
        guard let items = value?.items else { return Weekday.allCases }
        guard items.count <= 7 else { throw HTTPError(.badRequest, message: "days: at most 7 items") }
        var days = Set<Weekday>()
        for text in items {
            if let problem = OwnerText.problem(text, automationTextRule) {
                throw HTTPError(.badRequest, message: "days: \(problem)")
            }
            guard let parsed = Weekday.parseList(text) else {
                throw HTTPError(
                    .badRequest,
                    message: "days: \"\(text)\" is not a day; expected mon … sun, a range like mon-fri, or daily")
            }
            days.formUnion(parsed)
        }
        guard !days.isEmpty else { throw HTTPError(.badRequest, message: "days: name at least one day") }
        return days.sorted()
    }

    /// A whole number within `range`, or nil when absent or null.
    static func wholeNumber(_ value: Double?, _ field: String, _ range: ClosedRange<Int>, _ unit: String) throws
        -> Int?
    {
        guard let value else { return nil }
        guard value == value.rounded(), value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
            throw HTTPError(
                .badRequest,
                message: "\(field): expected a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(value)
    }

    // MARK: Shapes

    /// `date` in RFC 3339 with the offset of `zone` at that instant (`2026-11-27T23:00:00-03:00`), as the outlet's
    /// clock reads it.
    static func localTimestamp(_ date: Date, zone: String?) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = zone.flatMap(TimeZone.init(identifier:)) ?? .gmt
        return formatter.string(from: date)
    }

    /// What the rule does, in words; a timer's instant in the outlet's offset.
    static func summary(_ rule: AutomationRule, zone: String?) -> String {
        if case .timer(let state, let at) = rule { return "\(state.rawValue) at \(localTimestamp(at, zone: zone))" }
        return rule.summary
    }
}
