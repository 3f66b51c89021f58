import MessageSpool
import Telemetry

/// Everything an outletd process can be told, with its defaults.
///
/// Loaded by ``ConfigurationLoader`` from `config/outletd.yaml` (every key documented there) and
/// then from `OUTLETD_*` environment variables, which override any key. The table of keys in
/// ``ConfigurationKey/all`` is the single source of truth: names, types, ranges and docs.
public struct OutletdConfiguration: Sendable, Equatable {
    /// Names this instance: its MQTT client id (so the broker keeps its session) and its logs.
    public var instanceID = "outletd"
    public var database = Database()
    public var mqtt = MQTTSettings()
    public var ingest = IngestSettings()
    public var spool = SpoolSettings()
    public var validation = ValidationSettings()
    public var rejections = RejectionSettings()
    public var registry = RegistrySettings()
    public var commands = CommandSettings()
    public var automations = AutomationSettings()
    public var alerts = AlertSettings()
    public var rollups = RollupSettings()
    public var retention = RetentionSettings()
    public var logging = LoggingSettings()
    public var http = HTTPSettings()
    public var app = AppSettings()
    public var protocols = ProtocolSettings()
    public var homeAssistant = HomeAssistantSettings()

    public init() {}

    /// Home Assistant MQTT discovery (docs/HOME-ASSISTANT.md).
    public struct HomeAssistantSettings: Sendable, Equatable {
        /// Publish retained discovery configs for every enabled native outlet (a switch and four sensors).
        public var discovery = false
        /// Home Assistant's discovery prefix.
        public var prefix = "homeassistant"
        /// How often native outlets report, seconds: their sensors expire after three intervals without one.
        public var nativeIntervalSeconds = 60
        /// Tasmota's TelePeriod, seconds: Tasmota sensors expire after three without a `SENSOR`.
        public var tasmotaTelePeriodSeconds = 300
    }

    /// Tasmota, Shelly, Zigbee2MQTT and ESPHome topic layouts (docs/PROTOCOLS.md). Lists are comma-separated.
    public struct ProtocolSettings: Sendable, Equatable {
        /// FullTopic patterns subscribed to besides those of registered outlets.
        public var tasmotaFullTopics = "%prefix%/%topic%/"
        /// Tasmota's command, status and telemetry prefixes (SetPrefix1..3).
        public var tasmotaPrefixes = "cmnd,stat,tele"
        /// The first level of every Shelly Gen1 topic.
        public var shellyGen1Prefix = "shellies"
        /// The Shelly Gen2 filters (the device prefix is the levels before `status`, `events`, `online`).
        public var shellyGen2Subscriptions = "+/status/+,+/events/rpc,+/online"
        /// outletd's JSON-RPC `src`; replies come on `<this>/rpc`. Empty: `outletd/<instance_id>/shelly`.
        public var shellyGen2ReplyPrefix = ""
        /// Zigbee2MQTT's base topic (its `mqtt.base_topic`); empty: Zigbee2MQTT is not read.
        public var zigbee2mqttBaseTopic = "zigbee2mqtt"
        /// The ESPHome filters (the node's topic prefix is the levels before `sensor`, `switch`, `status`); empty:
        /// ESPHome is not read. Discovery is read under `homeassistant.prefix`.
        public var esphomeSubscriptions = "+/sensor/+/state,+/switch/+/state,+/status"
    }

    /// The default of both share groups (`mqtt.share_group`, `commands.share_group`): none, plain
    /// subscriptions. mosquitto 2.0 restores a persistent session's plain subscriptions when it restarts but
    /// not its shared ones, so only a plain subscription queues the readings published between a broker
    /// restart and outletd's reconnect (docs/GUARANTEES.md, "Not promised"). Several instances set a group
    /// (docs/SCALING.md).
    public static let defaultShareGroup = ""

    /// The group docs/SCALING.md suggests, and the default of earlier versions: a persistent session may still
    /// hold its filters, which outletd unsubscribes when it uses another group (the daemon's `TopicPolicy`).
    public static let conventionalShareGroup = "outletd"

