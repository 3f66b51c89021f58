import Config
import CoreMetrics
import Glibc
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The owner's app on its own listener (`app.listen`): the JSON API (``OwnerAPI``) and the page (``OwnerPage``).
/// A `Service` of the daemon's `ServiceGroup`: it starts its database workers, serves until the graceful shutdown,
/// then stops them.
public struct OwnerAppServer: Service {
    let database: OwnerDatabase
    let passwords: PasswordChecker
    let live: LiveHub
    let application: Application<RouterResponder<OwnerRequestContext>>

    /// Fails when `listen` is not `host:port`. `onServerRunning` receives the port bound (tests listen on port 0).
    /// `metricsFactory` makes the app's counters (the daemon's `/metrics`; none by default).
    public init(
        listen: String, configuration: OutletdConfiguration, logger: Logger,
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        guard let (host, port) = OutletdConfiguration.HTTPSettings.parse(listen: listen) else {
            throw ConfigurationKeyError(message: "app.listen must be host:port, got \"\(listen)\"")
        }
        database = OwnerDatabase(
            connectionString: configuration.database.url,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds, logger: logger)
        let threads = configuration.app.passwordHashThreads
        passwords = PasswordChecker(threads: threads, queueLength: 4 * threads)
        live = LiveHub(
            settings: Self.liveSettings(configuration.app), database: database,
            metrics: AppMetrics(factory: metricsFactory), logger: logger)
        let router = Self.router(
            database: database, configuration: configuration.app, passwords: passwords, live: live,
            metricsFactory: metricsFactory, logger: logger, alerts: configuration.alerts)
        let limits = ConnectionLimits(
            maxConnections: configuration.app.maxConnections,
            headerTimeoutSeconds: configuration.app.headerTimeoutSeconds, metrics: AppMetrics(factory: metricsFactory))
        let idleTimeout = TimeAmount.nanoseconds(Int64(configuration.app.idleTimeoutSeconds * 1e9))
        Self.checkDescriptors(maxConnections: configuration.app.maxConnections, logger: logger)
        application = Application(
            router: router,
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [ConnectionGuard(limits: limits)], idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(host, port: port), serverName: "outletd-app"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    /// Warns when `app.max_connections` does not fit the process's descriptor limit (less 64 for MQTT, PostgreSQL,
    /// the spool and the metrics listener): past it, a connection would fail to be accepted instead of being
    /// answered 503.
    static func checkDescriptors(maxConnections: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let room = Int(clamping: limit.rlim_cur) - 64
        guard maxConnections > room else { return }
        let message =
            "app.max_connections (\(maxConnections)) does not fit the descriptor limit (\(limit.rlim_cur), ulimit -n or "
            + "LimitNOFILE): connections past about \(max(0, room)) will fail instead of being answered 503"
        logger.warning("\(message)")
    }

    /// Every route of the app, the API and the page, behind the middleware every answer passes.
    static func router(
        database: OwnerDatabase, configuration: OutletdConfiguration.AppSettings, passwords: PasswordChecker,
        live: LiveHub, metricsFactory: any MetricsFactory, logger: Logger,
        alerts: OutletdConfiguration.AlertSettings = .init()
    ) -> Router<OwnerRequestContext> {
        let router = Router(context: OwnerRequestContext.self)
        router.add(middleware: SecurityHeadersMiddleware(logger: logger))
        router.add(middleware: ClientAddressMiddleware(trustedProxies: configuration.trustedProxies))
        router.add(middleware: LogRequestsMiddleware(.debug))
        var settings = OwnerAPI.Settings(
            sessionLifetimeSeconds: configuration.sessionLifetimeHours * 3_600,
            claimRequiresKey: configuration.claimRequiresKey)
        settings.alerts = alerts
        OwnerAPI(
            database: database, settings: settings, passwords: passwords, live: live,
            metrics: AppMetrics(factory: metricsFactory)
        )
        .register(on: router)
        OwnerPage.register(on: router)
        return router
    }

    /// `METHOD /path` of every API route (the page's aside): what the OpenAPI document must describe.
    public static func apiRoutes(logger: Logger) -> Set<String> {
        let database = OwnerDatabase(connectionString: "", reconnectDelayMax: 1, logger: logger)
        let passwords = PasswordChecker(threads: 1, queueLength: 1)
        defer { passwords.stop() }
        let metrics = AppMetrics(factory: NOOPMetricsHandler.instance)
        let live = LiveHub(settings: .init(), database: database, metrics: metrics, logger: logger)
        let router = Self.router(
            database: database, configuration: .init(), passwords: passwords, live: live,
            metricsFactory: NOOPMetricsHandler.instance, logger: logger)
        return Set(
            router.routes.map { route -> String in
                let path = route.path.description.hasPrefix("/") ? route.path.description : "/" + route.path.description
                return "\(route.method.rawValue) \(path)"
            }.filter { $0.contains(" /api/") })
    }

    static func liveSettings(_ app: OutletdConfiguration.AppSettings) -> LiveHub.Settings {
        .init(
            intervalSeconds: app.liveIntervalSeconds, maxStreams: app.maxLiveStreams,
            maxStreamsPerOwner: app.maxLiveStreamsPerOwner, writeTimeoutSeconds: app.liveWriteTimeoutSeconds)
    }

    public func run() async throws {
        database.start()
        defer { passwords.stop() }
        let live = live
        let ticker = Task { await live.run() }
        do {
            // The decoy hash an unknown user name is checked against, made now (on a password thread), so the
            // first such login takes no longer than any other.
            _ = try await passwords.verify("", hash: PasswordHasher.decoy)
            // The live streams never end on their own: the graceful shutdown ends them, so that the server can
            // finish its requests.
            try await withGracefulShutdownHandler {
                try await application.run()
            } onGracefulShutdown: {
                live.stop()
            }
        } catch {
            live.stop()
            ticker.cancel()
            await database.stop()
            throw error
        }
        live.stop()
        ticker.cancel()
        await database.stop()
    }
}
