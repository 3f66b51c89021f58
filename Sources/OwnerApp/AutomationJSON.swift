import Automations
import Foundation
import Hummingbird
import Telemetry

/// The automation routes' request bodies and answers, as `Codable` types: a field is added in one place, its type,
/// and `AutomationOpenAPITests` holds the OpenAPI file to the types' keys. Bodies are decoded by Hummingbird's
/// `JSONDecoder` (its `RequestDecoder`); answers are encoded by ``JSONOutputEncoder``, which keeps the bytes the
/// API has always written (members in their order, C1 and DEL escaped) where `JSONEncoder` would reorder them.
///
/// Before a body is decoded it goes through the checks every body of the API gets (``OwnerAPI/jsonObject(_:context:)``
/// does the same for the others): JSON sent as such (415), at most ``OwnerRequestContext/maxUploadSize`` (413), and
/// ``JSONParser``'s reading, which bounds nesting and refuses control characters in strings; a number too large
/// for a `Double` is `out of range`. A decoding error becomes a 400 naming the field and what it must be.
struct NewAutomationBody: Decodable, Sendable {
    var kind: String?
    var state: String?
    /// A schedule's `HH:MM` or a timer's RFC 3339 instant.
    var at: String?
    var days: DayList?
    var inSeconds: Double?
    var watts: Double?
    var forSeconds: Double?
    /// The name of every member sent, to refuse those the kind does not take.
    var members: Set<String> = []

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, state, at, days, watts
        case inSeconds = "in_seconds"
        case forSeconds = "for_seconds"
    }

    /// What a member must be, for the reason a wrong type gets (`watts: expected a number, got string`); `days[]`
    /// is an item of `days`.
    static let expectations: [String: String] = [
        "kind": "a string", "state": "a string", "at": "a string", "days": "a list of days", "days[]": "day names",
        "in_seconds": "a number", "watts": "a number", "for_seconds": "a number",
    ]

    init(from decoder: any Decoder) throws {
        members = Set(try decoder.container(keyedBy: MemberName.self).allKeys.map(\.stringValue))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        state = try container.decodeIfPresent(String.self, forKey: .state)
        at = try container.decodeIfPresent(String.self, forKey: .at)
        days = try container.decodeIfPresent(DayList.self, forKey: .days)
        inSeconds = try container.decodeIfPresent(Double.self, forKey: .inSeconds)
        watts = try container.decodeIfPresent(Double.self, forKey: .watts)
        forSeconds = try container.decodeIfPresent(Double.self, forKey: .forSeconds)
    }

    /// `days`: one string (`"mon-fri"`) or a list of them.
    enum DayList: Decodable, Sendable, Equatable {
        case one(String)
        case list([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .one(text)
            } else {
                self = .list(try container.decode([String].self))
            }
        }

        var items: [String] {
            switch self {
            case .one(let text): [text]
            case .list(let texts): texts
            }
        }
    }
}

/// `PATCH /api/v1/automations/{id}`: `{"enabled": false}` pauses, `true` resumes.
struct AutomationUpdateBody: Decodable, Sendable {
    var enabled: Bool?
    var members: Set<String> = []

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled
    }

    static let expectations = ["enabled": "true or false"]

    init(from decoder: any Decoder) throws {
        members = Set(try decoder.container(keyedBy: MemberName.self).allKeys.map(\.stringValue))
        enabled = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Bool.self, forKey: .enabled)
    }
}

/// Any member's name.
struct MemberName: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// An automation as the API answers it (openapi/outletd-app.yaml, `Automation`): every member present, null when
/// it does not apply.
struct AutomationAnswer: Encodable, Sendable, Equatable {
    var id: Int64
    var kind: String
    var code: String?
    var enabled: Bool
    var state: String?
    var at: String?
    var days: [String]?
    /// As accepted, every digit kept: the summary shows the same (``AutomationRule/watts(_:)``).
    var watts: Double?
    var forSeconds: Int?
    var summary: String
    var nextAt: String?
    var timeZone: String?
    var createdAt: String?
    var last: AutomationFiringAnswer?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, kind, code, enabled, state, at, days, watts, summary, last
        case forSeconds = "for_seconds"
        case nextAt = "next_at"
        case timeZone = "time_zone"
        case createdAt = "created_at"
    }

    init(_ record: AutomationRecord) {
        let zone = record.timeZone
        id = record.id
        kind = record.rule.kind.rawValue
        code = record.code
        enabled = record.enabled
        switch record.rule {
        case .schedule(let scheduled, let minute, let weekdays):
            (state, at, days) = (scheduled.rawValue, Tariff.clock(minute), weekdays.map(\.rawValue))
        case .timer(let timed, let instant):
            (state, at) = (timed.rawValue, OwnerAPI.localTimestamp(instant, zone: zone))
        case .overPower(let limit, let seconds), .idle(let limit, let seconds):
            (watts, forSeconds) = (limit, seconds)
        case .groupLimit(let group):
            (watts, forSeconds) = (group.watts, group.holdSeconds)
        }
        summary = OwnerAPI.summary(record.rule, zone: zone)
        nextAt = record.enabled ? record.nextDueAt.map { OwnerAPI.localTimestamp($0, zone: zone) } : nil
        timeZone = zone
        createdAt = record.createdAt.map(JSONOutput.timestamp)
        last = record.lastFiring.map { AutomationFiringAnswer($0, zone: zone) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(code, forKey: .code)
        try container.encode(enabled, forKey: .enabled)
        try container.encode(state, forKey: .state)
        try container.encode(at, forKey: .at)
        try container.encode(days, forKey: .days)
        try container.encode(watts, forKey: .watts)
        try container.encode(forSeconds, forKey: .forSeconds)
        try container.encode(summary, forKey: .summary)
        try container.encode(nextAt, forKey: .nextAt)
        try container.encode(timeZone, forKey: .timeZone)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(last, forKey: .last)
    }
}

