import Foundation
import OwnerApp
import Postgres
import ServiceTestSupport
import Storage
import Telemetry
import TestSupport
import Testing

/// The owners' app as the daemon runs it (the app's own tests are in OwnerAppTests).
@Suite(.serialized) struct DaemonAppTests {
    /// The app as the daemon runs it (a Service of its group, on `app.listen`), and a switch made in it carried to a
    /// real outlet over MQTT and confirmed by its state report.
    @Test func theDaemonServesTheAppAndTheOutletConfirmsASwitchMadeInIt() async throws {
        let url = try Harness.migratedDatabase()
        var configuration = try Harness.configuration(databaseURL: url)
        let port = try freePort()
        configuration.app.listen = "127.0.0.1:\(port)"
        try Harness.register(["kit-1"], databaseURL: url)
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        try OwnerStore(connection: connection).addUser(name: "ana", passwordHash: PasswordHasher.hash("ana-password-1"))
        let outlet = try SimulatedOutlet(code: "kit-1", prefix: configuration.mqtt.topicPrefix)
        defer { outlet.stop() }
        try await outlet.publish("state", "on")
        try await Harness.withService(configuration) { _ in
            let app = AppClient(url: url, port: port)
            try await Harness.waitUntil(timeout: 20, "the app listening") {
                HTTPProbe.get(port: port, path: "/")?.status == 200
            }
            let token = try await app.login("ana")
            #expect(
                try await app.send("POST", "/api/v1/outlets", token: token, body: try app.claimBody("kit-1", "Fridge"))
                    .status == 201)
            let request = try await app.send(
                "PUT", "/api/v1/outlets/kit-1/state", token: token, body: #"{"state":"off"}"#)
            #expect(request.status == 202)
            guard case .number(let id)? = request.json?["command_id"] else { throw HarnessError(request.body) }
            var status = ""
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline {
                let command = try await app.send("GET", "/api/v1/commands/\(Int64(id))", token: token)
                if case .string(let text)? = command.json?["status"] { status = text }
                if CommandStatus(rawValue: status)?.isFinal == true { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(status == "confirmed")
            #expect(outlet.commands.value.map(\.state) == [.off])
            let detail = try await app.send("GET", "/api/v1/outlets/kit-1", token: token)
            #expect(detail.json?["state"] == .string("off"))
        }
    }
}
