import ArgumentParser
import CMalloc
import Config
import CoreMetrics
import Daemon
import Logging
import Observability
import Runtime
import ServiceLifecycle
import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// `outletd run`: the daemon.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the daemon: MQTT → PostgreSQL, until SIGTERM or SIGINT.")

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Do not apply pending migrations at start (overrides database.migrate_on_start).")
    var noMigrate = false

    func run() async throws {
        // A supervisor may start us with SIGTERM/SIGINT blocked; they must reach the shutdown handler.
        var shutdownSignals = sigset_t()
        sigemptyset(&shutdownSignals)
        sigaddset(&shutdownSignals, SIGTERM)
        sigaddset(&shutdownSignals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &shutdownSignals, nil)
        // A batch's buffers (its samples, their COPY text) are megabytes and short-lived. Served from
        // mmap they go back to the system when freed; glibc's default would raise its threshold past
        // them after the first free and keep them in a thread's arena.
        mallopt(M_MMAP_THRESHOLD, 256 * 1024)
        var (configuration, logger) = try options.bootstrap()
        if noMigrate { configuration.database.migrateOnStart = false }
        let service = IngestService(configuration: configuration, logger: logger)
        // Libraries that record through swift-metrics land in the same registry, on /metrics.
        MetricsSystem.bootstrap(service.metrics.factory)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: service)]
        if !configuration.http.listen.isEmpty {
            let health = try HealthServer(
                listen: configuration.http.listen, metrics: service.metrics,
                maxBacklogMessages: configuration.http.readyMaxBacklogMessages, logger: logger)
            services.append(.init(service: health))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch {
            logger.error("outletd stopped with an error", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
    }
}