    /// PostgreSQL.
    public struct Database: Sendable, Equatable {
        /// A libpq connection string (`host=… dbname=…`) or URI (`postgresql://user:pass@host/db`).
        public var url = Self.defaultURL
        /// What `url` is when nothing sets it.
        public static let defaultURL = "postgresql://outletd@127.0.0.1:5432/outletd"
        /// Apply pending migrations when `outletd run` starts.
        public var migrateOnStart = true
        /// Upper bound of the reconnect backoff, seconds.
        public var reconnectDelayMaxSeconds = 30.0
        /// When the spool lets go of what the writer stored (``Durability``).
        public var durability = Durability.local

        /// When the spool lets go of stored readings (docs/HIGH-AVAILABILITY.md).
        public enum Durability: String, Sendable, Equatable, CaseIterable {
            /// Once the primary committed them: a failover to an asynchronous standby that lacked the last
            /// commits loses them.
            case local
            /// Once a standby has their commit (its `flush_lsn` in `pg_stat_replication` covers it): after a
            /// failover the writer replays from the spool what the new primary lacks.
            case replicated
        }

        /// The URI schemes libpq accepts.
        public static let supportedSchemes = ["postgresql", "postgres"]

        /// The scheme of a URI `url` that libpq cannot use (`mysql` of `mysql://…`), or nil: a PostgreSQL URI or a
        /// key=value connection string.
        public static func unsupportedScheme(of url: String) -> String? {
            guard let separator = url.range(of: "://") else { return nil }
            let scheme = String(url[..<separator.lowerBound])
            guard !scheme.isEmpty, !scheme.contains(where: { $0 == " " || $0 == "=" }) else { return nil }
            return supportedSchemes.contains(scheme.lowercased()) ? nil : scheme
        }
    }

    /// The MQTT broker.
    public struct MQTTSettings: Sendable, Equatable {
        /// `mqtt://[user[:password]@]host[:port]`.
        public var url = "mqtt://127.0.0.1:1883"
        /// First topic levels of the native protocol: `<prefix>/<code>/telemetry`.
        public var topicPrefix = "outlets"
        /// MQTT v5 shared-subscription group of the telemetry subscription
        /// (`$share/<group>/<prefix>/+/telemetry`): instances in one group split the readings between
        /// them, each message going to one. Empty (the default): a plain subscription, every instance gets
        /// every reading (one instance only), and the only kind mosquitto keeps across its own restart.
        public var shareGroup = OutletdConfiguration.defaultShareGroup
        /// How long the broker keeps this instance's session (and queues its messages) while it
        /// is away, seconds.
        public var sessionExpirySeconds = 86_400
        public var keepAliveSeconds = 30
        public var reconnectDelayMinSeconds = 1
        public var reconnectDelayMaxSeconds = 30
        /// QoS 1 messages the broker may have in flight to this instance.
        public var receiveMaximum = 1_000
        /// Start even when another instance is online while both share groups are empty: a deliberate copy that
        /// stores and commands everything a second time (a test database, a migration). False: refuse to start.
        public var ignorePeers = false
        /// TLS: CA file to verify the broker with (empty: the system's CAs, for `mqtts://`).
        public var tlsCAFile = ""
        /// TLS client certificate and key (PEM), for brokers that want one.
        public var tlsCertificateFile = ""
        public var tlsKeyFile = ""
    }

    /// The path from broker to database.
    public struct IngestSettings: Sendable, Equatable {
        /// A batch is written when it holds this many rows (readings plus rejections)…
        /// Reached only with a backlog; each outlet then costs its rollup upserts once per batch
        /// rather than once per reading (docs/PERFORMANCE.md).
        public var batchMaxRows = 50_000
        /// …or when its oldest row has waited this long, milliseconds: at a steady rate, most of
        /// the latency from receipt to commit (docs/PERFORMANCE.md, "Design decisions the figures led to").
        public var batchMaxDelayMilliseconds = 10
        /// …if it holds at least this many rows; a smaller batch waits for more…
        public var batchMinRows = 100
        /// …up to this long, milliseconds: a transaction costs milliseconds of CPU whatever its size, so a
        /// slow fleet's readings are written ten a transaction, not one (``FlushPolicy``).
        public var smallBatchMaxDelayMilliseconds = 100
        /// On SIGTERM, how long to keep trying to write what was received before giving up.
        public var shutdownFlushTimeoutSeconds = 60.0
    }

