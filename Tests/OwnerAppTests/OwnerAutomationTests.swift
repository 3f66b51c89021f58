import Automations
import Foundation
import Postgres
import Runtime
import ServiceTestSupport
import Storage
import Telemetry
import TestSupport
import Testing

/// The owners' automations in the app against a real PostgreSQL, over real HTTP on loopback (``OwnerAppTests``'s
/// harness): each kind added, listed, paused and removed; what happens next and what happened last on the outlet's
/// detail; bad bodies refused with a reason, never a 500; another owner's outlet or automation the same 404 as an
/// unknown one, with nothing changed; an outlet's limit of automations.
@Suite(.serialized) struct OwnerAutomationTests {
    typealias App = OwnerAppTests.App

    /// Claims `code` for `user` and sets the outlet's time zone; returns the user's token.
    static func owner(_ app: App, _ user: String, claims code: String, zone: String = "America/Fortaleza")
        async throws -> String
    {
        let token = try await app.login(user)
        let claimed = try await app.send(
            "POST", "/api/v1/outlets", token: token, body: try app.claimBody(code, "Fridge"))
        guard claimed.status == 201 else { throw HarnessError("claim of \(code): \(claimed.status) \(claimed.body)") }
        _ = try app.sql("UPDATE devices SET time_zone = '\(zone)' WHERE code = '\(code)' RETURNING 1")
        return token
    }

    static func add(_ app: App, _ token: String, _ code: String, _ body: String) async throws -> AppResponse {
        try await app.send("POST", "/api/v1/outlets/\(code)/automations", token: token, body: body)
    }

    static func id(_ response: AppResponse) throws -> Int64 {
        guard case .number(let id)? = response.json?["id"] else { throw HarnessError("no id: \(response.body)") }
        return Int64(id)
    }

    static func list(_ app: App, _ token: String, _ code: String) async throws -> [JSONValue] {
        let response = try await app.send("GET", "/api/v1/outlets/\(code)/automations", token: token)
        guard response.status == 200, case .array(let list)? = response.json else {
            throw HarnessError("list of \(code): \(response.status) \(response.body)")
        }
        return list
    }

    static func message(_ response: AppResponse) -> String {
        if case .string(let text)? = response.json?["error"]?["message"] { return text }
        return ""
    }

    /// Automations as rows of text, to see that nothing changed.
    static func snapshot(_ app: App) throws -> String {
        try app.sql(
            """
            SELECT coalesce(string_agg(id || kind || enabled || coalesce(removed_at::text, '-')
                                       || coalesce(next_due_at::text, '-'), ',' ORDER BY id), '')
                   || (SELECT count(*) FROM automation_firings)::text
            FROM automations
            """)
    }

    // MARK: Each kind

