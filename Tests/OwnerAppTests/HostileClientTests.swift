import Foundation
import OwnerApp
import Postgres
import Runtime
import ServiceTestSupport
import Storage
import Telemetry
import TestSupport
import Testing

/// The owners' app attacked as a hostile stranger would, on a real `outletd run` process with its app listener
/// (docs/SECURITY.md names the test behind each defence): guessing claims and passwords, flooding logins, locking
/// an owner out, odd bytes in every field, another owner's commands. Each answer is a 4xx with a reason, never a
/// 500, and owners' requests keep their pace.
@Suite(.serialized) struct HostileClientTests {
    /// A running daemon with the app on `appPort` and /metrics on `metricsPort`; users `ana` and `bob`, outlets
    /// `kit-1`…`kit-3`.
    struct Daemon: Sendable {
        let url: String
        let appPort: Int
        let metricsPort: Int
        let process: OutletdProcess
        static let passwords = ["ana": "ana-password-1", "bob": "bob-password-2"]

        var app: OwnerAppTests.App { OwnerAppTests.App(url: url, port: appPort) }

        /// One exchange with extra header lines and a chosen content type.
        func send(
            _ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: [String] = [],
            contentType: String? = "application/json"
        ) async throws -> AppResponse {
            let port = appPort
            return try await Blocking.run("hostile-http") {
                try AppResponse.exchange(
                    port: port, method: method, path: path, token: token, body: body, headers: headers,
                    contentType: contentType)
            }
        }

        func login(_ user: String, password: String? = nil, headers: [String] = []) async throws -> AppResponse {
            try await send(
                "POST", "/api/v1/login",
                body: #"{"username":"\#(user)","password":"\#(password ?? Self.passwords[user] ?? "")"}"#,
                headers: headers)
        }

        func token(_ user: String, headers: [String] = []) async throws -> String {
            let response = try await login(user, headers: headers)
            guard case .string(let token)? = response.json?["token"] else {
                throw HarnessError("login of \(user): \(response.status) \(response.body)")
            }
            return token
        }

        /// `count` claims of `code` with keys that are not its (`00000000000` + `suffix`, counting up); their statuses.
        func guessClaims(_ code: String, count: Int, token: String, suffix: String, headers: [String]) async throws
            -> [Int]
        {
            var statuses: [Int] = []
            for guess in 0..<count {
                let key = String(format: "%011d", guess) + suffix
                statuses.append(
                    try await send(
                        "POST", "/api/v1/outlets", token: token,
                        body: #"{"code":"\#(code)","claim_key":"\#(key)","name":"G"}"#, headers: headers
                    ).status)
            }
            return statuses
        }

        func metric(_ line: String) -> Bool {
            HTTPProbe.get(port: metricsPort, path: "/metrics")?.body.contains(line) == true
        }

        func outletd(_ arguments: [String]) throws -> String {
            try TestStack.run(
                [try OutletdProcess.executable()] + arguments,
                environment: ["OUTLETD_DATABASE_URL": url, "OUTLETD_CONFIG": ""])
        }
    }

