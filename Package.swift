// swift-tools-version:6.1
import PackageDescription

/// outletd: smart-outlet telemetry from MQTT into PostgreSQL.
///
/// The targets mirror the architecture (see README.md, "Architecture"):
/// C libraries → thin Swift faces (`MQTT`, `Postgres`) → pure domain (`Telemetry`, the firmwares' `Protocols`)
/// → the daemon (`Ingest`) → the executable (`outletd`).
let package = Package(
    name: "outletd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "outletd", targets: ["outletd"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // C libraries, reached through system library targets.
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // glibc's malloc.h (mallopt), for the daemon's memory policy.
        .systemLibrary(name: "CMalloc"),
        // The version and git commit, written by scripts/build-info (make) into a header; "dev" without it.
        .target(name: "CBuildInfo"),
        // CRC-32C with the processor's instruction, for the spool's checksums.
        .target(name: "CCRC32C"),
        // Buffered reads of the MQTT socket beneath libmosquitto (the header says how and why).
        .target(name: "CSocketBuffers", linkerSettings: [.linkedLibrary("dl")]),

        // Swift faces of the C libraries.
        .target(name: "MQTT", dependencies: ["CMosquitto", "CSocketBuffers"]),
        .target(name: "Postgres", dependencies: ["CLibPQ"]),

        // The domain: pure, I/O-free.
        .target(name: "Telemetry"),
        // The firmwares' dialects, pure: topics, payload decoders and command encoders of the native, Tasmota, Shelly,
        // Zigbee2MQTT and ESPHome protocols.
        .target(name: "Protocols", dependencies: ["Telemetry"]),

        // Alerts, pure: kinds and their rules, the incident state machine, messages, the outbox's rules
        // (docs/ALERTS.md); Storage implements its store.
        .target(name: "Alerts", dependencies: ["Telemetry"]),

        // The daemon, one target per seam (README.md, "Architecture"; a test compares that picture with
        // `swift package dump-package`).
        // Threads, database workers, locks, systemd: how outletd runs things, off Swift's cooperative pool.
        .target(
            name: "Runtime",
            dependencies: [
                "Postgres", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The durable hand-off from the MQTT callback to the writer.
        .target(
            name: "MessageSpool",
            dependencies: ["CCRC32C", "Runtime", "Telemetry", .product(name: "Logging", package: "swift-log")]),
        // outletd.yaml, the environment, the credentials: one validated value.
        .target(
            name: "Config",
            dependencies: [
                "MessageSpool", "MQTT", "Postgres", "Telemetry", .product(name: "Yams", package: "Yams"),
            ]),
        // Counters (swift-metrics, exported by swift-prometheus), /metrics, /healthz, /readyz, JSON logs.
        .target(
            name: "Observability",
            dependencies: [
                "CBuildInfo", "Config", "Runtime", "Telemetry", .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The write path's SQL: a batch in one transaction (samples, totals, rollups, rejections, pending codes,
        // spool checkpoint), the rollups' settings, rebuild and retention. sql/write/ is embedded at build time.
        .target(
            name: "WritePath",
            dependencies: [
                "Config", "MessageSpool", "Postgres", "Runtime", "Telemetry",
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: [.plugin(name: "EmbedSQLPlugin")]),
        // The rest of what outletd says in SQL: schema, registry, queries, commands, owners, tariffs, automations.
        .target(
            name: "Storage",
            dependencies: [
                "Alerts", "Automations", "Config", "Observability", "Postgres", "Protocols", "Runtime", "Telemetry",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            // sql/'s migrations are embedded at build time (Plugins/EmbedSQLPlugin): nothing generated is committed.
            plugins: [.plugin(name: "EmbedSQLPlugin")]),
        // Settled days of readings rewritten column by column, read back through `samples` (docs/COMPACTION.md).
        .target(
            name: "Compaction",
            dependencies: ["Config", "Postgres", "Runtime", .product(name: "Logging", package: "swift-log")]),
        // Alerts that leave outletd: Web Push, webhooks, email; the private-address rule (docs/ALERT-CHANNELS.md).
        .target(
            name: "AlertChannels",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        // Which protocol and outlet a Tasmota or Shelly topic belongs to.
        .target(name: "Routing", dependencies: ["Config", "MQTT", "Protocols", "Telemetry"]),
        // The writer: spool → classify → batches → PostgreSQL.
        .target(
            name: "Ingest",
            dependencies: [
                "Config", "MessageSpool", "Observability", "Postgres", "Protocols", "Routing", "Runtime", "Storage",
                "Telemetry", "WritePath", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // Switching outlets: requests, state reports, the command lifecycle.
        .target(
            name: "Commands",
            dependencies: [
                "Config", "MQTT", "Observability", "Postgres", "Protocols", "Routing", "Runtime", "Storage",
                "Telemetry", "WritePath", .product(name: "Logging", package: "swift-log"),
            ]),
        // Outlets that act on their own: the rules, every decision of a round and the runner, the SQL behind a
        // protocol that Storage implements (schedules, timers, power rules, group limits).
        .target(
            name: "Automations",
            dependencies: [
                "Config", "Postgres", "Runtime", "Telemetry",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The owner's app: accounts, sessions, the JSON API and the page, on its own listener (app.listen).
        .target(
            name: "OwnerApp",
            dependencies: [
                "AlertChannels", "Alerts", "Automations", "Config", "Postgres", "Runtime", "Storage", "Telemetry",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // Web/ (the page: HTML, CSS, JavaScript) is embedded at build time (Plugins/EmbedWebPlugin).
            exclude: ["Web"],
            plugins: [.plugin(name: "EmbedWebPlugin")]),
        // The composition root: every part as a Service of one ServiceGroup.
        .target(
            name: "Daemon",
            dependencies: [
                "AlertChannels", "Alerts", "Automations", "Commands", "Compaction", "Config", "Ingest", "MessageSpool",
                "MQTT", "Observability", "OwnerApp", "Postgres", "Routing", "Runtime", "Storage", "Telemetry",
                "WritePath", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The build tool that embeds sql/ into Storage (migrations) and WritePath (sql/write/), and its plugin.
        .executableTarget(name: "EmbedSQL"),
        .plugin(name: "EmbedSQLPlugin", capability: .buildTool(), dependencies: ["EmbedSQL"]),
        // The build tool that embeds the owner's page (Sources/OwnerApp/Web) into OwnerApp, and its plugin.
        .executableTarget(name: "EmbedWeb"),
        .plugin(name: "EmbedWebPlugin", capability: .buildTool(), dependencies: ["EmbedWeb"]),
        .executableTarget(
            name: "outletd",
            dependencies: [
                "Alerts", "Automations", "CMalloc", "Commands", "Compaction", "Config", "Daemon", "Observability",
                "MQTT", "OwnerApp", "Postgres", "Protocols", "Runtime", "Storage", "Telemetry", "WritePath",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Benchmarks (not tests): Benchmarks/command-latency.sh runs this.
        .executableTarget(
            name: "command-latency", dependencies: ["MQTT", "Protocols", "Telemetry"],
            path: "Benchmarks/CommandLatency"),
        // Figures for docs/ROLLUPS.md; not a test.
        .executableTarget(
            name: "outletd-bench",
            dependencies: ["Config", "Postgres", "Storage", "Telemetry", "WritePath"],
            path: "Benchmarks/RollupBenchmark"
        ),
        // The broker's delivery ceiling: outletd's MQTT layer, storage cut off (Benchmarks/throughput.sh, B).
        .executableTarget(
            name: "broker-ceiling", dependencies: ["Config", "MQTT"], path: "Benchmarks/BrokerCeiling"),
        // Decode cost per message of each protocol, for docs/PROTOCOLS.md; not a test.
        .executableTarget(
            name: "protocol-decode-bench", dependencies: ["Protocols", "Telemetry"],
            path: "Benchmarks/ProtocolDecode"),

        // Tests mirror the modules. `TestSupport` starts a real mosquitto and PostgreSQL.
        .target(name: "TestSupport", dependencies: ["Postgres", "Storage"], path: "Tests/TestSupport"),
        // A service under test: its configuration on TestSupport's stack, an `outletd` process, a client of the app,
        // tariffs and readings for the cost tests.
        .target(
            name: "ServiceTestSupport",
            dependencies: ["Config", "Postgres", "Runtime", "Telemetry", "TestSupport", "WritePath"],
            path: "Tests/ServiceTestSupport"),
        .testTarget(name: "TelemetryTests", dependencies: ["Telemetry", "TestSupport"]),
        .testTarget(name: "AutomationsTests", dependencies: ["Automations", "Telemetry"]),
        .testTarget(name: "ProtocolsTests", dependencies: ["Protocols", "Telemetry", "TestSupport"]),
        .testTarget(name: "AlertsTests", dependencies: ["Alerts"]),
        .testTarget(name: "CompactionTests", dependencies: ["Compaction"]),
        .testTarget(
            name: "AlertChannelsTests",
            dependencies: [
                "AlertChannels", "TestSupport", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(name: "MQTTTests", dependencies: ["CSocketBuffers", "MQTT", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "ConfigTests", dependencies: ["Config", "TestSupport"]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "TestSupport"]),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Config", "Postgres", "Protocols", "Runtime", "Storage", "Telemetry", "TestSupport", "WritePath",
            ]),
        .testTarget(
            name: "WritePathTests",
            dependencies: [
                "Config", "MessageSpool", "Postgres", "Runtime", "Storage", "Telemetry", "TestSupport", "WritePath",
            ]),
        .testTarget(
            name: "OwnerAppTests",
            dependencies: [
                "Automations", "Config", "Observability", "OwnerApp", "Postgres", "Runtime", "ServiceTestSupport",
                "Storage", "Telemetry", "TestSupport", "WritePath",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
            ]),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "AlertChannels", "Alerts", "Automations", "Commands", "Compaction", "Config", "Daemon", "Ingest",
                "MessageSpool", "MQTT", "Observability", "OwnerApp", "Postgres", "Protocols", "Routing", "Runtime",
                "ServiceTestSupport", "Storage", "Telemetry", "TestSupport", "WritePath",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Yams", package: "Yams"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
