import MQTT
import MessageSpool
import Postgres

/// One configuration key: its dotted path in the YAML file, its environment variable, how its
/// text becomes a value, and where the value goes.
///
/// YAML scalars and environment variables are both text; each key parses its own text, so a
/// value means the same wherever it comes from.
public struct ConfigurationKey: Sendable {
    /// Dotted path, e.g. `ingest.batch_max_rows`.
    public let path: String
    /// What the key means, with its unit.
    public let summary: String
    /// Parses `text` and stores it; throws a message saying what was expected.
    let apply: @Sendable (inout OutletdConfiguration, String) throws(ConfigurationKeyError) -> Void
    /// The key's value in a configuration, as text (for `outletd config`-style listings).
    let render: @Sendable (OutletdConfiguration) -> String
    /// A secret (it holds a password): it may also come from a file (`<key>_file`,
    /// `OUTLETD_…_FILE`) or a systemd credential, and is shown redacted.
    public var isSecret = false

    /// The systemd credential (`LoadCredential=`) a secret key is read from: the path with `_` for
    /// `.`, e.g. `database_url`.
    public var credentialName: String { path.replacingOccurrences(of: ".", with: "_") }

    /// The environment variable that overrides this key: `OUTLETD_` + the path in upper case with
    /// `_` for `.`, e.g. `OUTLETD_INGEST_BATCH_MAX_ROWS`, `OUTLETD_DATABASE_URL`.
    public var environmentVariable: String {
        "OUTLETD_" + path.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// The value of this key in `configuration`, as text.
    public func value(in configuration: OutletdConfiguration) -> String { render(configuration) }
}

/// Why a key's text was refused.
public struct ConfigurationKeyError: Error, Sendable {
    public let message: String

