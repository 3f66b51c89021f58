import Automations
import Foundation
import Hummingbird
import Storage
import Telemetry

/// The outlet routes' request bodies and answers (login, the list, claim, detail, update, hourly, switch, command),
/// as `Codable` types, in the shape of ``AutomationAnswer``: a field is added in one place, and
/// `OutletOpenAPITests` holds openapi/outletd-app.yaml to their keys. Answers write every member, null when there is
/// no value (a command's `reason` only when it has one), in the order the API has always written them.
///
/// One path stays hand-written: ``OwnerAPI/write(_:to:)``, each outlet of a live event straight into the event's
/// bytes, for every owner watching at every change (`OwnerAppRulesTests` holds it to ``OutletAnswer``'s bytes).

/// A measured figure (watts, watt-hours) as the API writes it: at most three decimals, which is more than any meter
/// resolves (``JSONOutput/number(_:)``).
struct Measured: Encodable, Sendable, Equatable {
    var value: Double

    init?(_ value: Double?) {
        guard let value else { return nil }
        self.value = value
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// Money as PostgreSQL's `numeric` prints it (`5.243100`), written as that JSON number: never through floating
/// point (``JSONOutput/decimal(_:)``).
struct Money: Encodable, Sendable, Equatable {
    var text: String

    init?(_ text: String?) {
        guard let text else { return nil }
        self.text = text
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// openapi/outletd-app.yaml, `Outlet`.
struct OutletAnswer: Encodable, Sendable {
    var code: String
    var name: String
    var description: String
    var online: Bool?
    var state: String?
    var powerWatts: Measured?
    var updatedAt: String?
    var timeZone: String

    init(_ outlet: OwnedOutlet) {
        code = outlet.code
        name = outlet.name
        description = outlet.description
        online = outlet.online
        state = outlet.state?.rawValue
        powerWatts = Measured(outlet.powerWatts)
        updatedAt = outlet.updatedAt.map(JSONOutput.timestamp)
        timeZone = outlet.timeZone
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case code, name, description, online, state
        case powerWatts = "power_watts"
        case updatedAt = "updated_at"
        case timeZone = "timezone"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        try container.encode(online, forKey: .online)
        try container.encode(state, forKey: .state)
        try container.encode(powerWatts, forKey: .powerWatts)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(timeZone, forKey: .timeZone)
    }
}

/// An outlet's average, peak and energy over a period or an hour.
struct FiguresAnswer: Encodable, Sendable {
    var averagePowerWatts: Measured?
    var peakPowerWatts: Measured?
    var energyWattHours: Measured?

    init(_ figures: OwnedOutletFigures) {
        averagePowerWatts = Measured(figures.averagePowerWatts)
        peakPowerWatts = Measured(figures.peakPowerWatts)
        energyWattHours = Measured(figures.energyWattHours)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case averagePowerWatts = "average_power_watts"
        case peakPowerWatts = "peak_power_watts"
        case energyWattHours = "energy_wh"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(averagePowerWatts, forKey: .averagePowerWatts)
        try container.encode(peakPowerWatts, forKey: .peakPowerWatts)
        try container.encode(energyWattHours, forKey: .energyWattHours)
    }
}

/// openapi/outletd-app.yaml, `OutletDetail`: the outlet's members, its period, figures, cost and automations in one
/// object. Money as exact decimals with six places (round to the currency's minor unit where it is shown).
struct OutletDetailAnswer: Encodable, Sendable {
    var outlet: OutletAnswer
    var from: String
    var to: String
    var figures: FiguresAnswer
    var cost: Money?
    var currency: String?
    var monthToDateCost: Money?
    var projectedMonthCost: Money?
    var standbyWatts: Measured?
    var standbyMonthCost: Money?
    var nextAutomation: NextAutomationAnswer?
    var lastAutomation: AutomationFiringAnswer?

    init(_ detail: OwnedOutletDetail, cost: OwnedOutletCost) {
        outlet = OutletAnswer(detail.outlet)
        from = JSONOutput.timestamp(detail.from)
        to = JSONOutput.timestamp(detail.to)
        figures = FiguresAnswer(detail.figures)
        self.cost = Money(cost.cost)
        currency = cost.currency
        monthToDateCost = Money(cost.monthToDateCost)
        projectedMonthCost = Money(cost.projectedMonthCost)
        standbyWatts = Measured(cost.standbyWatts)
        standbyMonthCost = Money(cost.standbyMonthCost)
        nextAutomation = detail.automations.next.flatMap(NextAutomationAnswer.init)
        lastAutomation = detail.automations.last.map { AutomationFiringAnswer($0, zone: detail.automations.timeZone) }
    }

    /// The members after the outlet's and the figures' (which ``OutletAnswer`` and ``FiguresAnswer`` name).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case from, to, cost, currency
        case monthToDateCost = "month_to_date_cost"
        case projectedMonthCost = "projected_month_cost"
        case standbyWatts = "standby_watts"
        case standbyMonthCost = "standby_month_cost"
        case nextAutomation = "next_automation"
        case lastAutomation = "last_automation"
    }

    func encode(to encoder: any Encoder) throws {
        try outlet.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try figures.encode(to: encoder)
        try container.encode(cost, forKey: .cost)
        try container.encode(currency, forKey: .currency)
        try container.encode(monthToDateCost, forKey: .monthToDateCost)
        try container.encode(projectedMonthCost, forKey: .projectedMonthCost)
        try container.encode(standbyWatts, forKey: .standbyWatts)
        try container.encode(standbyMonthCost, forKey: .standbyMonthCost)
        try container.encode(nextAutomation, forKey: .nextAutomation)
        try container.encode(lastAutomation, forKey: .lastAutomation)
    }
}

/// The outlet detail's `next_automation`: the automation due next, when it has a time.
struct NextAutomationAnswer: Encodable, Sendable {
    var automationID: Int64
    var kind: String
    var state: String?
    var summary: String
    var at: String

    init?(_ record: AutomationRecord) {
        guard let due = record.nextDueAt else { return nil }
        automationID = record.id
        kind = record.rule.kind.rawValue
        switch record.rule {
        case .schedule(let value, _, _), .timer(let value, _): state = value.rawValue
        default: state = nil
        }
        summary = OwnerAPI.summary(record.rule, zone: record.timeZone)
        at = OwnerAPI.localTimestamp(due, zone: record.timeZone)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, state, summary, at
        case automationID = "automation_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(automationID, forKey: .automationID)
        try container.encode(kind, forKey: .kind)
        try container.encode(state, forKey: .state)
        try container.encode(summary, forKey: .summary)
        try container.encode(at, forKey: .at)
    }
}

/// `GET /api/v1/outlets/{code}/hourly`: a local day by hour.
struct HourlyAnswer: Encodable, Sendable {
    var date: String
    var timeZone: String
    var hours: [Hour]

    init(_ day: OwnedOutletDay, _ hours: [OwnedOutletHour]) {
        date = day.date
        timeZone = day.timeZone
        self.hours = hours.map { Hour(hour: $0.hour, figures: FiguresAnswer($0.figures), cost: Money($0.cost)) }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case date, hours
        case timeZone = "timezone"
    }

    struct Hour: Encodable, Sendable {
        var hour: Int
        var figures: FiguresAnswer
        var cost: Money?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case hour, cost
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(hour, forKey: .hour)
            try figures.encode(to: encoder)
            try container.encode(cost, forKey: .cost)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(date, forKey: .date)
        try container.encode(timeZone, forKey: .timeZone)
        try container.encode(hours, forKey: .hours)
    }
}

/// openapi/outletd-app.yaml, `Command`: `reason` only when the command has one.
struct CommandAnswer: Encodable, Sendable {
    var commandID: Int64
    var status: String
    var reason: String?

    init(_ command: OwnedCommand) {
        commandID = command.id
        status = command.status.rawValue
        reason = command.reason
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case status, reason
        case commandID = "command_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(commandID, forKey: .commandID)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(reason, forKey: .reason)
    }
}

/// `POST /api/v1/login`'s answer.
struct LoginAnswer: Encodable, Sendable {
    var token: String
    var expiresAt: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case token
        case expiresAt = "expires_at"
    }
}

/// The outlet routes' bodies: strings, each checked against its ``OwnerText/Rule`` after decoding
/// (``OwnerAPI/checked(_:_:_:)``); a member of another type is a 400 naming it (``OwnerAPI/decodeBody(_:_:context:expectations:)``).
struct LoginBody: Decodable, Sendable {
    var username: String?
    var password: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case username, password
    }

    static let expectations = OwnerAPI.strings(CodingKeys.self)
}

struct ClaimBody: Decodable, Sendable {
    var code: String?
    var claimKey: String?
    var name: String?
    var description: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case code, name, description
        case claimKey = "claim_key"
    }

