import Config
import Hummingbird
import Logging
import Runtime
import ServiceLifecycle

/// The HTTP face for operators and orchestrators (Hummingbird, loopback by default):
/// - `GET /metrics`: Prometheus text format (``PrometheusExposition``);
/// - `GET /healthz`: 200 while the process serves requests (liveness);
/// - `GET /readyz`: 200, or 503 with a JSON reason while the broker or the database is down or
///   the backlog is over `http.ready_max_backlog_messages` (``Readiness``).
public struct HealthServer: Service {
    let application: any Service

    /// Fails when `listen` is not `host:port`.
    public init(
        listen: String, metrics: IngestMetrics, maxBacklogMessages: Int, logger: Logger
    ) throws {
        guard let (host, port) = OutletdConfiguration.HTTPSettings.parse(listen: listen) else {
            throw ConfigurationKeyError(message: "http.listen must be host:port, got \"\(listen)\"")
        }
        let router = Router()
        let exposition = PrometheusExposition(metrics: metrics)
        router.get("metrics") { _, _ -> Response in
            // /proc is file I/O: read on a thread of its own, not on the cooperative pool.
            let statistics = try? await Blocking.run("outletd-proc") { try ProcessStatistics.read() }
            let body = exposition.render(process: statistics)
            return Response(
                status: .ok, headers: [.contentType: PrometheusExposition.contentType],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        router.get("healthz") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "{\"alive\":true}")))
        }
        router.get("readyz") { _, _ -> Response in
            let readiness = Readiness.evaluate(metrics.snapshot(), maxBacklogMessages: maxBacklogMessages)
            return Response(
                status: readiness.isReady ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: readiness.json)))
        }
        application = Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "outletd"),
            logger: logger)
    }

    /// `host:port` (IPv6 as `[::1]:9464`) split, or nil.
    public func run() async throws {
        try await application.run()
    }
}
