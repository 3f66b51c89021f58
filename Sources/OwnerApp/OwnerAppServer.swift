import Config
import Hummingbird
import Logging
import ServiceLifecycle

/// The owner's app on its own listener (`app.listen`): the JSON API (``OwnerAPI``) and the page (``OwnerPage``).
/// A `Service` of the daemon's `ServiceGroup`: it starts its database workers, serves until the graceful shutdown,
/// then stops them.
public struct OwnerAppServer: Service {
    let database: OwnerDatabase
    let application: Application<RouterResponder<OwnerRequestContext>>

    /// Fails when `listen` is not `host:port`. `onServerRunning` receives the port bound (tests listen on port 0).
    public init(
        listen: String, configuration: OutletdConfiguration, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        guard let (host, port) = OutletdConfiguration.HTTPSettings.parse(listen: listen) else {
            throw ConfigurationKeyError(message: "app.listen must be host:port, got \"\(listen)\"")
        }
        database = OwnerDatabase(
            connectionString: configuration.database.url,
            reconnectDelayMax: configuration.database.reconnectDelayMaxSeconds, logger: logger)
        let router = Self.router(
            database: database, sessionLifetimeSeconds: configuration.app.sessionLifetimeHours * 3_600)
        application = Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "outletd-app"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    /// Every route of the app: the API and the page.
    public static func router(database: OwnerDatabase, sessionLifetimeSeconds: Double) -> Router<OwnerRequestContext> {
        let router = Router(context: OwnerRequestContext.self)
        router.add(middleware: LogRequestsMiddleware(.debug))
        OwnerAPI(database: database, sessionLifetimeSeconds: sessionLifetimeSeconds).register(on: router)
        OwnerPage.register(on: router)
        return router
    }

    public func run() async throws {
        database.start()
        do {
            // The decoy hash an unknown user name is checked against, made now (on a database thread), so the
            // first such login takes no longer than any other.
            _ = try await database.run { _ in PasswordHasher.decoy }
            try await application.run()
        } catch {
            await database.stop()
            throw error
        }
        await database.stop()
    }
}
