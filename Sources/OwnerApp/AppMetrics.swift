import CoreMetrics

/// The app's counters in `/metrics`, through the daemon's swift-metrics factory:
/// `outletd_app_logins_total{result}` (ok, refused, rate_limited, busy) and `outletd_app_claims_total{result}`
/// (claimed, not_found, rate_limited, invalid).
struct AppMetrics: Sendable {
    let factory: any MetricsFactory

    func login(_ result: String) {
        Counter(label: "outletd_app_logins_total", dimensions: [("result", result)], factory: factory).increment()
    }

    func claim(_ result: String) {
        Counter(label: "outletd_app_claims_total", dimensions: [("result", result)], factory: factory).increment()
    }
}
