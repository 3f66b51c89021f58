#if canImport(Glibc)
    import Glibc
#endif

/// A spool operation failed: which one, on which file, and the system's reason.
public struct SpoolError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        /// A system call failed (`errno` says why).
        public static let io = Code(name: "io")
        /// The disk is full (`ENOSPC`, `EDQUOT`).
        public static let noSpace = Code(name: "noSpace")
        /// The settings cannot work (e.g. `max_bytes` under two segments).
        public static let invalidSettings = Code(name: "invalidSettings")
        /// The directory is locked by another process, or belongs to another instance.
        public static let inUse = Code(name: "inUse")
        public var description: String { name }
    }

    public var code: Code
    /// The operation and file, e.g. `write /var/lib/outletd/spool/…`.
    public var context: String
    /// `errno` of a failed system call, else 0.
    public var errorNumber: Int32

    init(_ code: Code, _ context: String, errorNumber: Int32 = 0) {
        self.code = code
        self.context = context
        self.errorNumber = errorNumber
    }

    /// The error of a failed system call (from `errno`).
    static func system(_ context: String, _ errorNumber: Int32 = errno) -> SpoolError {
        let code: Code = errorNumber == ENOSPC || errorNumber == EDQUOT ? .noSpace : .io
        return SpoolError(code, context, errorNumber: errorNumber)
    }

    public var description: String {
        guard errorNumber != 0 else { return "spool: \(context)" }
        return "spool: \(context): \(String(cString: strerror(errorNumber)))"
    }
}
