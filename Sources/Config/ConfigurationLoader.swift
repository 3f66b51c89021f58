import Foundation
import MQTT
import Postgres
import Yams

/// Builds an ``OutletdConfiguration`` from defaults, then a YAML file, then the environment.
///
/// Every problem is collected (not just the first) and reported with the key's path and where it
/// came from, e.g. `config/outletd.yaml:12: ingest.batch_max_rows: expected a whole number, got "lots"`.
public struct ConfigurationLoader: Sendable {
    /// One thing wrong with the configuration.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// Where: `file:line` or `environment OUTLETD_…`.
        public var source: String
        /// The dotted key path, or empty when the problem is not about one key.
        public var key: String
        public var message: String

        public var description: String {
            key.isEmpty ? "\(source): \(message)" : "\(source): \(key): \(message)"
        }
    }

    /// The configuration could not be loaded; `problems` says why.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var problems: [Problem]
        public var description: String {
            "invalid configuration:\n" + problems.map { "  \($0)" }.joined(separator: "\n")
        }
    }

    private let keys: [String: ConfigurationKey]

    public init(keys: [ConfigurationKey] = ConfigurationKey.all) {
        self.keys = Dictionary(keys.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Loads `file` (when given) and then applies every `OUTLETD_*` variable of `environment`
    /// that names a key.
    public func load(file: String?, environment: [String: String]) throws(Failure) -> OutletdConfiguration {
        var configuration = OutletdConfiguration()
        var problems: [Problem] = []
        if let file {
            do {
                let text = try String(contentsOfFile: file, encoding: .utf8)
                problems += apply(yaml: text, source: file, to: &configuration)
            } catch {
                problems.append(Problem(source: file, key: "", message: "cannot read: \(error.localizedDescription)"))
            }
        }
        for key in keys.values.sorted(by: { $0.path < $1.path }) {
            if key.isSecret, let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
                let file = "\(directory)/\(key.credentialName)"
                if FileManager.default.fileExists(atPath: file) {
                    apply(
                        key, fromFile: file, source: "credential \(key.credentialName)", to: &configuration,
                        problems: &problems)
                }
            }
            let variable = key.environmentVariable
            if key.isSecret, let file = environment[variable + "_FILE"] {
                if environment[variable] != nil {
                    problems.append(
                        Problem(
                            source: "environment", key: key.path,
                            message: "set \(variable) or \(variable)_FILE, not both"))
                }
                apply(
                    key, fromFile: file, source: "environment \(variable)_FILE", to: &configuration,
                    problems: &problems)
            }
            guard let text = environment[variable] else { continue }
            do {
                try key.apply(&configuration, text)
            } catch {
                problems.append(Problem(source: "environment \(variable)", key: key.path, message: error.message))
            }
        }
        problems += crossChecks(configuration)
        guard problems.isEmpty else { throw Failure(problems: problems) }
        // Several hosts (a primary and its standbys): connect to the one that takes writes.
        configuration.database.url = MultiHost.requiringPrimary(configuration.database.url)
        return configuration
    }

    /// Sets a secret key from the first line of a file (trailing newline and spaces removed).
    private func apply(
        _ key: ConfigurationKey, fromFile file: String, source: String, to configuration: inout OutletdConfiguration,
        problems: inout [Problem]
    ) {
        do {
            let text = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            try key.apply(&configuration, text)
        } catch let error as ConfigurationKeyError {
            problems.append(Problem(source: "\(source) (\(file))", key: key.path, message: error.message))
        } catch {
            problems.append(
                Problem(source: source, key: key.path, message: "cannot read \(file): \(error.localizedDescription)"))
        }
    }

    /// Applies a YAML document; returns the problems found.
    func apply(yaml: String, source: String, to configuration: inout OutletdConfiguration) -> [Problem] {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            return [Problem(source: source, key: "", message: "not valid YAML: \(error)")]
        }
        guard let root else { return [] }  // an empty file: defaults
        var problems: [Problem] = []
        walk(root, path: "", source: source, configuration: &configuration, problems: &problems)
        return problems
    }

    private func walk(
        _ node: Node, path: String, source: String, configuration: inout OutletdConfiguration,
        problems: inout [Problem]
    ) {
        let location = node.mark.map { "\(source):\($0.line)" } ?? source
        switch node {
        case .mapping(let mapping):
            for (keyNode, valueNode) in mapping {
                guard let name = keyNode.string else {
                    problems.append(Problem(source: location, key: path, message: "keys must be plain names"))
                    continue
                }
                let childPath = path.isEmpty ? name : "\(path).\(name)"
                walk(valueNode, path: childPath, source: source, configuration: &configuration, problems: &problems)
            }
        case .scalar(let scalar):
            if path.hasSuffix("_file"), let key = keys[String(path.dropLast(5))], key.isSecret {
                if !scalar.string.isEmpty {
                    apply(key, fromFile: scalar.string, source: location, to: &configuration, problems: &problems)
                }
                return
            }
            guard let key = keys[path] else {
                problems.append(Problem(source: location, key: path, message: unknownKeyMessage(path)))
                return
            }
            // `key:` with nothing after it, or `~`/`null`: keep the default.
            if scalar.string.isEmpty || scalar.string == "~" || scalar.string == "null" { return }
            do {
                try key.apply(&configuration, scalar.string)
            } catch {
                problems.append(Problem(source: location, key: path, message: error.message))
            }
        case .sequence:
            problems.append(Problem(source: location, key: path, message: "expected a single value, not a list"))
        case .alias:
            problems.append(Problem(source: location, key: path, message: "YAML aliases are not supported"))
        }
    }

    private func unknownKeyMessage(_ path: String) -> String {
        let section = path.split(separator: ".").first.map(String.init) ?? path
        let sameSection = keys.keys.filter { $0.hasPrefix(section + ".") }.sorted()
        if sameSection.isEmpty {
            return "unknown key"
        }
        return "unknown key (known in \(section): \(sameSection.joined(separator: ", ")))"
    }

    /// Rules that involve more than one key.
    private func crossChecks(_ configuration: OutletdConfiguration) -> [Problem] {
        var problems: [Problem] = []
        func require(_ condition: Bool, _ key: String, _ message: String) {
            if !condition { problems.append(Problem(source: "configuration", key: key, message: message)) }
        }
        require(
            configuration.spool.maxBytes >= 2 * configuration.spool.segmentBytes, "spool.max_bytes",
            "must be at least twice spool.segment_bytes (a partly read segment cannot be deleted)")
        let validation = configuration.validation
        require(
            validation.voltageMinVolts <= validation.voltageMaxVolts, "validation.voltage_min",
            "must not exceed validation.voltage_max")
        require(
            validation.currentMinAmperes <= validation.currentMaxAmperes, "validation.current_min",
            "must not exceed validation.current_max")
        require(
            validation.powerMinWatts <= validation.powerMaxWatts, "validation.power_min",
            "must not exceed validation.power_max")
        require(
            configuration.mqtt.reconnectDelayMinSeconds <= configuration.mqtt.reconnectDelayMaxSeconds,
            "mqtt.reconnect_delay_min_seconds", "must not exceed mqtt.reconnect_delay_max_seconds")
        require(
            TimeZone(identifier: configuration.rollups.timeZone) != nil, "rollups.time_zone",
            "unknown time zone \"\(configuration.rollups.timeZone)\" (expected an IANA name like Europe/Berlin)")
        for (key, group) in [
            ("mqtt.share_group", configuration.mqtt.shareGroup),
            ("commands.share_group", configuration.commands.shareGroup),
        ] {
            require(
                !group.contains(where: { "/+#".contains($0) }), key,
                "a share group name cannot contain \"/\", \"+\" or \"#\" (MQTT v5 $share/<group>/<filter>)")
        }
        require(
            configuration.mqtt.shareGroup.isEmpty == configuration.commands.shareGroup.isEmpty,
            configuration.mqtt.shareGroup.isEmpty ? "mqtt.share_group" : "commands.share_group",
            "mqtt.share_group and commands.share_group are set together: several instances need both (readings and "
                + "set requests each reach one of them), one instance neither (docs/SCALING.md)")
        require(
            !configuration.homeAssistant.prefix.contains(where: { "+#".contains($0) })
                && !configuration.homeAssistant.prefix.hasPrefix("/")
                && !configuration.homeAssistant.prefix.hasSuffix("/"),
            "homeassistant.prefix", "a topic prefix without wildcards (+, #) or a leading or trailing /")
        let retention = configuration.retention
        require(
            retention.minuteRollupDays >= retention.rawDays + 2, "retention.minute_rollup_days",
            "must be at least retention.raw_days + 2 (hours and days are recomputed from their minutes)")
        require(
            retention.hourlyRollupDays == 0 || retention.hourlyRollupDays >= retention.minuteRollupDays,
            "retention.hourly_rollup_days", "must be 0 (forever) or at least retention.minute_rollup_days")
        require(
            retention.dailyRollupDays == 0 || retention.dailyRollupDays >= retention.minuteRollupDays,
            "retention.daily_rollup_days", "must be 0 (forever) or at least retention.minute_rollup_days")
        if let scheme = OutletdConfiguration.Database.unsupportedScheme(of: configuration.database.url) {
            problems.append(
                Problem(
                    source: "configuration", key: "database.url",
                    message:
                        "unsupported scheme \"\(scheme)://\": outletd stores into PostgreSQL; give a postgresql:// "
                        + "or postgres:// URI, or a libpq key=value string (host=… dbname=…)"))
        }
        do {
            _ = try MQTTConfiguration(url: configuration.mqtt.url, clientID: configuration.instanceID)
        } catch {
            problems.append(Problem(source: "configuration", key: "mqtt.url", message: error.message))
        }
        let mqtt = configuration.mqtt
        require(
            mqtt.tlsCertificateFile.isEmpty == mqtt.tlsKeyFile.isEmpty, "mqtt.tls_cert_file",
            "mqtt.tls_cert_file and mqtt.tls_key_file go together")
        for (key, file) in [
            ("mqtt.tls_ca_file", mqtt.tlsCAFile), ("mqtt.tls_cert_file", mqtt.tlsCertificateFile),
            ("mqtt.tls_key_file", mqtt.tlsKeyFile),
        ] where !file.isEmpty {
            require(FileManager.default.isReadableFile(atPath: file), key, "cannot read \(file)")
        }
        let listen = configuration.http.listen
        require(
            listen.isEmpty || OutletdConfiguration.HTTPSettings.parse(listen: listen) != nil, "http.listen",
            "must be host:port (e.g. 127.0.0.1:9464) or empty")
        let appListen = configuration.app.listen
        require(
            appListen.isEmpty || OutletdConfiguration.HTTPSettings.parse(listen: appListen) != nil, "app.listen",
            "must be host:port (e.g. 127.0.0.1:8080) or empty")
        require(
            appListen.isEmpty || appListen != configuration.http.listen, "app.listen",
            "must differ from http.listen (metrics stay apart from the app)")
        let prefix = configuration.mqtt.topicPrefix
        require(
            !prefix.contains("+") && !prefix.contains("#") && !prefix.hasPrefix("/") && !prefix.hasSuffix("/"),
            "mqtt.topic_prefix", "must be topic levels without wildcards or leading/trailing '/'")
        return problems
    }
}
