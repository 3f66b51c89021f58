/// libpq's multi-host connection strings: `postgresql://db1:5432,db2:5432/outletd` or `host=db1,db2 port=5432,5432`.
///
/// libpq tries the hosts in order and takes the first that answers and suits `target_session_attrs` (default
/// `any`). outletd writes on every connection, so a connection string that names several hosts and says nothing
/// of the kind of session gets `target_session_attrs=read-write`: after a failover, the reconnect finds the new
/// primary instead of settling on the first host, now a standby (docs/HIGH-AVAILABILITY.md).
public enum MultiHost {
    /// How many hosts `connectionString` names (1 when it names one or none).
    public static func hostCount(_ connectionString: String) -> Int {
        guard let hosts = hostList(connectionString) else { return 1 }
        return max(1, hosts.split(separator: ",", omittingEmptySubsequences: false).count)
    }

    /// `connectionString`, with `target_session_attrs=read-write` when it names several hosts and no
    /// `target_session_attrs`; otherwise unchanged.
    public static func requiringPrimary(_ connectionString: String) -> String {
        guard hostCount(connectionString) > 1, !connectionString.contains("target_session_attrs") else {
            return connectionString
        }
        if ConnectionStringRedaction.isURI(connectionString) {
            return connectionString + (connectionString.contains("?") ? "&" : "?") + "target_session_attrs=read-write"
        }
        return connectionString + " target_session_attrs=read-write"
    }

    /// The host part: the URI's authority after any `user:password@`, or the value of `host=` / `hostaddr=`.
    static func hostList(_ connectionString: String) -> Substring? {
        if ConnectionStringRedaction.isURI(connectionString) {
            guard let schemeEnd = connectionString.range(of: "://")?.upperBound else { return nil }
            let rest = connectionString[schemeEnd...]
            let authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex)]
            return authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        }
        for key in ["host=", "hostaddr="] {
            var searchStart = connectionString.startIndex
            while let range = connectionString.range(of: key, range: searchStart..<connectionString.endIndex) {
                searchStart = range.upperBound
                // A keyword starts the string or follows a space.
                guard
                    range.lowerBound == connectionString.startIndex
                        || connectionString[connectionString.index(before: range.lowerBound)] == " "
                else { continue }
                let value = connectionString[range.upperBound...]
                return value[..<(value.firstIndex(of: " ") ?? value.endIndex)]
            }
        }
        return nil
    }
}
