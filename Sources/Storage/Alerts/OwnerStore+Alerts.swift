import Foundation
import Postgres

extension OwnerStore {
    /// $1 the session ids of the app's open live streams: for each (its position in $1, from 1) the number of its
    /// owner's open alert incidents, the page's badge. One statement for all the streams of a read.
    static let liveOpenAlertsSQL = """
        SELECT s.n, (SELECT count(*) FROM alert_incidents i WHERE i.app_user_id = a.user_id AND i.state = 'open')
        FROM unnest($1::bigint[]) WITH ORDINALITY AS s(id, n) JOIN app_sessions a ON a.id = s.id
        """

    /// The open alert incidents of each session's owner, by the session's index in `sessions`.
    public func liveOpenAlerts(sessions: [Int64]) throws -> [Int: Int] {
        guard !sessions.isEmpty else { return [:] }
        let result = try connection.execute(Self.liveOpenAlertsSQL, [sessions])
        var counts: [Int: Int] = [:]
        for row in 0..<result.rowCount {
            guard let ordinal = try result.int(row: row, column: 0), (1...sessions.count).contains(ordinal) else {
                continue
            }
            counts[ordinal - 1] = try result.int(row: row, column: 1) ?? 0
        }
        return counts
    }
}
