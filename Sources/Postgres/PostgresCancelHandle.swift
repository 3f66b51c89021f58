import CLibPQ
import Synchronization

/// Cancels the statement running on a ``PostgresConnection`` from any thread (`PQcancel`).
///
/// Get one with ``PostgresConnection/makeCancelHandle()`` on the connection's own thread, then give it to the
/// thread that may need to cancel (a watchdog, a shutdown handler). ``cancel()`` is safe to call concurrently with
/// anything the connection's thread does, and from several threads at once: libpq's `PGcancel` is a read-only copy
/// of what the cancel request needs, and this type serialises access to it with a mutex anyway.
///
/// Cancelling is a request: if it arrives while a statement runs, that statement fails with SQLSTATE `57014`
/// (``PostgresError/Code/queryFailed``, not a connection error); if nothing runs, nothing happens.
public final class PostgresCancelHandle: Sendable {
    /// The `PGcancel` object, owned by this handle and freed in `deinit`.
    private let cancelObject: Mutex<OpaquePointer>

    /// Takes ownership of a `PGcancel` from `PQgetCancel`, which nothing else references.
    init(taking cancelObject: OpaquePointer) {
        // The caller hands over its only reference, so moving it into the mutex's region is safe.
        nonisolated(unsafe) let owned = cancelObject
        self.cancelObject = Mutex(owned)
    }

    deinit {
        cancelObject.withLock { PQfreeCancel($0) }
    }

    /// Sends the cancel request over a new short-lived connection to the server and returns once it was sent.
    /// - Throws: ``PostgresError/Code/cancelFailed`` with libpq's message when the request could not be sent.
    public func cancel() throws(PostgresError) {
        try cancelObject.withLock { (cancelObject) throws(PostgresError) in
            try LibPQ.cancel(cancelObject)
        }
    }
}
