import CMosquitto

/// Process-wide libmosquitto set-up.
enum MosquittoLibrary {
    /// `mosquitto_lib_init`'s result. A static `let` is initialised exactly once, thread-safely, on first
    /// use, which is what `mosquitto_lib_init` needs (it is not itself thread-safe). Never cleaned up: the
    /// library stays usable for the life of the process.
    private static let initializationResult: Int32 = mosquitto_lib_init()

    /// Initialises libmosquitto on first call; later calls only report the first result.
    static func initialize() throws(MQTTError) {
        try MQTTError.check(initializationResult, "initialising libmosquitto")
    }
}

/// A `struct mosquitto *`, immutable for the life of its ``MQTTClient``.
///
/// `@unchecked Sendable` because the pointer itself never changes and libmosquitto guards the object's
/// state with its own mutexes once its network thread runs (`mosquitto_loop_start`): publish, subscribe,
/// unsubscribe and disconnect are documented as callable from any thread then. Options are only set in
/// ``MQTTClient/init(configuration:onMessage:)``, before any other thread can see the handle, and the object
/// is destroyed in `deinit` after the network thread was joined.
struct MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