/// A firing as the API answers it (`AutomationFiring`): `at` is when it was due (a schedule's or timer's time, or
/// the reading that met a power rule), times with the outlet's offset.
struct AutomationFiringAnswer: Encodable, Sendable, Equatable {
    var id: Int64
    var automationID: Int64
    var kind: String
    var result: String
    var at: String
    var recordedAt: String
    var state: String?
    var reason: String
    var commandID: Int64?
    var commandStatus: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, kind, result, at, state, reason
        case automationID = "automation_id"
        case recordedAt = "recorded_at"
        case commandID = "command_id"
        case commandStatus = "command_status"
    }

    init(_ firing: AutomationFiring, zone: String?) {
        id = firing.id
        automationID = firing.automationID
        kind = firing.kind.rawValue
        result = firing.result.rawValue
        at = OwnerAPI.localTimestamp(firing.dueAt, zone: zone)
        recordedAt = OwnerAPI.localTimestamp(firing.recordedAt, zone: zone)
        state = firing.state?.rawValue
        reason = firing.reason
        commandID = firing.commandID
        commandStatus = firing.commandStatus
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(automationID, forKey: .automationID)
        try container.encode(kind, forKey: .kind)
        try container.encode(result, forKey: .result)
        try container.encode(at, forKey: .at)
        try container.encode(recordedAt, forKey: .recordedAt)
        try container.encode(state, forKey: .state)
        try container.encode(reason, forKey: .reason)
        try container.encode(commandID, forKey: .commandID)
        try container.encode(commandStatus, forKey: .commandStatus)
    }
}

extension OwnerAPI {
    /// `value` as the answer, with `status` and `Cache-Control: no-store` like every answer of the API.
    static func answer(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, _ request: Request, context: OwnerRequestContext
    ) throws -> Response {
        try JSONOutputEncoder().encode(value).response(status)
    }

    /// The body as `Body`, after the checks every body gets; a 400 naming the field otherwise, what it must be
    /// taken from `expectations`.
    static func decodeBody<Body: Decodable>(
        _ type: Body.Type, _ request: Request, context: OwnerRequestContext, expectations: [String: String]
    ) async throws -> Body {
        var request = request
        let members = try await jsonObject(collecting: &request, context: context)
        if let (name, _) = members.sorted(by: { $0.key < $1.key }).first(where: {
            if case .number(let number) = $0.value { !number.isFinite } else { false }
        }) {
            throw HTTPError(.badRequest, message: "\(OwnerText.inert(name)): out of range")
        }
        do {
            return try await JSONDecoder().decode(Body.self, from: request, context: context)
        } catch let error as DecodingError {
            throw refusal(error, members, expectations: expectations)
        }
    }

    /// A decoding error as a 400: `watts: expected a number, got string`, `days: expected day names, got number`.
    static func refusal(_ error: DecodingError, _ members: [String: JSONValue], expectations: [String: String])
        -> HTTPError
    {
        let path: [any CodingKey]
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        guard let field = path.first?.stringValue else {
            return HTTPError(.badRequest, message: "body: not what was expected")
        }
        var value = members[field]
        var expectation = expectations[field]
        if path.count > 1, case .array(let items)? = value, let index = path[1].intValue, items.indices.contains(index)
        {
            value = items[index]
            expectation = expectations[field + "[]"] ?? expectation
        }
        let shown = OwnerText.inert(String(field.unicodeScalars.prefix(40)))
        return HTTPError(
            .badRequest,
            message: "\(shown): expected \(expectation ?? "something else")"
                + (value.map { ", got \($0.typeName)" } ?? ""))
    }
}
