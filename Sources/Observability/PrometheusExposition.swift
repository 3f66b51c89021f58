import Telemetry

/// Renders an ``IngestMetrics/Snapshot`` in the Prometheus text exposition format (version 0.0.4).
/// Every metric is named `outletd_…`, with its unit in the name as Prometheus expects.
public enum PrometheusExposition {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render(_ snapshot: IngestMetrics.Snapshot, instance: String) -> String {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            text += "# HELP outletd_\(name) \(help)\n# TYPE outletd_\(name) \(type)\n"
            for sample in samples {
                text += "outletd_\(name)\(sample.labels) \(sample.value)\n"
            }
        }
        func number(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
        metric(
            "messages_received_total", "counter", "MQTT messages received.", [("", String(snapshot.messagesReceived))])
        metric(
            "readings_stored_total", "counter", "Readings inserted into samples.",
            [("", String(snapshot.readingsStored))])
        metric(
            "readings_duplicate_total", "counter", "Valid readings already stored (replays, repeats).",
            [("", String(snapshot.readingsDuplicate))])
        metric(
            "rejected_total", "counter", "Messages or readings rejected, by reason.",
            RejectionReason.allCases.map { ("{reason=\"\($0.rawValue)\"}", String(snapshot.rejected[$0] ?? 0)) })
        metric(
            "messages_ignored_total", "counter",
            "Messages a firmware sends in normal operation that carried no reading, by kind.",
            IgnoredKind.allCases.map { ("{kind=\"\($0.rawValue)\"}", String(snapshot.ignored[$0] ?? 0)) })
        metric(
            "batches_committed_total", "counter", "Write transactions committed.",
            [("", String(snapshot.batchesCommitted))])
        metric(
            "database_errors_total", "counter", "Failed write attempts (each is retried).",
            [("", String(snapshot.databaseErrors))])
        for (name, help, histogram) in [
            ("batch_rows", "Rows per committed batch.", snapshot.batchRows),
            ("commit_seconds", "Seconds from BEGIN to COMMIT of a batch.", snapshot.commitSeconds),
        ] {
            var samples = zip(histogram.bounds, histogram.counts).map { bound, count in
                ("_bucket{le=\"\(number(bound))\"}", String(count))
            }
            samples.append(("_bucket{le=\"+Inf\"}", String(histogram.count)))
            samples.append(("_sum", number(histogram.sum)))
            samples.append(("_count", String(histogram.count)))
            metric(name, "histogram", help, samples)
        }
        metric(
            "broker_connected", "gauge", "1 while connected to the MQTT broker.",
            [("", snapshot.brokerConnected ? "1" : "0")])
        metric(
            "database_connected", "gauge", "1 while the writer reaches PostgreSQL.",
            [("", snapshot.databaseConnected ? "1" : "0")])
        metric(
            "spool_records_pending", "gauge", "Messages in the spool not yet committed to PostgreSQL.",
            [("", String(snapshot.spoolRecordsPending))])
        metric("spool_bytes", "gauge", "Bytes of the spool's segment files.", [("", String(snapshot.spoolBytes))])
        metric(
            "spool_oldest_record_age_seconds", "gauge", "How long the oldest uncommitted message has waited.",
            [("", number(snapshot.spoolOldestRecordAgeSeconds))])
        metric(
            "commands_published_total", "counter", "Commands published to outlets.",
            [("", String(snapshot.commandsPublished))])
        metric(
            "command_results_total", "counter", "Command results published on set/result, by result.",
            snapshot.commandResults.sorted { $0.key < $1.key }.map {
                ("{result=\"\(escape($0.key))\"}", String($0.value))
            })
        metric("info", "gauge", "This instance.", [("{instance=\"\(escape(instance))\"}", "1")])
        return text
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
