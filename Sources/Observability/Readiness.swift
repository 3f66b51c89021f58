/// Whether an instance should receive traffic (`/readyz`): connected to the broker and the
/// database, and not too far behind. Pure, so it is tested with a table.
public struct Readiness: Sendable, Equatable {
    public var isReady: Bool { reasons.isEmpty }
    /// Why not, in words for an operator (empty when ready).
    public var reasons: [String]

    public static func evaluate(_ snapshot: IngestMetrics.Snapshot, maxBacklogMessages: Int) -> Readiness {
        var reasons: [String] = []
        if !snapshot.brokerConnected { reasons.append("broker disconnected") }
        if !snapshot.databaseConnected { reasons.append("database unreachable") }
        if snapshot.spoolRecordsPending > maxBacklogMessages {
            reasons.append("backlog of \(snapshot.spoolRecordsPending) messages is over \(maxBacklogMessages)")
        }
        return Readiness(reasons: reasons)
    }

    /// `{"ready":false,"reasons":["broker disconnected"]}`.
    public var json: String {
        let list = reasons.map { JSONLogHandler.quoted($0) }.joined(separator: ",")
        return "{\"ready\":\(isReady),\"reasons\":[\(list)]}"
    }
}