    static let expectations = OwnerAPI.strings(CodingKeys.self)
}

struct OutletUpdateBody: Decodable, Sendable {
    var name: String?
    var description: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, description
    }

    static let expectations = OwnerAPI.strings(CodingKeys.self)
}

struct SwitchBody: Decodable, Sendable {
    var state: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case state
    }

    static let expectations = OwnerAPI.strings(CodingKeys.self)
}

extension OwnerAPI {
    /// What each member of a body of strings must be, for ``decodeBody(_:_:context:expectations:)``'s refusals.
    static func strings<Key: CodingKey & CaseIterable>(_ keys: Key.Type) -> [String: String] {
        Dictionary(uniqueKeysWithValues: keys.allCases.map { ($0.stringValue, "a string") })
    }

    /// `text` checked against `rule` (a 400 naming `field` and what is wrong), nil when absent.
    static func checked(_ text: String?, _ field: String, _ rule: OwnerText.Rule) throws -> String? {
        guard let text else { return nil }
        if let problem = OwnerText.problem(text, rule) {
            throw HTTPError(.badRequest, message: "\(field): \(problem)")
        }
        return text
    }

    /// ``checked(_:_:_:)`` for a member that must be there.
    static func required(_ text: String?, _ field: String, _ rule: OwnerText.Rule) throws -> String {
        guard let value = try checked(text, field, rule) else {
            throw HTTPError(.badRequest, message: "\(field): required")
        }
        return value
    }
}
