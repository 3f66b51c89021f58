import Postgres
import Telemetry

/// Rejections met outside a batch — the command relay's refused requests and reports — counted by reason and
/// kept in `rejected_messages` as ``BatchStore`` does for readings.
public struct RejectionStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Counts them by reason and keeps the newest `keepMessages` in `rejected_messages`, with their excerpts.
    public func record(_ rejections: [RejectedReading], excerpts: [String], keepMessages: Int) throws {
        guard !rejections.isEmpty else { return }
        try connection.transaction {
            var counts: [String: Int64] = [:]
            for rejection in rejections { counts[rejection.reason.rawValue, default: 0] += 1 }
            let reasons = counts.keys.sorted()
            try connection.execute(
                """
                INSERT INTO rejection_counts AS r (reason, count, last_at)
                SELECT reason, count, clock_timestamp() FROM unnest($1::text[], $2::bigint[]) AS c(reason, count)
                ON CONFLICT (reason) DO UPDATE SET count = r.count + excluded.count, last_at = excluded.last_at
                """, [reasons, reasons.map { counts[$0] ?? 0 }])
            guard keepMessages > 0 else { return }
            try connection.execute(
                """
                INSERT INTO rejected_messages (received_at, topic, device_code, reason, detail, payload_excerpt)
                SELECT timestamptz 'epoch' + received_us * interval '1 microsecond', topic, NULLIF(device_code, ''),
                       reason, detail, payload_excerpt
                FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                     AS r(received_us, topic, device_code, reason, detail, payload_excerpt)
                """,
                [
                    rejections.map { CopyBinaryEncoder.microseconds($0.receivedAt) }, rejections.map(\.topic),
                    rejections.map { $0.deviceCode ?? "" }, rejections.map(\.reason.rawValue),
                    rejections.map(\.detail), excerpts,
                ])
            try connection.execute(
                "DELETE FROM rejected_messages WHERE id <= (SELECT max(id) FROM rejected_messages) - $1",
                [Int64(keepMessages)])
        }
    }
}
