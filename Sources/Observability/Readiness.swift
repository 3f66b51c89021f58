/// Whether an instance should receive traffic (`/readyz`): connected to the broker and the
/// database, and not too far behind. Pure, so it is tested with a table.
public struct Readiness: Sendable, Equatable {
    public var isReady: Bool
    /// Why not, in words for an operator; also what an operator should know while it is ready (no standby has
    /// the readings yet, with `database.durability: replicated`: ingest goes on into the spool).
    public var reasons: [String]

    public static func evaluate(_ snapshot: IngestMetrics.Snapshot, maxBacklogMessages: Int) -> Readiness {
        var reasons: [String] = []
        if !snapshot.brokerConnected { reasons.append("broker disconnected") }
        if !snapshot.databaseConnected { reasons.append("database unreachable") }
        if snapshot.spoolRecordsPending > maxBacklogMessages {
            reasons.append("backlog of \(snapshot.spoolRecordsPending) messages is over \(maxBacklogMessages)")
        }
        let ready = reasons.isEmpty
        if let problem = snapshot.replication?.problem { reasons.append(problem) }
        return Readiness(isReady: ready, reasons: reasons)
    }

    /// `{"ready":false,"reasons":["broker disconnected"]}`.
    public var json: String {
        let list = reasons.map { JSONLogHandler.quoted($0) }.joined(separator: ",")
        return "{\"ready\":\(isReady),\"reasons\":[\(list)]}"
    }
}
