import Foundation
import TestSupport
import Testing

@testable import Config

@Suite struct ConfigurationTests {
    let loader = ConfigurationLoader()

    @Test func documentedExampleFileLoadsToTheDefaults() throws {
        let file = "\(TestStack.packageRoot)/config/outletd.yaml"
        let loaded = try loader.load(file: file, environment: [:])
        #expect(loaded == OutletdConfiguration())
    }

    @Test func everyKeyIsDocumentedInTheExampleFile() throws {
        let text = try String(contentsOfFile: "\(TestStack.packageRoot)/config/outletd.yaml", encoding: .utf8)
        for key in ConfigurationKey.all {
            let leaf = key.path.split(separator: ".").last.map(String.init) ?? key.path
            #expect(text.contains("\(leaf):"), "config/outletd.yaml does not document \(key.path)")
        }
    }

    @Test func theAppListensOnlyWhereToldAndApartFromMetrics() throws {
        let loader = ConfigurationLoader()
        #expect(try loader.load(file: nil, environment: [:]).app.listen == "")
        let on = try loader.load(file: nil, environment: ["OUTLETD_APP_LISTEN": "127.0.0.1:8080"])
        #expect(on.app.listen == "127.0.0.1:8080")
        #expect(on.http.listen == "127.0.0.1:9464")
        for (listen, why) in [("8080", "must be host:port"), ("127.0.0.1:9464", "must differ from http.listen")] {
            do {
                _ = try loader.load(file: nil, environment: ["OUTLETD_APP_LISTEN": listen])
                Issue.record("app.listen \(listen) accepted")
            } catch {
                #expect(error.problems.contains { $0.key == "app.listen" && $0.message.contains(why) }, "\(error)")
            }
        }
    }

    @Test func environmentOverridesFileAndDefaults() throws {
        let yaml = """
            database:
              url: host=file dbname=x
            ingest:
              batch_max_rows: 10
            """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("outletd-\(UUID()).yaml").path
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let loaded = try loader.load(
            file: file,
            environment: [
                "OUTLETD_DATABASE_URL": "postgresql://u:p@db/outletd",
                "OUTLETD_MQTT_URL": "mqtt://broker:1884",
                "OUTLETD_INGEST_BATCH_MAX_DELAY_MS": "250",
                "OUTLETD_VALIDATION_VOLTAGE_MAX": "260.5",
                "OUTLETD_DATABASE_MIGRATE_ON_START": "false",
                "UNRELATED": "x",
            ])
        #expect(loaded.database.url == "postgresql://u:p@db/outletd")
        #expect(loaded.mqtt.url == "mqtt://broker:1884")
        #expect(loaded.ingest.batchMaxRows == 10)
        #expect(loaded.ingest.batchMaxDelayMilliseconds == 250)
        #expect(loaded.validation.voltageMaxVolts == 260.5)
        #expect(loaded.validation.limits.voltageVolts == 0...260.5)
        #expect(loaded.database.migrateOnStart == false)
    }

    @Test func environmentVariableNamesFollowTheKeyPath() {
        let names = Set(ConfigurationKey.all.map(\.environmentVariable))
        #expect(names.contains("OUTLETD_DATABASE_URL"))
        #expect(names.contains("OUTLETD_MQTT_URL"))
        #expect(names.contains("OUTLETD_MQTT_TOPIC_PREFIX"))
        #expect(names.count == ConfigurationKey.all.count)
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        var yaml: String
        var environment: [String: String] = [:]
        var expected: String
        var testDescription: String { expected }
    }

