import Foundation
import Logging
import Runtime
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// The spool's files: the directory lock and owner, segment paths and ids, and the scan that verifies a
/// segment and finds a torn tail after a crash.
extension Spool {
    // MARK: files

    /// Write-locks `spool.lock` in `directory`, or throws ``SpoolError/Code/inUse`` when another process holds it.
    static func lock(directory: String) throws(SpoolError) -> SpoolFile {
        let file = try SpoolFile(path: "\(directory)/\(lockFile)", flags: O_RDWR | O_CREAT)
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(file.descriptor, F_SETLK, &request) == 0 else {
            let errorNumber = errno
            if errorNumber == EAGAIN || errorNumber == EACCES {
                var holder = flock()
                holder.l_type = Int16(F_WRLCK)
                let pid = fcntl(file.descriptor, F_GETLK, &holder) == 0 ? " by process \(holder.l_pid)" : ""
                throw SpoolError(
                    .inUse, "\(directory) is in use\(pid); every instance needs a spool.directory of its own")
            }
            throw SpoolError.system("lock \(file.path)", errorNumber)
        }
        return file
    }

    /// Records `owner` in `spool.instance` the first time, and refuses a directory recorded for another instance:
    /// its records and checkpoint belong to that instance's session.
    static func claim(directory: String, for owner: String) throws(SpoolError) {
        guard !owner.isEmpty else { return }
        let path = "\(directory)/\(ownerFile)"
        let recorded = (try? String(contentsOfFile: path, encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if let recorded, !recorded.isEmpty {
            guard recorded == owner else {
                throw SpoolError(
                    .inUse,
                    "\(directory) belongs to instance \"\(recorded)\" (\(ownerFile)), not \"\(owner)\"; "
                        + "every instance needs a spool.directory of its own")
            }
            return
        }
        let file = try SpoolFile(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        try file.write(Array((owner + "\n").utf8), at: 0)
        try file.sync()
    }

    static func path(_ id: UInt64, in directory: String) -> String {
        let digits = String(id)
        return "\(directory)/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + segmentSuffix
    }

    static func segmentIDs(in directory: String) throws(SpoolError) -> [UInt64] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw SpoolError.system("list \(directory)", EACCES)
        }
        return names.compactMap { name -> UInt64? in
            guard name.hasSuffix(segmentSuffix), name.count == 20 + segmentSuffix.count else { return nil }
            return UInt64(name.prefix(20))
        }.sorted()
    }

    /// What a scan of a segment file found: complete records up to `validBytes`, and why it
    /// stopped before the end of the file (nil when it did not).
    struct ScanResult: Equatable {
        var validBytes: Int64
        var records: Int
        var problem: String?
    }

    /// Walks the records of a segment file from its start up to `limit` bytes, checking each.
    static func scan(path: String, size: Int64, upTo limit: Int64) throws(SpoolError) -> ScanResult {
        let file = try SpoolFile(path: path, flags: O_RDONLY)
        var position: Int64 = 0
        var records = 0
        while position < limit {
            let want = Int(min(limit - position, Int64(readChunkBytes)))
            var chunk = try file.read(count: want, at: position)
            var used = 0
            var problem: String?
            parsing: while used < chunk.count {
                switch chunk.withUnsafeBytes({ SpoolFraming.decode($0, at: used) }) {
                case .record(_, _, let length):
                    used += length
                    records += 1
                case .incomplete(let length):
                    if used > 0 { break parsing }
                    if position + Int64(length) > limit {
                        problem = "torn record (\(length) bytes announced, \(limit - position) there)"
                        break parsing
                    }
                    chunk = try file.read(count: length, at: position)
                case .corrupt(let reason):
                    problem = reason
                    break parsing
                }
            }
            position += Int64(used)
            if let problem { return ScanResult(validBytes: position, records: records, problem: problem) }
            if used == 0 { break }
        }
        return ScanResult(validBytes: position, records: records, problem: nil)
    }

    /// Scans a segment left by an earlier run and cuts it after its last intact record.
    static func verify(segment id: UInt64, directory: String, logger: Logger) throws(SpoolError) -> Segment {
        let path = path(id, in: directory)
        let file = try SpoolFile(path: path, flags: O_RDWR)
        let size = try file.size()
        let result = try scan(path: path, size: size, upTo: size)
        if result.validBytes < size {
            logger.warning(
                "spool: cut a torn or corrupt tail",
                metadata: [
                    "segment": "\(path)", "bytes_cut": "\(size - result.validBytes)",
                    "records_kept": "\(result.records)", "reason": "\(result.problem ?? "unknown")",
                ])
            try file.truncate(to: result.validBytes)
            try file.sync()
        }
        return Segment(id: id, size: result.validBytes, records: result.records)
    }
}