    /// The durable spool between the MQTT callback and the writer (see ``Spool``).
    public struct SpoolSettings: Sendable, Equatable {
        /// Directory of the segment files; one per instance. The spool locks it (a second process
        /// using it refuses to start) and records the `instance_id` that owns it (another instance
        /// refuses it too).
        public var directory = "/var/lib/outletd/spool"
        /// When the segment files hold this much, intake waits (the broker queues), bytes.
        public var maxBytes = 1 << 30
        /// A new segment file is started at this size; a segment is deleted once fully
        /// committed, bytes.
        public var segmentBytes = 64 << 20
        /// `never`, `interval` or `always`: when appended records are forced to the disk.
        public var fsync = "never"
        /// With `fsync: interval`, how often, milliseconds.
        public var fsyncIntervalMilliseconds = 1_000

        /// The same as ``Spool`` takes them.
        public var settings: Spool.Settings {
            Spool.Settings(
                directory: directory, maxBytes: Int64(maxBytes), segmentBytes: Int64(segmentBytes),
                fsync: Spool.FsyncPolicy(rawValue: fsync) ?? .never,
                fsyncIntervalMilliseconds: fsyncIntervalMilliseconds)
        }
    }

    /// Bounds a reading must keep (see ``Telemetry/ValidationLimits``).
    public struct ValidationSettings: Sendable, Equatable {
        public var voltageMinVolts = 0.0
        public var voltageMaxVolts = 500.0
        public var currentMinAmperes = 0.0
        public var currentMaxAmperes = 100.0
        public var powerMinWatts = 0.0
        public var powerMaxWatts = 50_000.0
        public var maxPayloadBytes = 65_536
        public var maxReadingsPerMessage = 1_000
        /// A device timestamp further than this from the receive time is not trusted, seconds.
        public var maxClockSkewSeconds = 300.0
        /// How old a reading buffered by an offline outlet (inside a JSON array) may be, seconds.
        public var maxBackfillSeconds = 86_400.0

        /// The same bounds as the decoders take them.
        public var limits: ValidationLimits {
            var limits = ValidationLimits()
            limits.voltageVolts = voltageMinVolts...voltageMaxVolts
            limits.currentAmperes = currentMinAmperes...currentMaxAmperes
            limits.powerWatts = powerMinWatts...powerMaxWatts
            limits.maxPayloadBytes = maxPayloadBytes
            limits.maxReadingsPerMessage = maxReadingsPerMessage
            limits.maxClockSkew = maxClockSkewSeconds
            limits.maxBackfill = maxBackfillSeconds
            return limits
        }
    }

    /// What is kept of refused messages.
    public struct RejectionSettings: Sendable, Equatable {
        /// Rows kept in `rejected_messages` (the newest).
        public var keepMessages = 10_000
        /// At most this many rejected messages of one batch are stored (all are counted).
        public var maxStoredPerBatch = 500
        /// Rows kept in `pending_devices`.
        public var pendingDevicesMax = 10_000
        /// Bytes of the payload kept with a rejected message.
        public var payloadExcerptBytes = 512
        /// At most one log line per rejection reason this often, seconds (the rest are counted).
        public var logIntervalSeconds = 10.0
    }

    /// The in-memory device registry.
    public struct RegistrySettings: Sendable, Equatable {
        /// Besides LISTEN/NOTIFY, reload the whole registry this often, seconds.
        public var refreshIntervalSeconds = 300.0
    }

    /// Health and metrics over HTTP.
    public struct HTTPSettings: Sendable, Equatable {
        /// `host:port` of `/metrics`, `/healthz`, `/readyz`; empty turns the server off.
        public var listen = "127.0.0.1:9464"
        /// `/readyz` answers 503 when more messages than this wait to be written.
        public var readyMaxBacklogMessages = 50_000

