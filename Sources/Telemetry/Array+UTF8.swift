extension [UInt8] {
    /// Appends the first `maxCount` bytes of `string`'s UTF-8 (all of them by default) in one copy.
    /// (`bytes += string.utf8.prefix(n)` copies byte by byte, through the generic sequence path: 2 % of outletd's
    /// CPU in a backlog drain, where every message's topic and route go into its spool record, docs/PERFORMANCE.md.)
    public mutating func appendUTF8(of string: String, maxCount: Int = .max) {
        let copied: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            append(contentsOf: UnsafeBufferPointer(rebasing: utf8.prefix(maxCount)))
        }
        if copied == nil {
            append(contentsOf: string.utf8.prefix(maxCount))
        }
    }
}
