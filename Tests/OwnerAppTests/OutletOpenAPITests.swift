import Automations
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import OwnerApp
@testable import Storage

/// openapi/outletd-app.yaml says what the outlet routes (login, the list, claim, detail, update, hourly, switch,
/// command) take and answer; the `Codable` types of OutletJSON.swift are what they do. Their keys must be the same.
@Suite struct OutletOpenAPITests {
    typealias Schemas = AutomationOpenAPITests

    static let outlet = OwnedOutlet(
        code: "kit-1", name: "Kettle", description: "", online: nil, state: nil, powerWatts: nil, updatedAt: nil,
        timeZone: "UTC")

    /// The schema of `method`'s JSON body, or of its answer with `status`, under `path`.
    static func schema(_ path: String, _ method: String, answer status: String? = nil) throws -> Any? {
        let operation = try #require((try Schemas.schemas().paths[path] as? [String: Any])?[method] as? [String: Any])
        let content: Any?
        if let status {
            content = ((operation["responses"] as? [String: Any])?[status] as? [String: Any])?["content"]
        } else {
            content = (operation["requestBody"] as? [String: Any])?["content"]
        }
        return ((content as? [String: Any])?["application/json"] as? [String: Any])?["schema"]
    }

    @Test func anOutletAnswersWithEveryPropertyTheDocumentNames() throws {
        let schema = try Schemas.keys(try Schemas.schemas().components["Outlet"])
        #expect(try Schemas.encodedKeys(OutletAnswer(Self.outlet)) == schema.properties)
        #expect(schema.required == schema.properties)
        #expect(Set(OutletAnswer.CodingKeys.allCases.map(\.stringValue)) == schema.properties)
    }

    @Test func theDetailIsTheOutletAndTheDocumentsOtherMembersWithNullsWritten() throws {
        let components = try Schemas.schemas().components
        let parts = try #require((components["OutletDetail"] as? [String: Any])?["allOf"] as? [Any])
        let own = try Schemas.keys(parts.last)
        let outlet = try Schemas.keys(components["Outlet"])
        let detail = OwnedOutletDetail(
            outlet: Self.outlet, from: Date(timeIntervalSince1970: 1_800_000_000),
            to: Date(timeIntervalSince1970: 1_800_003_600), figures: OwnedOutletFigures(),
            automations: OutletAutomationGlance(next: nil, last: nil, timeZone: "UTC"))
        let answer = OutletDetailAnswer(detail, cost: OwnedOutletCost())
        #expect(try Schemas.encodedKeys(answer) == outlet.properties.union(own.properties))
        #expect(own.required == own.properties)
        let named =
            OutletDetailAnswer.CodingKeys.allCases.map(\.stringValue)
            + FiguresAnswer.CodingKeys.allCases.map(\.stringValue)
        #expect(Set(named) == own.properties)
        // Members in the order the API has always written them: the outlet's, the period, the figures, the cost.
        let text = try JSONOutputEncoder().encode(answer).text
        #expect(text.hasPrefix(#"{"code":"kit-1","name":"Kettle","description":"","online":null,"#))
        #expect(text.contains(#""timezone":"UTC","from":"2027-01-15T08:00:00.000Z","to":"#))
        #expect(text.contains(#""average_power_watts":null,"peak_power_watts":null,"energy_wh":null,"cost":null,"#))
        #expect(text.hasSuffix(#""next_automation":null,"last_automation":null}"#))
    }

    @Test func figuresAreWrittenToThreeDecimalsAndMoneyExactly() throws {
        var cost = OwnedOutletCost()
        cost.cost = "5.243100"
        cost.standbyWatts = 1.23456
        let hours = [
            OwnedOutletHour(hour: 7, figures: OwnedOutletFigures(averagePowerWatts: 95.2549), cost: "0.010000")
        ]
        let day = OwnedOutletDay(
            date: "2027-01-15", timeZone: "UTC", start: Date(timeIntervalSince1970: 0),
            end: Date(timeIntervalSince1970: 86_400))
        #expect(
            try JSONOutputEncoder().encode(HourlyAnswer(day, hours)).text
                == #"{"date":"2027-01-15","timezone":"UTC","hours":[{"hour":7,"average_power_watts":95.255,"#
                + #""peak_power_watts":null,"energy_wh":null,"cost":0.010000}]}"#)
        let detail = OwnedOutletDetail(
            outlet: Self.outlet, from: Date(timeIntervalSince1970: 0), to: Date(timeIntervalSince1970: 3_600),
            figures: OwnedOutletFigures(), automations: OutletAutomationGlance(next: nil, last: nil, timeZone: "UTC"))
        let text = try JSONOutputEncoder().encode(OutletDetailAnswer(detail, cost: cost)).text
        #expect(text.contains(#""cost":5.243100,"currency":null,"#))
        #expect(text.contains(#""standby_watts":1.235,"#))
    }

    @Test func theHourlyCommandAndLoginAnswersNameWhatTheDocumentDoes() throws {
        let hourly = try Schemas.keys(try Self.schema("/api/v1/outlets/{code}/hourly", "get", answer: "200"))
        #expect(Set(HourlyAnswer.CodingKeys.allCases.map(\.stringValue)) == hourly.properties)
        let hour = try #require(
            ((try Self.schema("/api/v1/outlets/{code}/hourly", "get", answer: "200") as? [String: Any])?["properties"]
                as? [String: Any])?["hours"] as? [String: Any])
        let hourKeys = try Schemas.keys(hour["items"])
        #expect(
            Set(
                HourlyAnswer.Hour.CodingKeys.allCases.map(\.stringValue)
                    + FiguresAnswer.CodingKeys.allCases.map(\.stringValue))
                == hourKeys.properties)
        let command = try Schemas.keys(try Schemas.schemas().components["Command"])
        #expect(Set(CommandAnswer.CodingKeys.allCases.map(\.stringValue)) == command.properties)
        let queued = OwnedCommand(id: 4, code: "kit-1", status: .queued, reason: nil)
        #expect(try Schemas.encodedKeys(CommandAnswer(queued)) == command.required)
        let login = try Schemas.keys(try Self.schema("/api/v1/login", "post", answer: "200"))
        #expect(Set(LoginAnswer.CodingKeys.allCases.map(\.stringValue)) == login.properties)
    }

    @Test func theBodiesTakeTheMembersTheDocumentNames() throws {
        let bodies: [(String, String, Set<String>)] = [
            ("/api/v1/login", "post", Set(LoginBody.CodingKeys.allCases.map(\.stringValue))),
            ("/api/v1/outlets", "post", Set(ClaimBody.CodingKeys.allCases.map(\.stringValue))),
            ("/api/v1/outlets/{code}", "patch", Set(OutletUpdateBody.CodingKeys.allCases.map(\.stringValue))),
            ("/api/v1/outlets/{code}/state", "put", Set(SwitchBody.CodingKeys.allCases.map(\.stringValue))),
        ]
        for (path, method, keys) in bodies {
            #expect(try Schemas.keys(try Self.schema(path, method)).properties == keys, "\(method) \(path)")
        }
    }
}
