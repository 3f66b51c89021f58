#if canImport(Glibc)
    import Glibc
#endif

/// An open file of the spool: a file descriptor with the few calls the spool needs, each turning
/// `-1`/`errno` into a ``SpoolError``. Closed when the last reference goes. Used only under the
/// spool's locks.
final class SpoolFile: Sendable {
    let descriptor: Int32
    let path: String

    /// Opens `path` with `flags` (and mode 0640 when creating).
    init(path: String, flags: Int32) throws(SpoolError) {
        let descriptor = Glibc.open(path, flags | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw SpoolError.system("open \(path)") }
        self.descriptor = descriptor
        self.path = path
    }

    deinit { Glibc.close(descriptor) }

    /// The file's size, bytes.
    func size() throws(SpoolError) -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw SpoolError.system("stat \(path)") }
        return Int64(status.st_size)
    }

    /// Writes all of `bytes` at `offset` (retrying short writes and EINTR).
    func write(_ bytes: [UInt8], at offset: Int64) throws(SpoolError) {
        try write(bytes[...], at: offset)
    }

    func write(_ bytes: ArraySlice<UInt8>, at offset: Int64) throws(SpoolError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pwrite(descriptor, base + written, buffer.count - written, off_t(offset) + off_t(written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw SpoolError.system("write \(path)")
            }
            written += result
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    func read(count: Int, at offset: Int64) throws(SpoolError) -> [UInt8] {
        var bytes: [UInt8] = []
        let read = try read(count: count, at: offset, into: &bytes)
        bytes.removeLast(bytes.count - read)
        return bytes
    }

    /// Reads up to `count` bytes at `offset` into the start of `buffer` (grown to `count` when smaller; its
    /// bytes past what was read are left as they were); returns how many were read (fewer at the end of the
    /// file). The consumer reads every chunk into the same buffer: no allocation, no zero-filling.
    func read(count: Int, at offset: Int64, into buffer: inout [UInt8]) throws(SpoolError) -> Int {
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        var done = 0
        while done < count {
            let result = buffer.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pread(descriptor, base + done, count - done, off_t(offset) + off_t(done))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw SpoolError.system("read \(path)")
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    func truncate(to length: Int64) throws(SpoolError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw SpoolError.system("truncate \(path)") }
    }

    /// Forces the file's data to the disk.
    func sync() throws(SpoolError) {
        guard fdatasync(descriptor) == 0 else { throw SpoolError.system("fdatasync \(path)") }
    }

    /// Forces a directory's entries (new or removed files) to the disk.
    static func syncDirectory(_ path: String) throws(SpoolError) {
        let directory = try SpoolFile(path: path, flags: O_RDONLY | O_DIRECTORY)
        guard fsync(directory.descriptor) == 0 else { throw SpoolError.system("fsync \(path)") }
    }
}
