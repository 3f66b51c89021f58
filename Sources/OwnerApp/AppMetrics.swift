import CoreMetrics

/// The app's counters in `/metrics`, through the daemon's swift-metrics factory:
/// `outletd_app_logins_total{result}` (ok, refused, rate_limited, busy) and `outletd_app_claims_total{result}`
/// (claimed, not_found, rate_limited, invalid); the live streams: `outletd_app_live_streams` (open now),
/// `outletd_app_live_events_total` (events pushed) and `outletd_app_live_refused_total{reason}` (owner_limit, full,
/// stopping); the listener: `outletd_app_connections` (open now) and `outletd_app_connections_closed_total{reason}`
/// (refused past `app.max_connections`, header_timeout, live_write_timeout, live_ended_unread).
struct AppMetrics: Sendable {
    let factory: any MetricsFactory

    func login(_ result: String) {
        Counter(label: "outletd_app_logins_total", dimensions: [("result", result)], factory: factory).increment()
    }

    func claim(_ result: String) {
        Counter(label: "outletd_app_claims_total", dimensions: [("result", result)], factory: factory).increment()
    }

    func liveStreams(_ open: Int) {
        Gauge(label: "outletd_app_live_streams", factory: factory).record(open)
    }

    func liveEvents(_ count: Int) {
        guard count > 0 else { return }
        Counter(label: "outletd_app_live_events_total", factory: factory).increment(by: count)
    }

    func connections(_ open: Int) {
        Gauge(label: "outletd_app_connections", factory: factory).record(open)
    }

    func connectionClosed(_ reason: String) {
        Counter(label: "outletd_app_connections_closed_total", dimensions: [("reason", reason)], factory: factory)
            .increment()
    }

    func liveRefused(_ reason: String) {
        Counter(label: "outletd_app_live_refused_total", dimensions: [("reason", reason)], factory: factory)
            .increment()
    }
}