        /// `host:port` (`[::1]:9464` for IPv6) as host and port; nil when it is not that.
        public static func parse(listen: String) -> (host: String, port: Int)? {
            guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
                (0...65_535).contains(port)
            else { return nil }
            var host = String(listen[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return host.isEmpty ? nil : (host, port)
        }
    }

    /// The owner's app: JSON API and page (docs/OWNER-APP.md).
    public struct AppSettings: Sendable, Equatable {
        /// `host:port` of the app's API and page; empty (the default) turns it off.
        public var listen = ""
        /// How long a login lasts, hours.
        public var sessionLifetimeHours = 168.0
        /// Whether claiming an outlet needs the claim key on its label besides its code. Only fleets whose codes
        /// are themselves secret should turn it off (docs/SECURITY.md).
        public var claimRequiresKey = true
        /// Reverse proxies whose `X-Forwarded-For` is believed; the client is the rightmost address in it that is
        /// not one of them. Empty (the default): the header is ignored, the client is the connection's peer.
        public var trustedProxies: [IPNetwork] = []
        /// Threads that check passwords (bcrypt), apart from the database's; a login beyond what they and their
        /// short queue hold is answered 503 at once.
        public var passwordHashThreads = 1
        /// How often the live values of the open pages (`GET /api/v1/live`, server-sent events) are read, in one
        /// statement for all of them, and pushed where they changed, seconds.
        public var liveIntervalSeconds = 3.0
        /// Live streams open at once on this instance; beyond, 503 and the page polls instead. 0: none (the page
        /// polls).
        public var maxLiveStreams = 10_000
        /// Live streams one owner may hold open at once (a tab or device each); beyond, 429. A stream counts until
        /// its connection has closed.
        public var maxLiveStreamsPerOwner = 8
        /// A live stream's write that has not gone through within this (its client does not read) resets the
        /// connection, seconds.
        public var liveWriteTimeoutSeconds = 10.0
        /// Connections open at once on the app's listener, live streams included; one more is answered 503 with
        /// `Retry-After` and closed. Keep it under the process's descriptor limit less a few dozen (MQTT,
        /// PostgreSQL, the spool).
        public var maxConnections = 16_000
        /// A connection whose first request head is not complete within this of connecting is closed, seconds.
        public var headerTimeoutSeconds = 10.0
        /// A connection with no request or response under way for this long is closed, seconds (a kept-alive
        /// connection between requests, or one whose next request's head stalls).
        public var idleTimeoutSeconds = 60.0

        public init() {}
    }

    /// Switching outlets on and off (see docs/COMMANDS.md).
    public struct CommandSettings: Sendable, Equatable {
        /// A sent command not confirmed by the outlet's state report within this is timed out, seconds.
        public var confirmTimeoutSeconds = 10.0
        /// A command held for an offline outlet expires after this, seconds.
        public var offlineExpirySeconds = 300.0
        /// How often timeouts, expiry and held commands are checked, milliseconds.
        public var sweepIntervalMilliseconds = 200
        /// Shared-subscription group for `<prefix>/+/set`, so that with several instances one receives each
        /// request. Empty: a plain subscription (one instance only).
        public var shareGroup = OutletdConfiguration.defaultShareGroup
        /// Set requests and state reports received, not yet handled, before intake waits.
        public var inboxMaxMessages = 10_000
    }

    /// Outlets that act on their own (docs/AUTOMATIONS.md).
    public struct AutomationSettings: Sendable, Equatable {
        /// Whether this instance evaluates automations (several instances share the work, each firing once).
        public var run = true
        /// A schedule or timer found due this much later than its time (no outletd ran) still fires; later, it
        /// is recorded as missed. Seconds.
        public var catchUpSeconds = 300.0
        /// How often the rules are evaluated, milliseconds: power rules act within this plus a batch's commit of
        /// the reading that met them.
        public var intervalMilliseconds = 250
    }

    /// Alerts: outletd telling owners and operators what they need to know (docs/ALERTS.md).
    public struct AlertSettings: Sendable, Equatable {
        /// Whether this instance evaluates alerts and drains their outbox (several instances share the work: each
        /// round is taken by one, each delivery claimed by one).
        public var enabled = true
        /// How often the rules are evaluated, seconds.
        public var intervalSeconds = 10.0
        /// How often the slow kinds (standby, budget: days and a month of data) are evaluated, seconds.
        public var slowIntervalSeconds = 300.0
        /// Whether webhooks may reach loopback, private and link-local addresses (an owner could otherwise make
        /// outletd call internal services).
        public var webhookAllowPrivate = false
        /// A delivery is claimed for this long, seconds: one whose instance died before recording the outcome (a
        /// `kill -9` mid-send) is sent again after it, with the same id. Longer than the senders' timeouts (30 s).
        public var deliveryLeaseSeconds = 120.0
        /// Rules, channels and messages (deliveries queued, per hour) one owner may have.
        public var maxRulesPerOwner = 50
        public var maxChannelsPerOwner = 10
        public var maxMessagesPerHour = 60
        /// Web Push: the VAPID key's PEM file (created once, mode 0600; empty: Web Push off) and the `sub` claim.
        public var vapidKeyFile = ""
        public var vapidSubject = "mailto:alerts@localhost"
        /// Email: the operator's SMTP relay (`smtp_host` empty: email off), STARTTLS, login and sender address.
        public var smtpHost = ""
        public var smtpPort = 587
        public var smtpStartTLS = true
        /// TLS from the connection's first byte (port 465, RFC 8314) instead of STARTTLS.
        public var smtpImplicitTLS = false
        public var smtpUsername = ""
        public var smtpPassword = ""
        public var smtpFrom = ""
        /// PEM file of the CA certificates to trust for the relay's TLS (empty: the system's), for a private relay.
        public var smtpCAFile = ""
        /// The page's URL put in messages (empty: none).
        public var pageURL = ""

        public init() {}
    }

    /// The power rollups (docs/ROLLUPS.md). Changing either value calls for `outletd rollup rebuild`.
    public struct RollupSettings: Sendable, Equatable {
        /// Whether each batch maintains the rollups in its transaction. False stores raw samples
        /// and totals only (a bulk backfill, or measuring what rollups cost): the rollups and the
        /// views over them go stale until `outletd rollup rebuild` restates them.
        public var maintain = true
        /// IANA time zone of the day buckets (and of the hour buckets of half-hour zones).
        public var timeZone = "UTC"
        /// Consecutive samples further apart than this, seconds, add no integrated energy and no
        /// time to the average.
        public var maxGapSeconds = 600.0
    }

    /// What is kept, for how long, and the maintenance task that enforces it.
    public struct RetentionSettings: Sendable, Equatable {
        /// Raw samples older than this many days are dropped, one daily partition at a time.
        public var rawDays = 30
        /// 1-minute rollups older than this many days are deleted. At least `rawDays + 2`: hours and
        /// days are recomputed from their minutes.
        public var minuteRollupDays = 90
        /// Hourly rollups older than this many days are deleted; 0 keeps them forever.
        public var hourlyRollupDays = 0
        /// Daily rollups older than this many days are deleted; 0 keeps them forever.
        public var dailyRollupDays = 0
        /// Daily partitions of `samples` created ahead of today.
        public var partitionsAheadDays = 3
        /// A day's readings are compacted (docs/COMPACTION.md) once the day ended this many hours ago; 0 turns
        /// compaction off.
        public var compactAfterHours = 24
        /// Outlet ids a compaction transaction takes: the partition's writers wait for one chunk at most.
        public var compactChunkOutlets = 32
        /// The share of its thread compaction keeps busy (it sleeps the rest between chunks), 0 to 1.
        public var compactDuty = 0.5
        /// Between chunks compaction waits while a batch of ingest waited longer than this from its receipt to its
        /// commit (any instance's, `ingest_checkpoints.batch_wait_seconds`), ms; 0: it never waits. Above
        /// `ingest.small_batch_max_delay_ms`, the wait a small batch has by design.
        public var compactYieldMilliseconds = 250
        /// Chunks read by index (up to 32 outlets) are sized to keep compaction busy about this long, ms: a chunk
        /// cannot be paused, and while it runs ingest has less of the machine. 0: `compactChunkOutlets` each.
        public var compactSpellMilliseconds = 250
        /// How often the maintenance task runs, seconds (it also runs at start).
        public var maintenanceIntervalSeconds = 3_600.0
    }

    /// Logs (standard error).
    public struct LoggingSettings: Sendable, Equatable {
        /// trace, debug, info, notice, warning, error or critical.
        public var level = "info"
        /// `text` (human) or `json` (one JSON object per line).
        public var format = "text"
    }
}