    @Test(arguments: [
        BadCase(yaml: "ingest:\n  batch_size: 3\n", expected: ":2: ingest.batch_size: unknown key"),
        BadCase(yaml: "nonsense: 1\n", expected: "nonsense: unknown key"),
        BadCase(
            yaml: "ingest:\n  batch_max_rows: lots\n",
            expected: "ingest.batch_max_rows: expected a whole number, got \"lots\""),
        BadCase(yaml: "ingest:\n  batch_max_rows: 0\n", expected: "ingest.batch_max_rows: 0 is out of range 1…1000000"),
        BadCase(
            yaml: "database:\n  migrate_on_start: maybe\n",
            expected: "database.migrate_on_start: expected true or false"),
        BadCase(yaml: "logging:\n  level: loud\n", expected: "logging.level: expected one of"),
        BadCase(
            yaml: "validation:\n  voltage_min: 300\n  voltage_max: 200\n",
            expected: "validation.voltage_min: must not exceed"),
        BadCase(yaml: "mqtt:\n  topic_prefix: a/+/b\n", expected: "mqtt.topic_prefix: must be topic levels"),
        BadCase(yaml: "mqtt: [1, 2]\n", expected: "mqtt: expected a single value, not a list"),
        BadCase(yaml: "a: [\n", expected: "not valid YAML"),
        BadCase(yaml: "mqtt:\n  url: http://broker\n", expected: "mqtt.url:"),
        BadCase(
            yaml: "", environment: ["OUTLETD_SPOOL_MAX_BYTES": "-5"],
            expected: "environment OUTLETD_SPOOL_MAX_BYTES: spool.max_bytes: -5 is out of range"),
        BadCase(yaml: "spool:\n  fsync: sometimes\n", expected: "spool.fsync: expected one of never, interval, always"),
        BadCase(
            yaml: "", environment: ["OUTLETD_DATABASE_DURABILITY": "synchronous"],
            expected: "database.durability: expected one of local, replicated, got \"synchronous\""),
        BadCase(
            yaml: "spool:\n  max_bytes: 1000000\n  segment_bytes: 1000000\n",
            expected: "spool.max_bytes: must be at least twice spool.segment_bytes"),
    ])
    func reportsEachProblemWithItsKey(_ bad: BadCase) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("outletd-\(UUID()).yaml").path
        try bad.yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            _ = try loader.load(file: file, environment: bad.environment)
            Issue.record("expected a failure containing \(bad.expected)")
        } catch {
            #expect(error.description.contains(bad.expected), "\(error.description)")
        }
    }

    @Test func durabilityIsLocalUnlessSetToReplicated() throws {
        #expect(try loader.load(file: nil, environment: [:]).database.durability == .local)
        let replicated = try loader.load(file: nil, environment: ["OUTLETD_DATABASE_DURABILITY": "Replicated"])
        #expect(replicated.database.durability == .replicated)
    }

    @Test func collectsEveryProblemNotJustTheFirst() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("outletd-\(UUID()).yaml").path
        try "ingest:\n  batch_max_rows: x\n  nope: 1\nlogging:\n  level: y\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            _ = try loader.load(file: file, environment: [:])
            Issue.record("expected a failure")
        } catch {
            #expect(error.problems.count == 3)
        }
    }

    @Test func effectiveValuesNeverShowPasswords() throws {
        var configuration = OutletdConfiguration()
        configuration.database.url = "postgresql://outletd:s3cret-db@db/outletd"
        configuration.mqtt.url = "mqtt://outletd:s3cret-mq@broker:1883"
        let printed = ConfigurationKey.all.map { "\($0.path) = \($0.value(in: configuration))" }.joined()
        #expect(!printed.contains("s3cret"))
        #expect(printed.contains("db/outletd"))
        #expect(printed.contains("broker"))
    }

    func temporaryFile(_ text: String) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("outletd-\(UUID())").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func secretsComeFromFilesAndSystemdCredentials() throws {
        let secretFile = try temporaryFile("postgresql://u:from-file@db/outletd\n")
        let yaml = try temporaryFile("database:\n  url_file: \(secretFile)\n")
        defer { for file in [secretFile, yaml] { try? FileManager.default.removeItem(atPath: file) } }
        #expect(try loader.load(file: yaml, environment: [:]).database.url == "postgresql://u:from-file@db/outletd")

        let mqttFile = try temporaryFile("mqtt://outletd:from-env-file@broker\n")
        defer { try? FileManager.default.removeItem(atPath: mqttFile) }
        #expect(
            try loader.load(file: nil, environment: ["OUTLETD_MQTT_URL_FILE": mqttFile]).mqtt.url
                == "mqtt://outletd:from-env-file@broker")

        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent("cred-\(UUID())").path
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: credentials) }
        try "host=credential dbname=outletd".write(
            toFile: "\(credentials)/database_url", atomically: true, encoding: .utf8)
        let fromCredential = try loader.load(file: yaml, environment: ["CREDENTIALS_DIRECTORY": credentials])
        #expect(fromCredential.database.url == "host=credential dbname=outletd")
        // An explicit environment variable still wins.
        let overridden = try loader.load(
            file: yaml, environment: ["CREDENTIALS_DIRECTORY": credentials, "OUTLETD_DATABASE_URL": "host=env"])
        #expect(overridden.database.url == "host=env")
    }

    @Test func unreadableSecretFileIsReportedWithItsKey() {
        do {
            _ = try loader.load(file: nil, environment: ["OUTLETD_DATABASE_URL_FILE": "/nonexistent/secret"])
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("database.url: cannot read /nonexistent/secret"), "\(error)")
        }
    }

    @Test func secretAndItsFileTogetherAreAProblem() throws {
        let file = try temporaryFile("host=x")
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            _ = try loader.load(
                file: nil, environment: ["OUTLETD_DATABASE_URL": "host=y", "OUTLETD_DATABASE_URL_FILE": file])
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("not both"))
        }
    }

    @Test func onlySecretKeysTakeFiles() throws {
        let yaml = try temporaryFile("ingest:\n  batch_max_rows_file: /etc/passwd\n")
        defer { try? FileManager.default.removeItem(atPath: yaml) }
        #expect(throws: ConfigurationLoader.Failure.self) { try loader.load(file: yaml, environment: [:]) }
    }

    @Test func missingFileIsReported() {
        do {
            _ = try loader.load(file: "/nonexistent/outletd.yaml", environment: [:])
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("/nonexistent/outletd.yaml: cannot read"))
        }
    }
}
