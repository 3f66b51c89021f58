import MQTT
import Testing

@Suite("MQTTConfiguration URL parsing")
struct MQTTConfigurationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var url: String
        var host: String
        var port: Int
        var username: String?
        var password: String?
        var testDescription: String { url }
    }

    @Test(arguments: [
        Case(url: "mqtt://127.0.0.1:1883", host: "127.0.0.1", port: 1883),
        Case(url: "mqtt://broker.example.com", host: "broker.example.com", port: 1883),
        Case(url: "mqtt://broker:2000/", host: "broker", port: 2000),
        Case(url: "MQTT://Broker:1", host: "Broker", port: 1),
        Case(url: "mqtt://alice@broker", host: "broker", port: 1883, username: "alice"),
        Case(url: "mqtt://alice:secret@broker:1884", host: "broker", port: 1884, username: "alice", password: "secret"),
        Case(
            url: "mqtt://al%40ice:p%3Aa%2Fss%25w%20rd@broker", host: "broker", port: 1883, username: "al@ice",
            password: "p:a/ss%w rd"),
        Case(url: "mqtt://bob:p@ss@broker", host: "broker", port: 1883, username: "bob", password: "p@ss"),
        Case(url: "mqtt://bob:@broker", host: "broker", port: 1883, username: "bob", password: ""),
        Case(url: "mqtt://caf%C3%A9:x@h", host: "h", port: 1883, username: "café", password: "x"),
        Case(url: "mqtt://[::1]:1883", host: "::1", port: 1883),
        Case(url: "mqtt://u:p@[fe80::1]", host: "fe80::1", port: 1883, username: "u", password: "p"),
    ])
    func parsesValidURLs(_ testCase: Case) throws {
        let configuration = try MQTTConfiguration(url: testCase.url, clientID: "id")
        #expect(configuration.host == testCase.host)
        #expect(configuration.port == testCase.port)
        #expect(configuration.username == testCase.username)
        #expect(configuration.password == testCase.password)
        #expect(configuration.clientID == "id")
        #expect(configuration.cleanStart == false)
        #expect(configuration.sessionExpiryInterval == 86_400)
    }

    @Test(arguments: [
        "http://broker:1883",
        "broker:1883",
        "mqtt://",
        "mqtt://:1883",
        "mqtt://user:pass@",
        "mqtt://user:pass@:1883",
        "mqtt://broker:0",
        "mqtt://broker:65536",
        "mqtt://broker:12ab",
        "mqtt://broker:",
        "mqtt://broker/topic",
        "mqtt://broker?x=1",
        "mqtt://u:s3cret%zz@broker",
        "mqtt://u:s3cret%2@broker",
        "mqtt://u:s3cret@broker:99999",
        "mqtt://::1:1883",
        "mqtt://[::1",
    ])
    func rejectsInvalidURLs(_ url: String) {
        #expect {
            _ = try MQTTConfiguration(url: url, clientID: "id")
        } throws: { error in
            guard let error = error as? MQTTError else { return false }
            return error.code == .invalidURL && !error.message.contains("s3cret") && !error.message.contains(url)
        }
    }

    @Test func mqttsTurnsOnTLSWithItsDefaultPort() throws {
        let secure = try MQTTConfiguration(url: "mqtts://u:p@broker", clientID: "id")
        #expect(secure.port == 8883)
        #expect(secure.tls == MQTTConfiguration.TLS())
        #expect(secure.redactedURL == "mqtts://u:***@broker:8883")
        #expect(try MQTTConfiguration(url: "mqtts://broker:9000", clientID: "id").port == 9000)
        #expect(try MQTTConfiguration(url: "mqtt://broker", clientID: "id").tls == nil)
    }

    @Test func redactedURLHidesThePassword() throws {
        let configuration = try MQTTConfiguration(url: "mqtt://al%40ice:s3cr%3At@broker:1884", clientID: "id")
        #expect(configuration.redactedURL == "mqtt://al%40ice:***@broker:1884")
        #expect(!configuration.redactedURL.contains("s3cr"))
        #expect(try MQTTConfiguration(url: "mqtt://broker", clientID: "x").redactedURL == "mqtt://broker:1883")
        #expect(try MQTTConfiguration(url: "mqtt://bob@[::1]:1", clientID: "x").redactedURL == "mqtt://bob@[::1]:1")
    }

    @Test func errorDescriptionsNeverContainThePassword() {
        do {
            _ = try MQTTConfiguration(url: "mqtt://user:hunter2@broker:99999", clientID: "id")
            Issue.record("expected an error")
        } catch {
            #expect(!"\(error)".contains("hunter2"))
            #expect(!error.message.contains("hunter2"))
        }
    }
}
