/// A notification received through `LISTEN`; see ``PostgresConnection/waitForNotifications(timeout:)``.
public struct PostgresNotification: Sendable, Equatable {
    /// The channel it was sent on, exactly as given to `NOTIFY` / `pg_notify` (case preserved).
    public var channel: String
    /// The payload; empty when none was given.
    public var payload: String
    /// The process ID of the server backend whose session sent it (that session's
    /// ``PostgresConnection/backendPID``).
    public var backendPID: Int32

    /// Creates a notification.
    public init(channel: String, payload: String, backendPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.backendPID = backendPID
    }
}
