import Prometheus
import Synchronization

/// `/metrics`: the registry of an ``IngestMetrics`` (swift-prometheus renders the text exposition format,
/// version 0.0.4), after its per-message counters, read gauges and the process metrics are brought up to date.
///
/// Besides the `outletd_…` metrics it carries the standard process metrics of Prometheus clients
/// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
/// `process_open_fds`, `process_max_fds`, `process_start_time_seconds`) and `outletd_build_info{version,commit}`.
public final class PrometheusExposition: Sendable {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    let metrics: IngestMetrics
    let cpuSeconds: Counter
    let residentMemory: Gauge
    let virtualMemory: Gauge
    let openDescriptors: Gauge
    let maxDescriptors: Gauge
    let startTime: Gauge
    /// CPU seconds already added to `process_cpu_seconds_total` (a counter moves by differences).
    private let exportedCPUSeconds = Mutex(0.0)

    public init(metrics: IngestMetrics) {
        self.metrics = metrics
        let registry = metrics.registry
        cpuSeconds = registry.makeCounter(
            descriptor: .named("process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds."))
        residentMemory = registry.makeGauge(
            descriptor: .named("process_resident_memory_bytes", help: "Resident memory size in bytes."))
        virtualMemory = registry.makeGauge(
            descriptor: .named("process_virtual_memory_bytes", help: "Virtual memory size in bytes."))
        openDescriptors = registry.makeGauge(
            descriptor: .named("process_open_fds", help: "Number of open file descriptors."))
        maxDescriptors = registry.makeGauge(
            descriptor: .named("process_max_fds", help: "Maximum number of open file descriptors."))
        startTime = registry.makeGauge(
            descriptor: .named(
                "process_start_time_seconds", help: "Start time of the process since unix epoch in seconds."))
    }

    /// Brings the process metrics up to date from `statistics`.
    public func record(_ statistics: ProcessStatistics) {
        let increase = exportedCPUSeconds.withLock { exported in
            let increase = max(0, statistics.cpuSeconds - exported)
            exported += increase
            return increase
        }
        if increase > 0 { cpuSeconds.increment(by: increase) }
        residentMemory.set(to: Double(statistics.residentMemoryBytes))
        virtualMemory.set(to: Double(statistics.virtualMemoryBytes))
        openDescriptors.set(to: Double(statistics.openFileDescriptors))
        maxDescriptors.set(to: Double(statistics.maxFileDescriptors))
        startTime.set(to: statistics.startTimeSeconds)
    }

    /// The exposition as of now. `statistics` (``ProcessStatistics/read()``, blocking) when /proc could be read.
    public func render(process statistics: ProcessStatistics?) -> String {
        if let statistics { record(statistics) }
        metrics.synchronize()
        return metrics.registry.emitToString()
    }
}

extension MetricNameDescriptor {
    /// A descriptor of the whole name `name` (units already in it, as Prometheus expects) with its help text.
    static func named(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