    @Test func eachKindIsAddedListedPausedAndRemoved() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            // A timer at a whole minute 30 days ahead, given in UTC, answered in the outlet's offset.
            let instant = Date(
                timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 + 2_592_000)
            let utc = ISO8601DateFormatter()
            let local = ISO8601DateFormatter()
            local.timeZone = TimeZone(identifier: "America/Fortaleza")
            let bodies: [(String, String, [String: JSONValue])] = [
                (
                    #"{"kind":"timer","state":"off","in_seconds":7200}"#, "off at ",
                    ["state": .string("off"), "watts": .null, "days": .null]
                ),
                (
                    #"{"kind":"timer","state":"on","at":"\#(utc.string(from: instant))"}"#,
                    "on at \(local.string(from: instant))",
                    ["state": .string("on"), "at": .string(local.string(from: instant))]
                ),
                (
                    #"{"kind":"schedule","state":"off","at":"23:00","days":["mon","tue","wed","thu","fri"]}"#,
                    "off at 23:00 mon-fri",
                    [
                        "state": .string("off"), "at": .string("23:00"),
                        "days": .array(["mon", "tue", "wed", "thu", "fri"].map { .string($0) }),
                    ]
                ),
                (
                    #"{"kind":"schedule","state":"on","at":"07:30"}"#, "on at 07:30 daily",
                    ["days": .array(Weekday.allCases.map { .string($0.rawValue) })]
                ),
                (
                    #"{"kind":"over-power","watts":2000,"for_seconds":10}"#, "off when at or above 2000 W for 10s",
                    ["watts": .number(2000), "for_seconds": .number(10), "state": .null, "at": .null, "next_at": .null]
                ),
                (
                    #"{"kind":"idle","watts":5,"for_seconds":1800}"#, "off when at or below 5 W for 30m while on",
                    ["watts": .number(5), "for_seconds": .number(1800)]
                ),
            ]
            var ids: [Int64] = []
            for (body, summary, fields) in bodies {
                let response = try await Self.add(app, ana, "kit-1", body)
                #expect(response.status == 201, "\(body): \(response.status) \(response.body)")
                guard case .string(let text)? = response.json?["summary"] else {
                    Issue.record("no summary: \(response.body)")
                    continue
                }
                #expect(text.hasPrefix(summary), "\(body): \(text)")
                #expect(response.json?["enabled"] == .bool(true))
                #expect(response.json?["time_zone"] == .string("America/Fortaleza"))
                #expect(response.json?["last"] == .null)
                #expect(response.json?["code"] == .string("kit-1"))
                for (key, value) in fields { #expect(response.json?[key] == value, "\(body): \(key)") }
                ids.append(try Self.id(response))
            }
            #expect(try app.sql("SELECT string_agg(DISTINCT created_by, ',') FROM automations") == "owner:ana")

            // A schedule's and a timer's next time in the outlet's offset; power rules have none.
            let list = try await Self.list(app, ana, "kit-1")
            #expect(list.map { $0["id"]?.numberValue().map(Int64.init) } == ids.map { $0 })
            for item in list.prefix(4) {
                guard case .string(let next)? = item["next_at"] else {
                    Issue.record("no next_at: \(item)")
                    continue
                }
                #expect(next.hasSuffix("-03:00"), "\(next)")
                #expect(RFC3339.date(from: next).map { $0 > Date() } == true)
            }
            guard case .string(let timerNext)? = list[0]["next_at"], let timerAt = RFC3339.date(from: timerNext) else {
                throw HarnessError("timer: \(list[0])")
            }
            #expect(abs(timerAt.timeIntervalSinceNow - 7_200) < 60)
            for key in [
                "id", "kind", "code", "enabled", "state", "at", "days", "watts", "for_seconds", "summary", "next_at",
                "time_zone", "created_at", "last",
            ] {
                #expect(list.allSatisfy { $0[key] != nil }, "\(key) missing")
            }
            // One of them alone, and its (empty) history.
            let one = try await app.send("GET", "/api/v1/automations/\(ids[2])", token: ana)
            #expect(one.status == 200 && one.json?["summary"] == .string("off at 23:00 mon-fri"))
            let history = try await app.send("GET", "/api/v1/automations/\(ids[2])/history", token: ana)
            #expect(history.status == 200 && history.json == .array([]))

            // Paused: no next time, and the runner's index no longer holds it; resumed: a next time again.
            for id in ids {
                let paused = try await app.send(
                    "PATCH", "/api/v1/automations/\(id)", token: ana, body: #"{"enabled":false}"#)
                #expect(paused.status == 200, "\(paused.body)")
                #expect(paused.json?["enabled"] == .bool(false))
                #expect(paused.json?["next_at"] == .null)
            }
            #expect(try app.sql("SELECT count(*) FROM automations WHERE enabled") == "0")
            let resumed = try await app.send(
                "PATCH", "/api/v1/automations/\(ids[2])", token: ana, body: #"{"enabled":true}"#)
            #expect(resumed.json?["enabled"] == .bool(true))
            #expect(resumed.json?["next_at"] != .null)

            // Removed: gone from the list, 404 afterwards, the row kept (its history stays).
            for id in ids {
                #expect(try await app.send("DELETE", "/api/v1/automations/\(id)", token: ana).status == 204)
                #expect(try await app.send("DELETE", "/api/v1/automations/\(id)", token: ana).status == 404)
                #expect(try await app.send("GET", "/api/v1/automations/\(id)", token: ana).status == 404)
            }
            #expect(try await Self.list(app, ana, "kit-1").isEmpty)
            #expect(try app.sql("SELECT count(*) FROM automations WHERE removed_at IS NOT NULL") == "6")
        }
    }

    // MARK: The outlet's detail

    @Test func theDetailSaysWhatHappensNextAndWhatTheLastAutomationDid() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            let empty = try await app.send("GET", "/api/v1/outlets/kit-1", token: ana)
            #expect(empty.json?["next_automation"] == .null)
            #expect(empty.json?["last_automation"] == .null)

            let schedule = try Self.id(
                try await Self.add(app, ana, "kit-1", #"{"kind":"schedule","state":"off","at":"23:00","days":"daily"}"#)
            )
            let timer = try Self.id(
                try await Self.add(app, ana, "kit-1", #"{"kind":"timer","state":"on","in_seconds":60}"#))
            _ = try Self.id(
                try await Self.add(app, ana, "kit-1", #"{"kind":"over-power","watts":1500.5,"for_seconds":5}"#))
            // The timer is due first.
            let detail = try await app.send("GET", "/api/v1/outlets/kit-1", token: ana)
            #expect(detail.json?["next_automation"]?["automation_id"]?.numberValue() == Double(timer))
            #expect(detail.json?["next_automation"]?["state"] == .string("on"))
            guard case .string(let at)? = detail.json?["next_automation"]?["at"] else {
                throw HarnessError("no next: \(detail.body)")
            }
            #expect(at.hasSuffix("-03:00"))
            // Paused, the schedule is next.
            _ = try await app.send("PATCH", "/api/v1/automations/\(timer)", token: ana, body: #"{"enabled":false}"#)
            let paused = try await app.send("GET", "/api/v1/outlets/kit-1", token: ana)
            #expect(paused.json?["next_automation"]?["automation_id"]?.numberValue() == Double(schedule))
            #expect(paused.json?["next_automation"]?["summary"] == .string("off at 23:00 daily"))
            guard case .string(let scheduled)? = paused.json?["next_automation"]?["at"] else {
                throw HarnessError(paused.body)
            }
            #expect(scheduled.contains("T23:00:00-03:00"), "\(scheduled)")

            // The schedule comes due (as if its time had come) and the runner fires it: a command, its firing.
            _ = try app.sql(
                "UPDATE automations SET next_due_at = clock_timestamp() - interval '1 second' WHERE id = \(schedule) RETURNING 1"
            )
            let connection = try PostgresConnection(connectionString: app.url)
            defer { connection.close() }
            let outcomes = try AutomationRound(instanceID: "test", catchUpSeconds: 60).runDue(
                AutomationStore(connection: connection))
            #expect(outcomes.map(\.result) == [.fired])
            let fired = try await app.send("GET", "/api/v1/outlets/kit-1", token: ana)
            let last = fired.json?["last_automation"]
            #expect(last?["automation_id"]?.numberValue() == Double(schedule))
            #expect(last?["result"] == .string("fired"))
            #expect(last?["state"] == .string("off"))
            #expect(last?["command_status"]?.isNull == false)
            #expect(last?["command_id"]?.numberValue() != nil)
            guard case .string(let reason)? = last?["reason"] else { throw HarnessError(fired.body) }
            #expect(reason.contains("23:00"), "\(reason)")
            // The list's `last` and the history say the same.
            let list = try await Self.list(app, ana, "kit-1")
            #expect(list.first { $0["id"]?.numberValue() == Double(schedule) }?["last"]?["result"] == .string("fired"))
            let history = try await app.send("GET", "/api/v1/automations/\(schedule)/history?limit=5", token: ana)
            guard case .array(let firings)? = history.json else { throw HarnessError(history.body) }
            #expect(firings.count == 1)
            #expect(firings.first?["command_id"] == last?["command_id"])
            #expect(
                try app.sql("SELECT source || ' ' || requested_by FROM commands") == "automation automation:\(schedule)"
            )
        }
    }

    // MARK: Bad bodies

    @Test func badBodiesAreRefusedWithAReasonNeverA500() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            let nested =
                #"{"kind":"timer","state":"off","in_seconds":"#
                + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "}"
            let cases: [(String, Int, String)] = [
                (#"{"kind":"sunrise","state":"off"}"#, 400, "kind: expected schedule, timer"),
                (#"{"state":"off","in_seconds":60}"#, 400, "kind: required"),
                (#"{"kind":7}"#, 400, "kind: expected a string"),
                (#"{"kind":"schedule","state":"off","at":"25:00"}"#, 400, "at: expected a time HH:MM"),
                (#"{"kind":"schedule","state":"off","at":"23:60"}"#, 400, "at: expected a time HH:MM"),
                (#"{"kind":"schedule","state":"off","at":"24:00"}"#, 400, "at: expected a time HH:MM"),
                (#"{"kind":"schedule","state":"off"}"#, 400, "at: required"),
                (#"{"kind":"schedule","state":"dim","at":"23:00"}"#, 400, "state: must be on or off"),
                (#"{"kind":"schedule","state":"off","at":"23:00","days":[]}"#, 400, "days: name at least one day"),
                (#"{"kind":"schedule","state":"off","at":"23:00","days":["someday"]}"#, 400, "days: \"someday\""),
                (#"{"kind":"schedule","state":"off","at":"23:00","days":[1]}"#, 400, "days: expected day names"),
                (#"{"kind":"schedule","state":"off","at":"23:00","days":{"mon":true}}"#, 400, "days: expected a list"),
                (#"{"kind":"schedule","state":"off","at":"23:00","minute":5}"#, 400, "minute: not a field"),
                (#"{"kind":"timer","state":"off","in_seconds":-60}"#, 400, "in_seconds: expected a whole number"),
                (#"{"kind":"timer","state":"off","in_seconds":0}"#, 400, "in_seconds: expected a whole number"),
                (#"{"kind":"timer","state":"off","in_seconds":1.5}"#, 400, "in_seconds: expected a whole number"),
                (#"{"kind":"timer","state":"off","in_seconds":1e400}"#, 400, "in_seconds: out of range"),
                (#"{"kind":"timer","state":"off","in_seconds":99999999999}"#, 400, "in_seconds: expected a whole"),
                (
                    #"{"kind":"timer","state":"off","in_seconds":"60"}"#, 400,
                    "in_seconds: expected a number, got string"
                ),
                (#"{"kind":"timer","state":"off"}"#, 400, "in_seconds, at: give one"),
                (
                    #"{"kind":"timer","state":"off","in_seconds":60,"at":"2099-01-01T00:00:00Z"}"#, 400,
                    "in_seconds, at: give one"
                ),
                (#"{"kind":"timer","state":"off","at":"2020-01-01T00:00:00Z"}"#, 400, "at: the time has passed"),
                (#"{"kind":"timer","state":"off","at":"2099-01-01T00:00:00"}"#, 400, "at: expected an RFC 3339"),
                (#"{"kind":"timer","state":"off","at":"2030-01-01T00:00:00Z"}"#, 400, "at: at most a year ahead"),
                (#"{"kind":"timer","state":"off\u0000","in_seconds":60}"#, 400, "state: must not contain control"),
                (#"{"kind":"schedule","state":"off","at":"23:00\u001b[2J"}"#, 400, "at: must not contain control"),
                (#"{"kind":"schedule","state":"off","at":"23:00","days":["mon\u0085"]}"#, 400, "days: must not"),
                (#"{"kind":"timer\u0000","state":"off","in_seconds":60}"#, 400, "kind: must not contain control"),
                (#"{"kind":"timer","state":"off","in_seconds":60,"x\u0007y":1}"#, 400, #"x\x07y: not a field"#),
                (#"{"kind":"over-power","watts":0,"for_seconds":10}"#, 400, "watts: expected 0.1 to 100000"),
                (#"{"kind":"over-power","watts":-5,"for_seconds":10}"#, 400, "watts: expected 0.1 to 100000"),
                (#"{"kind":"over-power","watts":100001,"for_seconds":10}"#, 400, "watts: expected 0.1 to 100000"),
                (#"{"kind":"over-power","watts":"2000","for_seconds":10}"#, 400, "watts: expected a number"),
                (#"{"kind":"over-power","for_seconds":10}"#, 400, "watts: required"),
                (#"{"kind":"over-power","watts":2000}"#, 400, "for_seconds: required"),
                (#"{"kind":"over-power","watts":2000,"for_seconds":-1}"#, 400, "for_seconds: expected a whole number"),
                (#"{"kind":"idle","watts":5,"for_seconds":604801}"#, 400, "for_seconds: expected a whole number"),
                (#"{"kind":"idle","watts":-1,"for_seconds":60}"#, 400, "watts: expected 0, or 0.1 to 100000"),
                (
                    #"{"kind":"idle","watts":5,"for_seconds":60,"state":"off"}"#, 400,
                    "state: not a field of an automation of kind idle"
                ),
                (
                    #"{"kind":"group-limit","name":"house","watts":3000,"for_seconds":5,"outlets":["kit-1"]}"#, 403,
                    "kind: group-limit automations are for operators"
                ),
                ("{not json", 400, "body: not JSON"),
                ("[]", 400, "body: expected a JSON object"),
                ("\"timer\"", 400, "body: expected a JSON object"),
                (nested, 400, "body: not JSON"),
                ("{\"kind\":\"timer\u{0}\"}", 400, "body: not JSON"),
                (
                    #"{"kind":"timer","state":"off","in_seconds":60,"pad":""#
                        + String(repeating: "x", count: 20_000) + #""}"#, 413, "body: larger than"
                ),
            ]
            for (body, status, message) in cases {
                let response = try await Self.add(app, ana, "kit-1", body)
                #expect(response.status == status, "\(body.prefix(120)): \(response.status) \(response.body)")
                #expect(Self.message(response).hasPrefix(message), "\(body.prefix(120)): \(Self.message(response))")
            }
            // Not sent as JSON: 415.
            let plain = try await Blocking.run("app-test-http") {
                try AppResponse.exchange(
                    port: app.port, method: "POST", path: "/api/v1/outlets/kit-1/automations", token: ana,
                    body: #"{"kind":"timer","state":"off","in_seconds":60}"#, contentType: "text/plain")
            }
            #expect(plain.status == 415)
            #expect(try app.sql("SELECT count(*) FROM automations") == "0")

            // Updates and history: the same care.
            let id = try Self.id(
                try await Self.add(app, ana, "kit-1", #"{"kind":"timer","state":"off","in_seconds":60}"#))
            let updates: [(String, String)] = [
                (#"{"enabled":"no"}"#, "enabled: expected true or false, got string"),
                (#"{"enabled":0}"#, "enabled: expected true or false, got number"),
                ("{}", "enabled: required"), (#"{"enabled":null}"#, "enabled: required"),
                (#"{"enabled":false,"state":"on"}"#, "state: not a field"), ("[true]", "body: expected a JSON object"),
            ]
            for (body, message) in updates {
                let response = try await app.send("PATCH", "/api/v1/automations/\(id)", token: ana, body: body)
                #expect(response.status == 400, "\(body): \(response.status) \(response.body)")
                #expect(Self.message(response).hasPrefix(message), "\(body): \(Self.message(response))")
            }
            #expect(try app.sql("SELECT enabled FROM automations WHERE id = \(id)") == "t")
            for limit in ["0", "201", "-1", "x", "1e2", "99999999999999999999"] {
                let response = try await app.send(
                    "GET", "/api/v1/automations/\(id)/history?limit=\(limit)", token: ana)
                #expect(response.status == 400 && Self.message(response).hasPrefix("limit:"), "\(limit)")
            }
            // Ids that cannot be: the same 404 as an unknown one.
            let unknown = try await app.send("GET", "/api/v1/automations/999999", token: ana)
            #expect(unknown.status == 404)
            for path in ["0", "-1", "abc", "1.5", "99999999999999999999", "%00"] {
                let response = try await app.send("GET", "/api/v1/automations/\(path)", token: ana)
                #expect(response.status == 404 && response.body == unknown.body, "\(path): \(response.body)")
            }
            // A path code that cannot be an outlet.
            #expect(try await app.send("GET", "/api/v1/outlets/a%20b/automations", token: ana).status == 404)
        }
    }

    // MARK: Another owner's

    /// Bob, owner of kit-2, on ana's kit-1 and ana's automation: every route answers exactly what it answers for an
    /// outlet or automation that does not exist, and nothing of ana's changes.
    @Test func anotherOwnersOutletsAndAutomationsAreNotFoundAndStayAsTheyWere() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            let bob = try await Self.owner(app, "bob", claims: "kit-2")
            let anas = try Self.id(
                try await Self.add(app, ana, "kit-1", #"{"kind":"schedule","state":"off","at":"23:00"}"#))
            let bobs = try Self.id(
                try await Self.add(app, bob, "kit-2", #"{"kind":"timer","state":"off","in_seconds":600}"#))
            let before = try Self.snapshot(app)
            let unknownID = anas + bobs + 1_000
            let timer = #"{"kind":"timer","state":"off","in_seconds":60}"#
            let pairs: [(String, String, String, String?)] = [
                ("GET", "/api/v1/outlets/kit-1/automations", "/api/v1/outlets/kit-9/automations", nil),
                ("POST", "/api/v1/outlets/kit-1/automations", "/api/v1/outlets/kit-9/automations", timer),
                ("GET", "/api/v1/automations/\(anas)", "/api/v1/automations/\(unknownID)", nil),
                (
                    "PATCH", "/api/v1/automations/\(anas)", "/api/v1/automations/\(unknownID)",
                    #"{"enabled":false}"#
                ),
                ("DELETE", "/api/v1/automations/\(anas)", "/api/v1/automations/\(unknownID)", nil),
                ("GET", "/api/v1/automations/\(anas)/history", "/api/v1/automations/\(unknownID)/history", nil),
            ]
            for (method, anasPath, unknownPath, body) in pairs {
                let theirs = try await app.send(method, anasPath, token: bob, body: body)
                let unknown = try await app.send(method, unknownPath, token: bob, body: body)
                #expect(theirs.status == 404, "\(method) \(anasPath): \(theirs.status) \(theirs.body)")
                #expect(
                    theirs.body.replacingOccurrences(of: "kit-1", with: "X")
                        == unknown.body.replacingOccurrences(of: "kit-9", with: "X"),
                    "\(method) \(anasPath): \(theirs.body) vs \(unknown.body)")
                #expect(!theirs.body.contains("23:00"))
            }
            // Bob's own list shows only his; ana's outlet never shows his automation either.
            let bobsList = try await Self.list(app, bob, "kit-2")
            #expect(bobsList.map { $0["id"]?.numberValue() } == [Double(bobs)])
            #expect(try await Self.list(app, ana, "kit-1").map { $0["id"]?.numberValue() } == [Double(anas)])
            #expect(try Self.snapshot(app) == before)
            #expect(
                try app.sql(
                    "SELECT count(*) FROM automations WHERE device_id = (SELECT id FROM devices WHERE code = 'kit-1')")
                    == "1")

            // Ana releases kit-1 (her automations on it go with it) and bob claims it: her automation is neither
            // his to see nor hers any more.
            #expect(try await app.send("DELETE", "/api/v1/outlets/kit-1", token: ana).status == 204)
            #expect(try app.sql("SELECT removed_at IS NOT NULL FROM automations WHERE id = \(anas)") == "t")
            let claimed = try await app.send(
                "POST", "/api/v1/outlets", token: bob, body: try app.claimBody("kit-1", "Mine"))
            #expect(claimed.status == 201)
            let released = try Self.snapshot(app)
            #expect(try await Self.list(app, bob, "kit-1").isEmpty)
            let detail = try await app.send("GET", "/api/v1/outlets/kit-1", token: bob)
            #expect(detail.json?["next_automation"] == .null)
            for (method, path, body) in [
                ("GET", "/api/v1/automations/\(anas)", nil),
                ("PATCH", "/api/v1/automations/\(anas)", #"{"enabled":false}"#),
                ("DELETE", "/api/v1/automations/\(anas)", nil), ("GET", "/api/v1/automations/\(anas)/history", nil),
            ] as [(String, String, String?)] {
                #expect(try await app.send(method, path, token: bob, body: body).status == 404, "\(method) \(path)")
                #expect(try await app.send(method, path, token: ana, body: body).status == 404, "\(method) \(path)")
            }
            #expect(try Self.snapshot(app) == released)
        }
    }

    // MARK: Limits

    @Test func anOutletTakesAtMostTwentyAutomationsFromItsOwner() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            var ids: [Int64] = []
            for watts in 1...AutomationRule.Limits.perOutletForOwners {
                let response = try await Self.add(
                    app, ana, "kit-1", #"{"kind":"over-power","watts":\#(watts * 100),"for_seconds":10}"#)
                #expect(response.status == 201, "\(watts): \(response.body)")
                ids.append(try Self.id(response))
            }
            let refused = try await Self.add(app, ana, "kit-1", #"{"kind":"idle","watts":5,"for_seconds":60}"#)
            #expect(refused.status == 400)
            #expect(Self.message(refused).contains("at most 20 automations"), "\(refused.body)")
            #expect(try app.sql("SELECT count(*) FROM automations") == "20")
            #expect(try await app.send("DELETE", "/api/v1/automations/\(ids[0])", token: ana).status == 204)
            #expect(
                try await Self.add(app, ana, "kit-1", #"{"kind":"idle","watts":5,"for_seconds":60}"#).status == 201)
        }
    }

    /// A rule's watts are shown as they were accepted, in its JSON and in its text alike, and a limit below a
    /// tenth of a watt (other than an idle level of 0) is refused: 1e-300 W was accepted and shown as `"watts": 0`
    /// beside a summary of "1e-300 W", and 1234.5678 W as 1234.568.
    @Test func wattsAreShownAsAcceptedOrRefusedBelowATenthOfAWatt() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await Self.owner(app, "ana", claims: "kit-1")
            for body in [
                #"{"kind":"over-power","watts":1e-300,"for_seconds":10}"#,
                #"{"kind":"over-power","watts":0.09,"for_seconds":10}"#,
                #"{"kind":"idle","watts":0.05,"for_seconds":60}"#, #"{"kind":"idle","watts":5e-324,"for_seconds":60}"#,
            ] {
                let refused = try await Self.add(app, ana, "kit-1", body)
                #expect(refused.status == 400, "\(body): \(refused.status) \(refused.body)")
                #expect(Self.message(refused).hasPrefix("watts: expected 0"), "\(body): \(refused.body)")
            }
            #expect(try app.sql("SELECT count(*) FROM automations") == "0")
            for (kind, watts, shown) in [
                ("over-power", "1234.5678", "1234.5678"), ("over-power", "0.1", "0.1"), ("idle", "0", "0"),
                ("idle", "2.0005", "2.0005"), ("over-power", "99999.99999", "99999.99999"),
                ("over-power", "2000.0", "2000"),
            ] {
                let added = try await Self.add(
                    app, ana, "kit-1", #"{"kind":"\#(kind)","watts":\#(watts),"for_seconds":10}"#)
                #expect(added.status == 201, "\(watts): \(added.body)")
                #expect(added.body.contains(#""watts":\#(shown),"#), "\(watts): \(added.body)")
                guard case .string(let summary)? = added.json?["summary"] else {
                    Issue.record("no summary: \(added.body)")
                    continue
                }
                #expect(summary.contains(" \(shown) W "), "\(watts): \(summary)")
                let listed = try await Self.list(app, ana, "kit-1").first { $0["id"] == added.json?["id"] }
                #expect(listed?["watts"]?.numberValue() == Double(watts), "\(watts): \(String(describing: listed))")
            }
        }
    }

    /// A release racing automation adds: in each of 30 rounds ana claims kit-1, then sends three adds and the
    /// release at once. Whatever order they run in, no rule of hers stays live on the released outlet (an add that
    /// comes after the release is a 404; one that came before goes with the release). The release's removal used to
    /// read the rules as of its start, before an add it had waited for: such a rule stayed live, hidden from the
    /// next owner, counted against their 20, and firing again if she claimed the outlet back.
    @Test func aReleaseRacingAutomationAddsLeavesNoRuleOfTheOldOwner() async throws {
        try await OwnerAppTests.withApp { app in
            let ana = try await app.login("ana")
            let anaID = try app.sql("SELECT id FROM app_users WHERE name = 'ana'")
            var answers: [Int: Int] = [:]
            for round in 1...30 {
                let claimed = try await app.send(
                    "POST", "/api/v1/outlets", token: ana, body: try app.claimBody("kit-1", "Fridge"))
                #expect(claimed.status == 201, "round \(round): \(claimed.body)")
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<3 {
                        group.addTask {
                            try await Self.add(
                                app, ana, "kit-1",
                                #"{"kind":"over-power","watts":\#(1_000 + 100 * index),"for_seconds":10}"#
                            ).status
                        }
                    }
                    group.addTask { try await app.send("DELETE", "/api/v1/outlets/kit-1", token: ana).status }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for status in statuses { answers[status, default: 0] += 1 }
                #expect(statuses.allSatisfy { [201, 204, 404].contains($0) }, "round \(round): \(statuses)")
                #expect(try app.sql("SELECT count(*) FROM devices WHERE code = 'kit-1' AND owner_id IS NULL") == "1")
                let live = try app.sql(
                    """
                    SELECT count(*) FROM automations a JOIN devices d ON d.id = a.device_id
                    WHERE d.code = 'kit-1' AND a.app_user_id = \(anaID) AND a.removed_at IS NULL
                    """)
                #expect(live == "0", "round \(round): \(statuses), \(live) of her rules live on the released outlet")
            }
            // Every add either went with the release (201) or came after it (404).
            #expect(answers[204] == 30 && (answers[201] ?? 0) + (answers[404] ?? 0) == 90, "\(answers)")
        }
    }
}
