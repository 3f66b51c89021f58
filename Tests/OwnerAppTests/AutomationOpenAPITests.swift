import Automations
import Foundation
import Telemetry
import TestSupport
import Testing
import Yams

@testable import OwnerApp

/// openapi/outletd-app.yaml says what the automation routes take and answer; the `Codable` types are what they do.
/// Their keys must be the same: a field added to one and not the other fails here.
@Suite struct AutomationOpenAPITests {
    static func schemas() throws -> (components: [String: Any], paths: [String: Any]) {
        let text = try String(contentsOfFile: "\(TestStack.packageRoot)/openapi/outletd-app.yaml", encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let components = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        return (components, try #require(document["paths"] as? [String: Any]))
    }

    /// The property names of `schema`, and its `required` list.
    static func keys(_ schema: Any?) throws -> (properties: Set<String>, required: Set<String>) {
        let object = try #require(schema as? [String: Any])
        let properties = try #require(object["properties"] as? [String: Any])
        return (Set(properties.keys), Set(object["required"] as? [String] ?? []))
    }

    /// The members of `value` as the automation routes encode it.
    static func encodedKeys(_ value: some Encodable) throws -> Set<String> {
        let text = try JSONOutputEncoder().encode(value).text
        guard case .object(let members) = try JSONParser.parse(Array(text.utf8)) else {
            throw HarnessError("not an object")
        }
        return Set(members.keys)
    }

    static let firing = AutomationFiring(
        id: 3, automationID: 2, kind: .timer, code: "kit-1", dueAt: Date(timeIntervalSince1970: 1_800_000_000),
        recordedAt: Date(timeIntervalSince1970: 1_800_000_001), result: .fired, state: .off, commandID: nil,
        commandStatus: nil, reason: "timer: off")

    @Test func anAutomationAnswersWithEveryPropertyTheDocumentNamesAndNoOther() throws {
        let schema = try Self.keys(try Self.schemas().components["Automation"])
        // A power rule, with its nulls: every member is written, null or not.
        let record = AutomationRecord(
            id: 2, rule: .overPower(watts: 1_500.5, holdSeconds: 5), code: "kit-1", enabled: true, removed: false,
            createdBy: "owner:ana", createdAt: nil, nextDueAt: nil, timeZone: nil, lastFiring: Self.firing)
        let keys = try Self.encodedKeys(AutomationAnswer(record))
        #expect(keys == schema.properties)
        #expect(keys == schema.required)
        #expect(Set(AutomationAnswer.CodingKeys.allCases.map(\.stringValue)) == schema.properties)
    }

    @Test func aFiringAnswersWithEveryPropertyTheDocumentNames() throws {
        let schema = try Self.keys(try Self.schemas().components["AutomationFiring"])
        let answer = AutomationFiringAnswer(Self.firing, zone: "America/Sao_Paulo")
        #expect(try Self.encodedKeys(answer) == schema.properties)
        #expect(schema.required == schema.properties)
        let text = try JSONOutputEncoder().encode(answer).text
        #expect(text.hasPrefix(#"{"id":3,"automation_id":2,"kind":"timer","result":"fired","#))
    }

    @Test func theBodiesTakeTheMembersTheDocumentNames() throws {
        let (components, paths) = try Self.schemas()
        let new = try Self.keys(components["NewAutomation"])
        #expect(Set(NewAutomationBody.CodingKeys.allCases.map(\.stringValue)) == new.properties)
        #expect(Set(NewAutomationBody.expectations.keys.filter { !$0.hasSuffix("[]") }) == new.properties)
        // Every kind an owner may add takes documented members only.
        let fields = OwnerAPI.automationFields.values.flatMap { $0.map(\.stringValue) }
        #expect(Set(fields + ["kind"]) == new.properties)
        let update = (paths["/api/v1/automations/{id}"] as? [String: Any])?["patch"] as? [String: Any]
        let body = ((update?["requestBody"] as? [String: Any])?["content"] as? [String: Any])?["application/json"]
        let schema = try Self.keys((body as? [String: Any])?["schema"])
        #expect(Set(AutomationUpdateBody.CodingKeys.allCases.map(\.stringValue)) == schema.properties)
        #expect(Set(AutomationUpdateBody.expectations.keys) == schema.properties)
    }
}