    public init(message: String) {
        self.message = message
    }
}

extension ConfigurationKey {
    static func string(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, String> & Sendable, _ summary: String,
        nonEmpty: Bool = true, redact: (@Sendable (String) -> String)? = nil
    ) -> ConfigurationKey {
        ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                if nonEmpty && text.isEmpty { throw ConfigurationKeyError(message: "must not be empty") }
                configuration[keyPath: keyPath] = text
            },
            render: { configuration in
                let value = configuration[keyPath: keyPath]
                return redact?(value) ?? value
            },
            isSecret: redact != nil)
    }

    static func int(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, Int> & Sendable, _ range: ClosedRange<Int>,
        _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                let cleaned = text.replacingOccurrences(of: "_", with: "")
                guard let value = Int(cleaned) else {
                    throw ConfigurationKeyError(message: "expected a whole number, got \"\(text)\"")
                }
                guard range.contains(value) else {
                    throw ConfigurationKeyError(
                        message: "\(value) is out of range \(range.lowerBound)…\(range.upperBound)")
                }
                configuration[keyPath: keyPath] = value
            },
            render: { configuration in String(configuration[keyPath: keyPath]) })
    }

    static func double(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, Double> & Sendable,
        _ range: ClosedRange<Double>, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                let cleaned = text.replacingOccurrences(of: "_", with: "")
                guard let value = Double(cleaned), value.isFinite else {
                    throw ConfigurationKeyError(message: "expected a number, got \"\(text)\"")
                }
                guard range.contains(value) else {
                    throw ConfigurationKeyError(
                        message: "\(value) is out of range \(range.lowerBound)…\(range.upperBound)")
                }
                configuration[keyPath: keyPath] = value
            },
            render: { configuration in String(configuration[keyPath: keyPath]) })
    }

    static func bool(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, Bool> & Sendable, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                switch text.lowercased() {
                case "true", "yes", "on", "1": configuration[keyPath: keyPath] = true
                case "false", "no", "off", "0": configuration[keyPath: keyPath] = false
                default: throw ConfigurationKeyError(message: "expected true or false, got \"\(text)\"")
                }
            },
            render: { configuration in String(configuration[keyPath: keyPath]) })
    }

    /// A choice among an enumeration's raw values.
    static func choice<Value: RawRepresentable & CaseIterable & Sendable>(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, Value> & Sendable, _ summary: String
    ) -> ConfigurationKey where Value.RawValue == String {
        let choices = Value.allCases.map(\.rawValue)
        return ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                guard let value = Value(rawValue: text.lowercased()) else {
                    throw ConfigurationKeyError(
                        message: "expected one of \(choices.joined(separator: ", ")), got \"\(text)\"")
                }
                configuration[keyPath: keyPath] = value
            },
            render: { configuration in configuration[keyPath: keyPath].rawValue })
    }

    static func choice(
        _ path: String, _ keyPath: WritableKeyPath<OutletdConfiguration, String> & Sendable, _ choices: [String],
        _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            path: path, summary: summary,
            apply: { configuration, text throws(ConfigurationKeyError) in
                let value = text.lowercased()
                guard choices.contains(value) else {
                    throw ConfigurationKeyError(
                        message: "expected one of \(choices.joined(separator: ", ")), got \"\(text)\"")
                }
                configuration[keyPath: keyPath] = value
            },
            render: { configuration in configuration[keyPath: keyPath] })
    }

    /// Every key outletd understands.
    public static let all: [ConfigurationKey] = [
        .string(
            "protocols.tasmota_full_topics", \.protocols.tasmotaFullTopics,
            "Tasmota FullTopic patterns to subscribe to (comma-separated), besides registered ones"),
        .string(
            "protocols.tasmota_prefixes", \.protocols.tasmotaPrefixes, "Tasmota command,status,telemetry prefixes"),
        .string("protocols.shelly_gen1_prefix", \.protocols.shellyGen1Prefix, "first level of Shelly Gen1 topics"),
        .string(
            "protocols.shelly_gen2_subscriptions", \.protocols.shellyGen2Subscriptions,
            "Shelly Gen2 topic filters (comma-separated)", nonEmpty: false),
        .string(
            "protocols.shelly_gen2_reply_prefix", \.protocols.shellyGen2ReplyPrefix,
            "JSON-RPC src of outletd (empty: outletd/<instance_id>/shelly)", nonEmpty: false),
        .string(
            "protocols.zigbee2mqtt_base_topic", \.protocols.zigbee2mqttBaseTopic,
            "Zigbee2MQTT's base topic (empty: not read)", nonEmpty: false),
        .string(
            "protocols.esphome_subscriptions", \.protocols.esphomeSubscriptions,
            "ESPHome topic filters (comma-separated; empty: not read)", nonEmpty: false),
        .string("instance_id", \.instanceID, "MQTT client id and log label of this instance"),
        .string(
            "database.url", \.database.url, "libpq connection string or postgresql:// URI",
            redact: { redactConnectionString($0) }),
        .bool("database.migrate_on_start", \.database.migrateOnStart, "apply pending migrations when run starts"),
        .double(
            "database.reconnect_delay_max_seconds", \.database.reconnectDelayMaxSeconds, 0.1...3_600,
            "cap of the reconnect backoff, seconds"),
        .choice(
            "database.durability", \.database.durability,
            "when the spool lets go of stored readings: local (the primary committed them) or replicated (a standby has them)"
        ),
        .string(
            "mqtt.url", \.mqtt.url, "mqtt://[user[:password]@]host[:port]",
            redact: { (try? MQTTConfiguration(url: $0, clientID: "outletd").redactedURL) ?? "(invalid URL)" }),
        .string("mqtt.topic_prefix", \.mqtt.topicPrefix, "first topic levels: <prefix>/<code>/telemetry"),
        .string(
            "mqtt.share_group", \.mqtt.shareGroup,
            "shared-subscription group for <prefix>/+/telemetry (empty: plain subscription)", nonEmpty: false),
        .bool(
            "mqtt.ignore_peers", \.mqtt.ignorePeers,
            "start although another instance is online while both share groups are empty (a deliberate copy)"),
        .int(
            "mqtt.session_expiry_seconds", \.mqtt.sessionExpirySeconds, 0...4_294_967_295,
            "how long the broker keeps the session while outletd is away"),
        .int("mqtt.keepalive_seconds", \.mqtt.keepAliveSeconds, 5...65_535, "MQTT keep-alive"),
        .int(
            "mqtt.reconnect_delay_min_seconds", \.mqtt.reconnectDelayMinSeconds, 1...3_600,
            "first reconnect delay, seconds"),
        .int(
            "mqtt.reconnect_delay_max_seconds", \.mqtt.reconnectDelayMaxSeconds, 1...3_600,
            "cap of the reconnect backoff, seconds"),
        .int(
            "mqtt.receive_maximum", \.mqtt.receiveMaximum, 1...65_535,
            "QoS 1 messages the broker may have in flight to outletd"),
        .string(
            "mqtt.tls_ca_file", \.mqtt.tlsCAFile, "PEM CA file for the broker's certificate (turns TLS on)",
            nonEmpty: false),
        .string("mqtt.tls_cert_file", \.mqtt.tlsCertificateFile, "PEM client certificate (TLS)", nonEmpty: false),
        .string("mqtt.tls_key_file", \.mqtt.tlsKeyFile, "PEM key of the client certificate (TLS)", nonEmpty: false),
        .int(
            "ingest.batch_max_rows", \.ingest.batchMaxRows, 1...1_000_000,
            "write a batch when it holds this many rows"),
        .int(
            "ingest.batch_max_delay_ms", \.ingest.batchMaxDelayMilliseconds, 1...60_000,
            "…or when its oldest row waited this long, milliseconds, if it holds batch_min_rows"),
        .int(
            "ingest.batch_min_rows", \.ingest.batchMinRows, 1...1_000_000,
            "a batch with fewer rows waits up to small_batch_max_delay_ms instead (1: never)"),
        .int(
            "ingest.small_batch_max_delay_ms", \.ingest.smallBatchMaxDelayMilliseconds, 1...60_000,
            "how long a batch under batch_min_rows rows waits for more, milliseconds"),
        .double(
            "ingest.shutdown_flush_timeout_seconds", \.ingest.shutdownFlushTimeoutSeconds, 0...86_400,
            "on SIGTERM, how long to keep trying to write what was received"),
        .string("spool.directory", \.spool.directory, "directory of the spool's segment files"),
        .int(
            "spool.max_bytes", \.spool.maxBytes, 131_072...(1 << 50),
            "spool size at which intake waits (the broker queues), bytes"),
        .int(
            "spool.segment_bytes", \.spool.segmentBytes, 65_536...(1 << 40),
            "size at which a new segment file is started, bytes"),
        .choice(
            "spool.fsync", \.spool.fsync, Spool.FsyncPolicy.allCases.map(\.rawValue),
            "when appended records are forced to the disk"),
        .int(
            "spool.fsync_interval_ms", \.spool.fsyncIntervalMilliseconds, 1...3_600_000,
            "with fsync: interval, how often, milliseconds"),
        .double("validation.voltage_min", \.validation.voltageMinVolts, -1e6...1e6, "lowest accepted voltage, V"),
        .double("validation.voltage_max", \.validation.voltageMaxVolts, -1e6...1e6, "highest accepted voltage, V"),
        .double("validation.current_min", \.validation.currentMinAmperes, -1e6...1e6, "lowest accepted current, A"),
        .double("validation.current_max", \.validation.currentMaxAmperes, -1e6...1e6, "highest accepted current, A"),
        .double("validation.power_min", \.validation.powerMinWatts, -1e9...1e9, "lowest accepted active power, W"),
        .double("validation.power_max", \.validation.powerMaxWatts, -1e9...1e9, "highest accepted active power, W"),
        .int(
            "validation.max_payload_bytes", \.validation.maxPayloadBytes, 16...(16 << 20),
            "larger payloads are rejected unread"),
        .int(
            "validation.max_readings_per_message", \.validation.maxReadingsPerMessage, 1...1_000_000,
            "longer JSON arrays are rejected"),
        .double(
            "validation.max_clock_skew_seconds", \.validation.maxClockSkewSeconds, 0...31_536_000,
            "device time further from receive time is replaced by receive time"),
        .double(
            "validation.max_backfill_seconds", \.validation.maxBackfillSeconds, 0...31_536_000,
            "how old a buffered reading (in a JSON array) may be"),
        .int(
            "rejections.keep_messages", \.rejections.keepMessages, 0...100_000_000,
            "newest rejected messages kept in rejected_messages"),
        .int(
            "rejections.max_stored_per_batch", \.rejections.maxStoredPerBatch, 0...1_000_000,
            "rejected messages stored per batch (all are counted)"),
        .int(
            "rejections.pending_devices_max", \.rejections.pendingDevicesMax, 0...100_000_000,
            "rows kept in pending_devices"),
        .int(
            "rejections.payload_excerpt_bytes", \.rejections.payloadExcerptBytes, 0...65_536,
            "payload bytes kept with a rejected message"),
        .double(
            "rejections.log_interval_seconds", \.rejections.logIntervalSeconds, 0...86_400,
            "at most one log line per reason this often"),
        .double(
            "registry.refresh_interval_seconds", \.registry.refreshIntervalSeconds, 1...86_400,
            "full registry reload besides LISTEN/NOTIFY"),
        .double(
            "commands.confirm_timeout_seconds", \.commands.confirmTimeoutSeconds, 0.1...3_600,
            "a sent command without a matching state report is timed out after this, seconds"),
        .double(
            "commands.offline_expiry_seconds", \.commands.offlineExpirySeconds, 1...604_800,
            "a command held for an offline outlet expires after this, seconds"),
        .int(
            "commands.sweep_interval_ms", \.commands.sweepIntervalMilliseconds, 10...60_000,
            "how often timeouts, expiry and held commands are checked, milliseconds"),
        .string(
            "commands.share_group", \.commands.shareGroup,
            "shared-subscription group for <prefix>/+/set (empty: plain subscription)", nonEmpty: false),
        .int(
            "commands.inbox_max_messages", \.commands.inboxMaxMessages, 1...10_000_000,
            "set requests and state reports not yet handled before intake waits"),
        .bool(
            "automations.run", \.automations.run,
            "evaluate automations in this instance (schedules, timers, power rules, group limits)"),
        .double(
            "automations.catch_up_seconds", \.automations.catchUpSeconds, 0...604_800,
            "a schedule or timer due while no outletd ran fires at start when at most this late, seconds"),
        .int(
            "automations.interval_ms", \.automations.intervalMilliseconds, 50...60_000,
            "how often automations are evaluated, milliseconds"),
        .bool("alerts.enabled", \.alerts.enabled, "evaluate alerts and deliver them in this instance"),
        .double(
            "alerts.interval_seconds", \.alerts.intervalSeconds, 1...3_600, "how often alerts are evaluated, seconds"),
        .double(
            "alerts.slow_interval_seconds", \.alerts.slowIntervalSeconds, 10...86_400,
            "how often standby and budget alerts are evaluated, seconds"),
        .bool(
            "alerts.webhook_allow_private", \.alerts.webhookAllowPrivate,
            "let webhooks reach loopback, private and link-local addresses"),
        .double(
            "alerts.delivery_lease_seconds", \.alerts.deliveryLeaseSeconds, 10...86_400,
            "a delivery claimed and not recorded within this (its instance died mid-send) is sent again, same id"),
        .int("alerts.max_rules_per_owner", \.alerts.maxRulesPerOwner, 1...10_000, "alert rules one owner may have"),
        .int(
            "alerts.max_channels_per_owner", \.alerts.maxChannelsPerOwner, 1...1_000,
            "alert channels one owner may have"),
        .int(
            "alerts.max_messages_per_hour", \.alerts.maxMessagesPerHour, 1...100_000,
            "alert deliveries queued per owner per hour; beyond, recorded as failed"),
        .string(
            "alerts.vapid_key_file", \.alerts.vapidKeyFile,
            "Web Push VAPID key (PEM; created once; empty: no Web Push)",
            nonEmpty: false),
        .string("alerts.vapid_subject", \.alerts.vapidSubject, "Web Push VAPID subject (mailto: or https: URL)"),
        .string(
            "alerts.smtp_host", \.alerts.smtpHost, "SMTP relay for alert emails (empty: no email)", nonEmpty: false),
        .int("alerts.smtp_port", \.alerts.smtpPort, 1...65_535, "SMTP relay port"),
        .bool("alerts.smtp_starttls", \.alerts.smtpStartTLS, "require STARTTLS with the SMTP relay"),
        .bool(
            "alerts.smtp_implicit_tls", \.alerts.smtpImplicitTLS,
            "TLS from the first byte with the SMTP relay (port 465) instead of STARTTLS"),
        .string("alerts.smtp_username", \.alerts.smtpUsername, "SMTP login (empty: none)", nonEmpty: false),
        .string(
            "alerts.smtp_password", \.alerts.smtpPassword, "SMTP password", nonEmpty: false,
            redact: { $0.isEmpty ? "" : "***" }),
        .string("alerts.smtp_from", \.alerts.smtpFrom, "sender address of alert emails", nonEmpty: false),
        .string(
            "alerts.smtp_ca_file", \.alerts.smtpCAFile,
            "PEM file of CA certificates to trust for the SMTP relay's TLS (empty: the system's)", nonEmpty: false),
        .string("alerts.page_url", \.alerts.pageURL, "the owners' page's URL, linked from messages", nonEmpty: false),
        .bool(
            "homeassistant.discovery", \.homeAssistant.discovery,
            "publish Home Assistant MQTT discovery configs for every enabled native outlet"),
        .string("homeassistant.prefix", \.homeAssistant.prefix, "Home Assistant's MQTT discovery prefix"),
        .int(
            "homeassistant.native_interval_seconds", \.homeAssistant.nativeIntervalSeconds, 1...86_400,
            "how often native outlets report, seconds: their Home Assistant sensors expire after three intervals"),
        .int(
            "homeassistant.tasmota_teleperiod_seconds", \.homeAssistant.tasmotaTelePeriodSeconds, 10...3_600,
            "Tasmota's TelePeriod, seconds: its Home Assistant sensors expire after three without a SENSOR"),
        .bool(
            "rollups.maintain", \.rollups.maintain,
            "maintain the rollups with every batch (false: raw samples only, rebuild later)"),
        .string("rollups.time_zone", \.rollups.timeZone, "IANA time zone of the daily rollups"),
        .double(
            "rollups.max_gap_seconds", \.rollups.maxGapSeconds, 1...604_800,
            "longer gaps between samples add no integrated energy, seconds"),
        .int("retention.raw_days", \.retention.rawDays, 2...36_500, "raw samples kept, days (whole partitions)"),
        .int(
            "retention.minute_rollup_days", \.retention.minuteRollupDays, 4...36_500,
            "1-minute rollups kept, days (at least raw_days + 2)"),
        .int(
            "retention.hourly_rollup_days", \.retention.hourlyRollupDays, 0...36_500,
            "hourly rollups kept, days; 0 = forever"),
        .int(
            "retention.daily_rollup_days", \.retention.dailyRollupDays, 0...36_500,
            "daily rollups kept, days; 0 = forever"),
        .int(
            "retention.partitions_ahead_days", \.retention.partitionsAheadDays, 1...366,
            "daily partitions of samples created ahead"),
        .int(
            "retention.compact_after_hours", \.retention.compactAfterHours, 0...87_600,
            "compact a day's readings this many hours after it ended; 0 = never (docs/COMPACTION.md)"),
        .int(
            "retention.compact_chunk_outlets", \.retention.compactChunkOutlets, 1...100_000,
            "outlet ids one compaction transaction takes"),
        .double(
            "retention.compact_duty", \.retention.compactDuty, 0.01...1,
            "share of its thread compaction keeps busy (sleeps the rest between chunks)"),
        .int(
            "retention.compact_spell_ms", \.retention.compactSpellMilliseconds, 0...600_000,
            "chunks read by index are sized to busy spells of this, ms; 0 = compact_chunk_outlets each"),
        .int(
            "retention.compact_yield_ms", \.retention.compactYieldMilliseconds, 0...600_000,
            "compaction waits while ingest's batches wait longer than this, ms; 0 = never waits"),
        .double(
            "retention.maintenance_interval_seconds", \.retention.maintenanceIntervalSeconds, 1...86_400,
            "how often partitions are created and old data dropped, seconds"),
        .choice(
            "logging.level", \.logging.level, ["trace", "debug", "info", "notice", "warning", "error", "critical"],
            "log level"),
        .string(
            "http.listen", \.http.listen, "host:port of /metrics, /healthz, /readyz (empty: off)", nonEmpty: false),
        .int(
            "http.ready_max_backlog_messages", \.http.readyMaxBacklogMessages, 1...1_000_000_000,
            "/readyz answers 503 above this backlog"),
        .string(
            "app.listen", \.app.listen, "host:port of the owner's app, API and page (empty: off)", nonEmpty: false),
        .double(
            "app.session_lifetime_hours", \.app.sessionLifetimeHours, 0.01...8_760, "how long an app login lasts, hours"
        ),
        .bool(
            "app.claim_requires_key", \.app.claimRequiresKey,
            "claiming an outlet in the app needs the claim key on its label (false: the code alone)"),
        ConfigurationKey(
            path: "app.trusted_proxies",
            summary: "reverse proxies (comma-separated addresses or CIDRs) whose X-Forwarded-For the app believes",
            apply: { configuration, text throws(ConfigurationKeyError) in
                configuration.app.trustedProxies = try IPNetwork.list(text)
            },
            render: { configuration in configuration.app.trustedProxies.map(\.description).joined(separator: ",") }),
        .int(
            "app.password_hash_threads", \.app.passwordHashThreads, 1...16,
            "threads that check passwords (bcrypt), apart from the database's"),
        .double(
            "app.live_interval_seconds", \.app.liveIntervalSeconds, 0.1...60,
            "how often the open pages' live values are read and pushed, seconds"),
        .int(
            "app.max_live_streams", \.app.maxLiveStreams, 0...1_000_000,
            "live streams (server-sent events) open at once; beyond, 503 and the page polls (0: none)"),
        .int(
            "app.max_live_streams_per_owner", \.app.maxLiveStreamsPerOwner, 1...1_000,
            "live streams one owner may hold open at once; beyond, 429"),
        .double(
            "app.live_write_timeout_seconds", \.app.liveWriteTimeoutSeconds, 0.5...3_600,
            "a live stream's write not through within this (its client does not read) resets the connection, seconds"),
        .int(
            "app.max_connections", \.app.maxConnections, 1...1_000_000,
            "connections open at once on the app's listener; beyond, 503 and closed"),
        .double(
            "app.header_timeout_seconds", \.app.headerTimeoutSeconds, 0.5...3_600,
            "a connection whose first request head is not complete within this is closed, seconds"),
        .double(
            "app.idle_timeout_seconds", \.app.idleTimeoutSeconds, 0.5...86_400,
            "a connection with no request or response under way for this long is closed, seconds"),
        .choice("logging.format", \.logging.format, ["text", "json"], "text for people, json for log collectors"),
    ]
}
