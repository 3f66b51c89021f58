import CLibPQ

extension PostgresConnection {
    /// Subscribes this connection to `channel` (`LISTEN "channel"`, quoted, so case and any characters are kept).
    /// - Throws: ``PostgresError/Code/invalidArgument`` for an empty channel or one longer than 63 bytes.
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(try Self.quotedChannel(channel))")
    }

    /// Unsubscribes this connection from `channel`.
    public func unlisten(_ channel: String) throws(PostgresError) {
        try execute("UNLISTEN \(try Self.quotedChannel(channel))")
    }

    /// Sends a notification (`SELECT pg_notify($1, $2)`). Inside a transaction it is delivered on commit.
    public func notify(_ channel: String, payload: String = "") throws(PostgresError) {
        _ = try Self.quotedChannel(channel)
        try execute("SELECT pg_notify($1, $2)", [channel, payload])
    }

    /// Waits up to `timeout` for notifications on the channels this connection listens to and returns all that
    /// arrived, oldest first; an empty array when none came in time. Returns as soon as at least one is there
    /// (including any that arrived during earlier statements), without waiting for the rest of the timeout.
    ///
    /// - Throws: ``PostgresError/Code/connectionLost`` when the connection is broken (e.g. the server restarted).
    public func waitForNotifications(timeout: Duration) throws(PostgresError) -> [PostgresNotification] {
        let connection = try requireConnection(query: nil)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: max(timeout, .zero))
        var notifications = Self.takeNotifications(connection)
        while notifications.isEmpty {
            let milliseconds = Self.milliseconds(until: deadline, clock: clock)
            if try LibPQ.waitUntilReadable(connection, milliseconds: milliseconds) {
                try LibPQ.consumeInput(connection)
                notifications = Self.takeNotifications(connection)
            }
            if clock.now >= deadline {
                break
            }
        }
        return notifications
    }

    /// Pops every notification libpq has already read.
    private static func takeNotifications(_ connection: OpaquePointer) -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(connection) {
            notifications.append(
                PostgresNotification(
                    channel: LibPQ.string(notify.pointee.relname) ?? "",
                    payload: LibPQ.string(notify.pointee.extra) ?? "",
                    backendPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }

    /// Milliseconds left until `deadline`, rounded up, for `poll`.
    private static func milliseconds(until deadline: ContinuousClock.Instant, clock: ContinuousClock) -> Int32 {
        let remaining = clock.now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }

    /// `channel` as a double-quoted SQL identifier.
    static func quotedChannel(_ channel: String) throws(PostgresError) -> String {
        guard !channel.isEmpty, channel.utf8.count <= 63 else {
            throw PostgresError(
                code: .invalidArgument, message: "a channel name must be 1 to 63 bytes long, not \(channel.utf8.count)")
        }
        try LibPQ.rejectNUL(channel, what: "channel name")
        var quoted = "\""
        for character in channel {
            quoted.append(character)
            if character == "\"" {
                quoted.append(character)
            }
        }
        quoted.append("\"")
        return quoted
    }
}
