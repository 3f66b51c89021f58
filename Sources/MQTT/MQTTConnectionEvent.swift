/// A change in an ``MQTTClient``'s connection, as reported by ``MQTTClient/events``.
public enum MQTTConnectionEvent: Sendable, Equatable {
    /// The broker accepted the CONNECT. `sessionPresent` is true when it resumed a stored session
    /// (subscriptions and queued messages kept while we were away).
    case connected(sessionPresent: Bool)
    /// A connection attempt failed (broker unreachable, name lookup failed, CONNACK refused). The client
    /// keeps retrying with its backoff.
    case connectionFailed(reason: String)
    /// An established connection ended. Unless the client is being stopped, it reconnects by itself.
    case disconnected(reason: String)
}