    static func withDaemon<T>(environment: [String: String] = [:], _ body: (Daemon) async throws -> T) async throws
        -> T
    {
        let url = try Harness.migratedDatabase()
        let configuration = try Harness.configuration(databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let store = OwnerStore(connection: connection)
        for (name, password) in Daemon.passwords {
            try store.addUser(name: name, passwordHash: PasswordHasher.hash(password))
        }
        try DeviceStore(connection: connection).addMany(codes: ["kit-1", "kit-2", "kit-3"])
        let (appPort, metricsPort) = (try freePort(), try freePort())
        let process = try OutletdProcess.start(
            configuration,
            extraEnvironment: [
                "OUTLETD_APP_LISTEN": "127.0.0.1:\(appPort)", "OUTLETD_HTTP_LISTEN": "127.0.0.1:\(metricsPort)",
            ].merging(environment) { $1 })
        let daemon = Daemon(url: url, appPort: appPort, metricsPort: metricsPort, process: process)
        do {
            try await Harness.waitUntil(timeout: 30, "the app listening") {
                HTTPProbe.get(port: appPort, path: "/")?.status == 200
            }
            let result = try await body(daemon)
            process.signal(SIGTERM)
            #expect(try await process.waitForExit(timeout: 30) == 0)
            #expect(!process.output.contains("app request failed"), "a request failed inside: \(process.output)")
            return result
        } catch {
            process.signal(SIGKILL)
            _ = try? await process.waitForExit(timeout: 10)
            throw error
        }
    }

    // MARK: Claims

    @Test func claimingNeedsTheKeyOnTheLabelAndEveryFailureReadsTheSame() async throws {
        try await Self.withDaemon { daemon in
            let ana = try await daemon.token("ana")
            let bob = try await daemon.token("bob")
            let key = try daemon.outletd(["device", "claim-key", "kit-1"]).trimmingCharacters(in: .newlines)
            #expect(
                key.range(
                    of: #"^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$"#,
                    options: .regularExpression) != nil, "\(key)")
            let json = try daemon.outletd(["device", "claim-key", "kit-1", "--format", "json"])
            #expect(json.contains(#""claim_key":"\#(key)""#) && json.contains(#""code":"kit-1""#), "\(json)")

            // No key: 400 naming the field. A key that cannot be one: 400.
            let missing = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-1","name":"Fridge"}"#)
            #expect(missing.status == 400)
            #expect(missing.body.contains("claim_key: required"), "\(missing.body)")
            let malformed = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-1","claim_key":"UUUU","name":"F"}"#)
            #expect(malformed.status == 400 && malformed.body.contains("claim_key:"), "\(malformed.body)")

            // Unknown code, wrong key, someone else's outlet: the same 404.
            let wrongKey = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana,
                body: #"{"code":"kit-1","claim_key":"0000-0000-0000","name":"Fridge"}"#)
            let unknown = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-9","claim_key":"\#(key)","name":"F"}"#)
            // Typed as people type: lower case, no dashes, O for 0 and L for 1 read alike.
            let typed = key.lowercased().replacingOccurrences(of: "-", with: "")
            let claimed = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-1","claim_key":"\#(typed)","name":"F"}"#)
            #expect(claimed.status == 201, "\(claimed.body)")
            let taken = try await daemon.send(
                "POST", "/api/v1/outlets", token: bob, body: #"{"code":"kit-1","claim_key":"\#(key)","name":"Mine"}"#)
            let statuses: [Int] = [wrongKey.status, unknown.status, taken.status]
            #expect(statuses == [404, 404, 404])
            let shapes = [wrongKey, unknown, taken].map {
                $0.body.replacingOccurrences(of: "kit-1", with: "X").replacingOccurrences(of: "kit-9", with: "X")
            }
            #expect(Set(shapes).count == 1, "\(shapes)")

            // CODE:KEY in the code field, as a QR code on the label carries it.
            let key2 = try daemon.outletd(["device", "claim-key", "kit-2"]).trimmingCharacters(in: .newlines)
            let combined = try await daemon.send(
                "POST", "/api/v1/outlets", token: bob, body: #"{"code":"kit-2:\#(key2)","name":"Lamp"}"#)
            #expect(combined.status == 201, "\(combined.body)")

            // A rotated key: the label's old key claims nothing any more.
            let key3 = try daemon.outletd(["device", "claim-key", "kit-3"]).trimmingCharacters(in: .newlines)
            let rotated = try daemon.outletd(["device", "claim-key", "kit-3", "--rotate"])
                .trimmingCharacters(in: .newlines)
            #expect(rotated != key3)
            let old = try await daemon.send(
                "POST", "/api/v1/outlets", token: bob, body: #"{"code":"kit-3","claim_key":"\#(key3)","name":"L"}"#)
            #expect(old.status == 404)
            // device add and approve print the key for the label.
            let added = try daemon.outletd(["device", "add", "kit-4"])
            let printed = try daemon.outletd(["device", "claim-key", "kit-4"]).trimmingCharacters(in: .newlines)
            #expect(added.contains("claim key: \(printed)"), "\(added)")
            try await Harness.waitUntil(timeout: 10, "the claim counters in /metrics") {
                daemon.metric(#"outletd_app_claims_total{result="claimed"} 2"#)
                    && daemon.metric(#"outletd_app_claims_total{result="not_found"} 4"#)
            }
        }
    }

    @Test func withoutTheKeyRequirementTheCodeAloneClaims() async throws {
        try await Self.withDaemon(environment: ["OUTLETD_APP_CLAIM_REQUIRES_KEY": "false"]) { daemon in
            let ana = try await daemon.token("ana")
            let response = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-1","name":"Fridge"}"#)
            #expect(response.status == 201)
            // A key given is still checked.
            let wrong = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana,
                body: #"{"code":"kit-2","claim_key":"0000-0000-0000","name":"L"}"#)
            #expect(wrong.status == 404)
        }
    }

    @Test func guessingClaimsMeetsTooManyRequestsPerOwnerAndPerAddress() async throws {
        try await Self.withDaemon(environment: ["OUTLETD_APP_TRUSTED_PROXIES": "127.0.0.1"]) { daemon in
            let ana = try await daemon.token("ana")
            var statuses: [Int] = []
            var retryAfter: String?
            for guess in 0..<40 {
                let response = try await daemon.send(
                    "POST", "/api/v1/outlets", token: ana,
                    body: #"{"code":"kit-1","claim_key":"\#(String(format: "%012d", guess))","name":"G"}"#)
                statuses.append(response.status)
                if response.status == 429 {
                    retryAfter = response.headers.split(separator: "\r\n")
                        .first { $0.lowercased().hasPrefix("retry-after:") }.map(String.init)
                }
            }
            // A few typos pass; a run of guesses is stopped long before 100, and stays stopped.
            #expect(statuses.prefix(10).allSatisfy { $0 == 404 }, "\(statuses)")
            #expect(statuses.dropFirst(10).allSatisfy { $0 == 429 }, "\(statuses)")
            let seconds = Int(retryAfter?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "")
            #expect(seconds.map { (1...900).contains($0) } == true, "\(retryAfter ?? "no Retry-After")")
            // Even the right key waits now: the limit is on the owner, not on the guess.
            let key = try daemon.outletd(["device", "claim-key", "kit-1"]).trimmingCharacters(in: .newlines)
            let right = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: #"{"code":"kit-1","claim_key":"\#(key)","name":"F"}"#)
            #expect(right.status == 429)

            // Another owner, from elsewhere, has a budget of their own.
            let bob = try await daemon.token("bob", headers: ["X-Forwarded-For: 198.51.100.7"])
            let bobs = try await daemon.guessClaims(
                "kit-2", count: 10, token: bob, suffix: "X", headers: ["X-Forwarded-For: 198.51.100.7"])
            #expect(bobs.allSatisfy { $0 == 404 }, "bob's own budget: \(bobs)")
            // Owners at one address share a budget of 30: after bob's 10, cid's 10 and dan's 10 the address is
            // stopped, though dan's own budget is not spent.
            let connection = try PostgresConnection(connectionString: daemon.url)
            defer { connection.close() }
            for name in ["cid", "dan"] {
                try OwnerStore(connection: connection).addUser(
                    name: name, passwordHash: PasswordHasher.hash("\(name)-password-3"))
            }
            var shared: [Int] = []
            for name in ["cid", "dan"] {
                let login = try await daemon.login(
                    name, password: "\(name)-password-3", headers: ["X-Forwarded-For: 198.51.100.7"])
                guard case .string(let token)? = login.json?["token"] else { throw HarnessError(login.body) }
                shared += try await daemon.guessClaims(
                    "kit-3", count: name == "cid" ? 10 : 15, token: token, suffix: "Y",
                    headers: ["X-Forwarded-For: 198.51.100.7"])
            }
            #expect(shared == Array(repeating: 404, count: 20) + Array(repeating: 429, count: 5), "\(shared)")
            try await Harness.waitUntil(timeout: 10, "the rate-limited claims in /metrics") {
                daemon.metric(#"outletd_app_claims_total{result="rate_limited"} 36"#)
            }
        }
    }

    // MARK: Logins

    @Test func aStrangersFailedLoginsCannotLockTheOwnerOutFromElsewhere() async throws {
        try await Self.withDaemon(environment: ["OUTLETD_APP_TRUSTED_PROXIES": "127.0.0.1/32, ::1"]) { daemon in
            let stranger = ["X-Forwarded-For: 203.0.113.9"]
            var statuses: [Int] = []
            for _ in 0..<8 {
                statuses.append(try await daemon.login("ana", password: "guess", headers: stranger).status)
            }
            #expect(statuses == [401, 401, 401, 401, 401, 429, 429, 429], "\(statuses)")
            // The owner, from home, is not locked out by it; a spoofed header left of the proxy's does not help.
            let home = try await daemon.login("ana", headers: ["X-Forwarded-For: 203.0.113.9, 192.0.2.44"])
            #expect(home.status == 200, "\(home.body)")
            let spoofed = try await daemon.login("ana", password: "guess", headers: ["X-Forwarded-For: 203.0.113.9"])
            #expect(spoofed.status == 429)
            // Refused attempts are not counted, so hammering does not extend the lock.
            #expect(
                try Harness.count(
                    daemon.url, "SELECT count(*) FROM app_login_failures WHERE address = '203.0.113.9'") == 5)
        }
        // Without a trusted proxy the header is ignored: every one of these is the loopback peer.
        try await Self.withDaemon { daemon in
            var statuses: [Int] = []
            for index in 0..<6 {
                statuses.append(
                    try await daemon.login("ana", password: "guess", headers: ["X-Forwarded-For: 10.0.0.\(index)"])
                        .status)
            }
            #expect(statuses.last == 429, "X-Forwarded-For must be ignored without trusted proxies: \(statuses)")
        }
    }

    /// A stranger floods failed logins from many addresses (behind a trusted proxy, as a botnet would look) so
    /// that bcrypt never rests, while an owner's page polls its outlets: the owner's requests never wait for a
    /// password check (their median stays under the time of one check on this machine, their p99 under the five a
    /// full password queue holds), and logins past what the password threads hold are answered at once. Bounds in
    /// password checks, not milliseconds: a slower or busier machine slows both alike.
    @Test func aFloodOfFailedLoginsDoesNotSlowOwnersDown() async throws {
        try await Self.withDaemon(environment: ["OUTLETD_APP_TRUSTED_PROXIES": "127.0.0.1"]) { daemon in
            let ana = try await daemon.token("ana", headers: ["X-Forwarded-For: 192.0.2.1"])
            _ = try await daemon.send("GET", "/api/v1/outlets", token: ana)
            // One password check (bcrypt at the app's cost) on this machine, now.
            let hash = try Harness.scalar(daemon.url, "SELECT password_hash FROM app_users WHERE name = 'ana'")
            let checkStarted = ContinuousClock.now
            _ = PasswordHasher.verify("guess", hash: hash)
            let checkMilliseconds = (ContinuousClock.now - checkStarted).seconds * 1_000
            let stop = Locked(false)
            let flood = Task {
                try await withThrowingTaskGroup(of: [Int].self) { group in
                    for worker in 0..<6 {
                        group.addTask {
                            var statuses: [Int] = []
                            var index = 0
                            while !stop.value {
                                index += 1
                                // A new name and address each time: no limit stops it, every login costs bcrypt.
                                let address = "198.18.\(worker).\(index % 250)"
                                statuses.append(
                                    try await daemon.login(
                                        "guess-\(worker)-\(index)", password: "guess",
                                        headers: ["X-Forwarded-For: \(address)"]
                                    ).status)
                            }
                            return statuses
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0 += $1 }
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            var latencies: [Double] = []
            for _ in 0..<300 {
                let started = ContinuousClock.now
                let response = try await daemon.send(
                    "GET", "/api/v1/outlets", token: ana, headers: ["X-Forwarded-For: 192.0.2.1"])
                latencies.append((ContinuousClock.now - started).seconds * 1_000)
                #expect(response.status == 200)
                try await Task.sleep(for: .milliseconds(20))
            }
            stop.value = true
            let strangers = try await flood.value
            latencies.sort()
            let p50 = latencies[latencies.count / 2]
            let p99 = latencies[Int(Double(latencies.count) * 0.99) - 1]
            print(
                "owner's GET /api/v1/outlets during the flood: p50 \(p50) ms, p99 \(p99) ms; stranger: "
                    + "\(strangers.count) logins, \(strangers.filter { $0 == 503 }.count) answered 503 at once; "
                    + "one password check: \(checkMilliseconds) ms")
            #expect(
                p50 < checkMilliseconds && p99 < 5 * checkMilliseconds,
                "p50 \(p50) ms, p99 \(p99) ms, one password check \(checkMilliseconds) ms")
            #expect(strangers.allSatisfy { [401, 429, 503].contains($0) }, "\(Set(strangers))")
            let busy = strangers.filter { $0 == 503 }.count
            #expect(busy > 0, "the password threads never filled: \(strangers.count) logins")
        }
    }

    @Test func passwordsCountEveryByteAndRefuseNUL() async throws {
        try await Self.withDaemon { daemon in
            let seventyTwo = String(repeating: "p", count: 72)
            let created = try TestStack.run(
                [
                    "/bin/sh", "-c",
                    "printf '%s\\n' '\(seventyTwo)' | '\(try OutletdProcess.executable())' user add long --password-stdin",
                ],
                environment: ["OUTLETD_DATABASE_URL": daemon.url, "OUTLETD_CONFIG": ""])
            #expect(created.contains("added user long"))
            #expect(try await daemon.login("long", password: seventyTwo).status == 200)
            // bcrypt would read only the first 72 bytes: a longer password never logs in.
            #expect(try await daemon.login("long", password: seventyTwo + "x").status == 401)
            #expect(try await daemon.login("ana", password: #"ana-password-1\u0000tail"#).status == 401)
            for (password, message) in [
                ("\(seventyTwo)p", "at most 72 bytes"), ("nul\\000in-the-middle", "NUL"), ("short", "at least 8"),
            ] {
                #expect(throws: (any Error).self, "\(message)") {
                    try TestStack.run(
                        [
                            "/bin/sh", "-c",
                            "printf '\(password)\\n' | '\(try OutletdProcess.executable())' user add x\(message.count) --password-stdin",
                        ],
                        environment: ["OUTLETD_DATABASE_URL": daemon.url, "OUTLETD_CONFIG": ""])
                }
            }
            #expect(try Harness.count(daemon.url, "SELECT count(*) FROM app_users WHERE name LIKE 'x%'") == 0)
        }
    }

    // MARK: Odd bytes

    @Test func oddBytesAreRefusedNamingTheFieldNeverA500() async throws {
        try await Self.withDaemon { daemon in
            let ana = try await daemon.token("ana")
            let key = try daemon.outletd(["device", "claim-key", "kit-1"]).trimmingCharacters(in: .newlines)
            let claim = { (name: String, description: String) in
                #"{"code":"kit-1","claim_key":"\#(key)","name":"\#(name)","description":"\#(description)"}"#
            }
            let combining = "e" + String(repeating: "\u{301}", count: 150)
            let cases: [(String, String, String?, String)] = [
                ("POST", "/api/v1/login", #"{"username":"ana\u0000","password":"x"}"#, "username: must not contain"),
                ("POST", "/api/v1/outlets", claim(#"Fri\u0000dge"#, ""), "name: must not contain"),
                ("POST", "/api/v1/outlets", claim(#"\u001b[2J\u001b]0;pwned\u0007"#, ""), "name: must not contain"),
                ("POST", "/api/v1/outlets", claim("Fridge", #"a\u009bb"#), "description: must not contain"),
                ("POST", "/api/v1/outlets", claim(#"tab\there"#, ""), "name: must not contain"),
                ("POST", "/api/v1/outlets", claim(combining, ""), "name: at most 100 characters"),
                ("POST", "/api/v1/outlets", claim("F", String(repeating: "😀", count: 501)), "description: at most"),
                ("PATCH", "/api/v1/outlets/kit-1", #"{"description":"\u007f"}"#, "description: must not contain"),
                (
                    "GET", "/api/v1/outlets/kit-1?from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z", nil,
                    "from: must fall"
                ),
                (
                    "GET", "/api/v1/outlets/kit-1?from=1969-12-31T00:00:00Z&to=1970-01-02T00:00:00Z", nil,
                    "from: must fall"
                ),
                ("GET", "/api/v1/outlets/kit-1/hourly?date=0001-01-01", nil, "date: must fall"),
                ("GET", "/api/v1/outlets/kit-1/hourly?date=10000-01-01", nil, "date: expected"),
            ]
            // Tab and newline are allowed in a description; the outlet is claimed with one.
            let good = try await daemon.send(
                "POST", "/api/v1/outlets", token: ana, body: claim("Fridge", #"two\tcolumns\nand lines"#))
            #expect(good.status == 201, "\(good.body)")
            for (method, path, body, message) in cases {
                let response = try await daemon.send(method, path, token: ana, body: body)
                #expect(response.status == 400, "\(method) \(path): \(response.status) \(response.body)")
                guard case .string(let text)? = response.json?["error"]?["message"] else {
                    Issue.record("no message: \(response.body)")
                    continue
                }
                #expect(text.hasPrefix(message), "\(method) \(path): \(text)")
            }
            // Bodies not sent as JSON: 415. The bearer scheme in any case. nosniff on every answer.
            for contentType in [nil, "text/plain", "application/x-www-form-urlencoded"] as [String?] {
                let response = try await daemon.send(
                    "PATCH", "/api/v1/outlets/kit-1", token: ana, body: #"{"name":"X"}"#, contentType: contentType)
                #expect(response.status == 415, "\(contentType ?? "none"): \(response.status)")
            }
            #expect(
                try await daemon.send(
                    "PATCH", "/api/v1/outlets/kit-1", token: ana, body: #"{"name":"Y"}"#,
                    contentType: "Application/JSON; charset=utf-8"
                ).status == 200)
            let lower = try await daemon.send("GET", "/api/v1/outlets", headers: ["Authorization: bearer \(ana)"])
            #expect(lower.status == 200)
            let answers = [
                try await daemon.send("GET", "/"), try await daemon.send("GET", "/app.js"), lower,
                try await daemon.send("GET", "/api/v1/outlets"), try await daemon.send("GET", "/nowhere"),
                try await daemon.send("POST", "/api/v1/login", body: "{", contentType: "text/plain"),
                try await daemon.login("ana", password: "wrong"),
            ]
            for answer in answers {
                #expect(answer.headers.lowercased().contains("x-content-type-options: nosniff"), "\(answer.headers)")
            }
            #expect(try daemon.app.sql("SELECT name FROM devices WHERE code = 'kit-1'") == "Y")
        }
    }

    /// Text stored before these checks, or by SQL, still cannot act on an operator's terminal: the CLI prints
    /// control characters escaped, in tables and JSON alike.
    @Test func storedControlCharactersReachTheTerminalInert() async throws {
        try await Self.withDaemon { daemon in
            _ = try daemon.app.sql(
                #"UPDATE devices SET name = E'Fridge\u001b[2J\u001b]0;pwned\u0007\nkit-9  Forged  enabled', description = E'd\u009b31m' WHERE code = 'kit-1' RETURNING 1"#
            )
            for arguments in [
                ["device", "list"], ["device", "list", "--format", "json"], ["device", "show", "kit-1"], ["stats"],
                ["stats", "--format", "json"], ["stats", "kit-1"], ["stats", "kit-1", "--format", "json"],
            ] {
                let output = try daemon.outletd(arguments)
                let controls = output.unicodeScalars.filter { OwnerText.isControl($0) && $0 != "\n" }
                #expect(controls.isEmpty, "\(arguments): \(controls.map(\.value))")
                #expect(!output.contains("\nkit-9  Forged"), "\(arguments): a forged row")
                #expect(output.contains("x1b") || output.contains("u001b"), "\(arguments): the name is not shown")
            }
        }
    }

    // MARK: Commands

    @Test func aCommandBelongsToWhoAskedForItAfterTheOutletChangesHands() async throws {
        try await Self.withDaemon { daemon in
            let ana = try await daemon.token("ana")
            let bob = try await daemon.token("bob")
            #expect(
                try await daemon.send(
                    "POST", "/api/v1/outlets", token: ana, body: try daemon.app.claimBody("kit-1", "F")
                ).status == 201)
            let switched = try await daemon.send(
                "PUT", "/api/v1/outlets/kit-1/state", token: ana, body: #"{"state":"off"}"#)
            guard case .number(let id)? = switched.json?["command_id"] else { throw HarnessError(switched.body) }
            #expect(try await daemon.send("DELETE", "/api/v1/outlets/kit-1", token: ana).status == 204)
            #expect(
                try await daemon.send(
                    "POST", "/api/v1/outlets", token: bob, body: try daemon.app.claimBody("kit-1", "Mine")
                ).status == 201)
            let asBob = try await daemon.send("GET", "/api/v1/commands/\(Int64(id))", token: bob)
            #expect(asBob.status == 404)
            #expect(!asBob.body.contains("off"))
            #expect(try await daemon.send("GET", "/api/v1/commands/\(Int64(id))", token: ana).status == 200)
            // An operator's command on bob's outlet is not bob's to read either.
            _ = try daemon.outletd(["switch", "kit-1", "on"])
            let cli = try daemon.app.sql("SELECT max(id) FROM commands WHERE source = 'cli'")
            #expect(try await daemon.send("GET", "/api/v1/commands/\(cli)", token: bob).status == 404)
        }
    }

    // MARK: The listener

    /// outletd's open descriptors (its process's `/proc/PID/fd`).
    static func descriptors(_ daemon: Daemon) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.child.pid)/fd").count) ?? -1
    }

    /// 50 connections that send nothing, 50 that send half a request head and 50 that finish a request and then
    /// keep the connection idle: with a head timeout of 1 s and an idle timeout of 2 s every one is closed by
    /// outletd, and its descriptors go back to what they were; an owner's request is answered all along.
    @Test func idleAndHalfSentConnectionsAreClosed() async throws {
        try await Self.withDaemon(environment: [
            "OUTLETD_APP_HEADER_TIMEOUT_SECONDS": "1", "OUTLETD_APP_IDLE_TIMEOUT_SECONDS": "2",
        ]) { daemon in
            let before = Self.descriptors(daemon)
            var silent: [RawConnection] = []
            var halfSent: [RawConnection] = []
            var idle: [RawConnection] = []
            defer { for connection in silent + halfSent + idle { connection.close() } }
            for _ in 0..<50 {
                silent.append(try await RawConnection.open(port: daemon.appPort))
                let half = try await RawConnection.open(port: daemon.appPort)
                try half.send("GET /api/v1/outlets HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: appl")
                halfSent.append(half)
                let kept = try await RawConnection.open(port: daemon.appPort)
                try kept.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                try await kept.readHead()
                #expect(kept.status == 200)
                idle.append(kept)
            }
            let opened = Self.descriptors(daemon)
            let started = ContinuousClock.now
            let all = silent + halfSent + idle
            while all.contains(where: { $0.isOpen }), ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(200))
            }
            let waited = (ContinuousClock.now - started).seconds
            let open = (
                silent.filter { $0.isOpen }.count, halfSent.filter { $0.isOpen }.count, idle.filter { $0.isOpen }.count
            )
            let closed = ContinuousClock.now
            while Self.descriptors(daemon) > before + 5, ContinuousClock.now - closed < .seconds(10) {
                try await Task.sleep(for: .milliseconds(200))
            }
            let after = Self.descriptors(daemon)
            print(
                "listener: descriptors \(before) → \(opened) with 150 connections → \(after); "
                    + "open after \(waited) s: \(open.0) silent, \(open.1) half-sent, \(open.2) idle")
            #expect(open == (0, 0, 0), "still open after \(waited) s: \(open)")
            #expect(after <= before + 5, "outletd's descriptors: \(before) before, \(after) after")
            let ana = try await daemon.token("ana")
            #expect(try await daemon.send("GET", "/api/v1/outlets", token: ana).status == 200)
        }
    }
    /// With `app.max_connections` 20 and 20 connections open, the 21st is answered at once, before it sends
    /// anything: 503, `Retry-After`, the reason, `Connection: close`, and then closed. Once one of the 20 has
    /// closed, a request is served again.
    @Test func connectionsPastTheLimitAreRefusedWithAReason() async throws {
        // A head may take 120 s here, so that the 20 held connections, which send nothing, stay however slow the
        // machine.
        try await Self.withDaemon(environment: [
            "OUTLETD_APP_MAX_CONNECTIONS": "20", "OUTLETD_APP_HEADER_TIMEOUT_SECONDS": "120",
        ]) { daemon in
            // The start-up probe's connection closed: wait until outletd has counted it out.
            try await Harness.waitUntil(timeout: 10, "no connection open") {
                daemon.metric("\noutletd_app_connections 0")
            }
            var held: [RawConnection] = []
            defer { for connection in held { connection.close() } }
            for _ in 0..<20 { held.append(try await RawConnection.open(port: daemon.appPort)) }
            // outletd accepts on two event loops: until it has counted all 20, the next could be admitted in place
            // of one of them (a busy machine showed it).
            try await Harness.waitUntil(timeout: 30, "20 connections counted") {
                daemon.metric("\noutletd_app_connections 20")
            }
            let refused = try await RawConnection.open(port: daemon.appPort)
            defer { refused.close() }
            let answer = try await refused.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
            #expect(answer.lowercased().contains("retry-after: 5"), "\(answer)")
            #expect(answer.lowercased().contains("connection: close"), "\(answer)")
            #expect(answer.contains("app.max_connections: 20"), "\(answer)")
            #expect(!refused.isOpen)
            #expect(held.allSatisfy { $0.isOpen })
            held.removeLast().close()
            try await Harness.waitUntil(timeout: 10, "a request served again") {
                HTTPProbe.get(port: daemon.appPort, path: "/")?.status == 200
            }
            #expect(daemon.metric("outletd_app_connections_closed_total{reason=\"refused\"}"))
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
