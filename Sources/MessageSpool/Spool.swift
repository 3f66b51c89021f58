import Foundation
import Logging
import Runtime
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// The durable hand-off between the MQTT callback (producer) and the batch writer (consumer):
/// append-only segment files of framed, checksummed records in one directory.
///
/// - **Append** (the MQTT network thread): one `write` of the records a read of the socket delivered
///   (``append(contentsOf:)``), then return; their PUBACKs leave after that, so an acknowledged message
///   is in the page cache and survives a crash of the process (and, with ``FsyncPolicy/always``, of the
///   host: one flush per write). When the spool holds
///   `maxBytes`, or a write fails (full disk, I/O error), `append` waits and retries: the broker
///   stops getting PUBACKs and queues for the session. Nothing is acknowledged that is not stored.
/// - **Read** (the writer's thread): from a cursor, in order. ``commit(through:records:)`` is
///   called after the records' transaction (which stored the same position in
///   `ingest_checkpoints`) committed; fully committed segments are deleted.
/// - **Open**: every segment is verified; a torn or corrupt tail is cut (and logged). Appending
///   always starts a new segment, so a position committed before a crash never points into
///   bytes written after it.
///
/// Blocking file I/O only: never call it from Swift's cooperative pool. All mutable state (the
/// segments, the producer's file and problem, the consumer's cursor and file, the flags) is one
/// `State` behind one ``Guarded`` lock, and the file I/O that changes it happens under that lock too:
/// an append is one `pwrite` of at most a burst of records, a read a `pread` of at most a megabyte, so the
/// producer and the consumer wait for each other only that long.
public final class Spool: Sendable {
    /// When appended bytes are forced to the disk.
    public enum FsyncPolicy: String, Sendable, CaseIterable {
        /// Never: the page cache survives a crash of outletd, not a power loss of the host.
        case never
        /// Every `fsyncIntervalMilliseconds`: a power loss loses at most that much.
        case interval
        /// Before `append` returns (so before the PUBACK): survives a power loss; each message
        /// costs a disk flush.
        case always
    }

    /// Where and how much.
    public struct Settings: Sendable, Equatable {
        public var directory: String
        public var maxBytes: Int64
        public var segmentBytes: Int64
        public var fsync: FsyncPolicy
        public var fsyncIntervalMilliseconds: Int
        /// The `instance_id` that owns the directory (recorded in `spool.instance` at first open); a spool
        /// recorded for another instance is refused. Empty: not checked.
        public var owner: String

        public init(
            directory: String, maxBytes: Int64 = 1 << 30, segmentBytes: Int64 = 64 << 20, fsync: FsyncPolicy = .never,
            fsyncIntervalMilliseconds: Int = 1_000, owner: String = ""
        ) {
            self.directory = directory
            self.maxBytes = maxBytes
            self.segmentBytes = segmentBytes
            self.fsync = fsync
            self.fsyncIntervalMilliseconds = fsyncIntervalMilliseconds
            self.owner = owner
        }
    }

    /// What the spool holds (for metrics and logs).
    public struct Status: Sendable, Equatable {
        /// Bytes of all segment files.
        public var bytes: Int64
        /// Records not yet committed to PostgreSQL.
        public var recordsPending: Int
        /// Receive time of the oldest record not yet committed.
        public var oldestPendingReceivedAt: Date?
    }

    /// One segment file. The last one of ``segments`` is the one appended to.
    struct Segment: Equatable {
        var id: UInt64
        /// Bytes of complete records.
        var size: Int64
        var records: Int
    }

    public let settings: Settings
    /// This spool's identity (`spool.id`); checkpoints of other spools are ignored.
    public let identity: String
    private let logger: Logger
    /// `spool.lock`, write-locked (`fcntl`) for as long as this object lives: another process opening the same
    /// directory fails. (POSIX record locks belong to the process: a second open in the same process, as the
    /// tests do to simulate a crash, is not refused.)
    private let directoryLock: SpoolFile

    /// Everything that changes.
    private struct State: Sendable {
        /// The segment files, oldest first; the last one is appended to.
        var segments: [Segment]
        /// Bytes of all segments.
        var totalBytes: Int64
        /// Records appended and not yet committed.
        var pendingRecords: Int
        /// Everything before this position is committed.
        var committed: SpoolPosition
        /// The producer's file: the last segment.
        var activeFile: SpoolFile
        /// Whether bytes were appended since the last `fsync` (policy `interval`).
        var unsyncedBytes = false
        /// The producer's problem, reported once until it is over.
        var appendProblem: String?
        /// Where the consumer reads next.
        var cursor: SpoolPosition
        /// The consumer's open segment.
        var readFile: (segment: UInt64, file: SpoolFile)?
        /// What the consumer reads a chunk into, kept from read to read (a fresh megabyte each time was
        /// zero-filled and page-faulted in: 9 % of outletd's CPU draining a backlog).
        var readBuffer: [UInt8] = []
        var intakeStopped = false
        var limitLifted = false
        var closed = false

        /// Moves the cursor past the end of sealed segments.
        mutating func normalizeCursor() {
            if cursor.segment < segments[0].id { cursor = SpoolPosition(segment: segments[0].id, offset: 0) }
            while let index = segments.firstIndex(where: { $0.id == cursor.segment }), index < segments.count - 1,
                cursor.offset >= segments[index].size
            {
                cursor = SpoolPosition(segment: segments[index + 1].id, offset: 0)
            }
        }

        /// Whether appending `length` bytes would pass `maxBytes` (never for the first record: it must fit).
        func isFull(adding length: Int64, maxBytes: Int64) -> Bool {
            !limitLifted && pendingRecords > 0 && totalBytes + length > maxBytes
        }
    }

    private let state: Guarded<State>

    static let identityFile = "spool.id"
    static let lockFile = "spool.lock"
    static let ownerFile = "spool.instance"
    static let segmentSuffix = ".seg"
    static let readChunkBytes = 1 << 20

    /// Opens (creating if needed) the spool in `settings.directory`: verifies every segment, cuts
    /// torn tails, starts a new segment to append to.
    public static func open(_ settings: Settings, logger: Logger) throws(SpoolError) -> Spool {
        guard settings.segmentBytes > 0 && settings.maxBytes >= 2 * settings.segmentBytes else {
            throw SpoolError(.invalidSettings, "max_bytes must be at least two segments (segment_bytes)")
        }
        let directory = settings.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SpoolError.system("create directory \(directory)", EACCES)
        }
        let directoryLock = try lock(directory: directory)
        try claim(directory: directory, for: settings.owner)
        var found: [Segment] = []
        for id in try segmentIDs(in: directory) {
            found.append(try verify(segment: id, directory: directory, logger: logger))
        }
        var identity = (try? String(contentsOfFile: "\(directory)/\(identityFile)", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if found.isEmpty || identity?.isEmpty != false {
            // A new (or emptied) spool: a new identity, so no old checkpoint can skip its records.
            let fresh = UUID().uuidString.lowercased()
            let file = try SpoolFile(
                path: "\(directory)/\(identityFile)", flags: O_WRONLY | O_CREAT | O_TRUNC)
            try file.write(Array((fresh + "\n").utf8), at: 0)
            try file.sync()
            identity = fresh
        }
        let activeID = (found.last?.id).map { $0 + 1 } ?? 0
        let active = try SpoolFile(path: path(activeID, in: directory), flags: O_WRONLY | O_CREAT | O_EXCL)
        try SpoolFile.syncDirectory(directory)
        found.append(Segment(id: activeID, size: 0, records: 0))
        let spool = Spool(
            settings: settings, identity: identity ?? "", logger: logger, segments: found, activeFile: active,
            directoryLock: directoryLock)
        if found.count > 1 {
            let status = spool.status()
            logger.info(
                "spool opened",
                metadata: [
                    "directory": "\(directory)", "segments": "\(found.count - 1)",
                    "records": "\(status.recordsPending)", "bytes": "\(status.bytes)",
                ])
        }
        if settings.fsync == .interval { spool.startFlusher() }
        return spool
    }

    private init(
        settings: Settings, identity: String, logger: Logger, segments: [Segment], activeFile: SpoolFile,
        directoryLock: SpoolFile
    ) {
        self.settings = settings
        self.directoryLock = directoryLock
        self.identity = identity
        self.logger = logger
        let start = SpoolPosition(segment: segments.first?.id ?? 0, offset: 0)
        state = Guarded(
            State(
                segments: segments, totalBytes: segments.reduce(0) { $0 + $1.size },
                pendingRecords: segments.reduce(0) { $0 + $1.records }, committed: start, activeFile: activeFile,
                cursor: start))
    }

    // MARK: producer

    /// Appends a message, with `tag` (its route) beside it, waiting while the spool is full or the disk refuses
    /// the write. Returns false only after ``close()``: the message was not stored.
    @discardableResult
    public func append(_ message: RawMessage, tag: [UInt8] = []) -> Bool {
        append(contentsOf: [(message, tag)])
    }

    /// Appends messages in order, each with its tag, in as few writes as the segments allow (one, unless the
    /// active segment fills up), waiting while the spool is full or the disk refuses a write. Returns false only
    /// after ``close()``: the messages from the first one not written on were not stored.
    @discardableResult
    public func append(contentsOf messages: [(message: RawMessage, tag: [UInt8])]) -> Bool {
        // The records one after another in one buffer; `ends[i]` is where record i ends.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(messages.reduce(0) { $0 + SpoolFraming.length(of: $1.message, tag: $1.tag) })
        var ends: [Int] = []
        ends.reserveCapacity(messages.count)
        for (message, tag) in messages {
            SpoolFraming.encode(message, tag: tag, into: &bytes)
            ends.append(bytes.count)
        }
        var next = 0
        while next < ends.count {
            guard let written = appendChunk(bytes, ends: ends, from: next) else { return false }
            next += written
        }
        return true
    }

    /// Writes the longest run of the records from `first` on (at least one) that fits the active segment,
    /// rolling over to a new segment first when not even the first fits; returns how many were written, nil
    /// after ``close()``. Record i is `bytes[ends[i - 1]..<ends[i]]`.
    private func appendChunk(_ bytes: [UInt8], ends: [Int], from first: Int) -> Int? {
        let start = first == 0 ? 0 : ends[first - 1]
        let (maxBytes, segmentBytes) = (settings.maxBytes, settings.segmentBytes)
        enum Outcome {
            case stored(records: Int, resumed: Bool)
            case closed
            /// Not stored yet: report `problem` (once) and wait a second (or for space) before trying again.
            case paused(problem: String, metadata: Logger.Metadata)
        }
        let firstLength = Int64(ends[first] - start)
        while true {
            // While a reported "full" lasts, wait for a commit to free space (or a second).
            let outcome: Outcome = state.wait(
                until: Date().addingTimeInterval(1),
                for: {
                    $0.closed || !($0.appendProblem != nil && $0.isFull(adding: firstLength, maxBytes: maxBytes))
                }
            ) { state, ready in
                if state.closed { return .closed }
                if state.isFull(adding: firstLength, maxBytes: maxBytes) {
                    return .paused(
                        problem: "spool full; intake paused (the broker queues) until the writer frees space",
                        metadata: ["bytes": "\(state.totalBytes)", "max_bytes": "\(maxBytes)"])
                }
                var offset = state.segments[state.segments.count - 1].size
                do throws(SpoolError) {
                    if offset > 0 && offset + firstLength > segmentBytes {
                        try rollOver(after: state.segments[state.segments.count - 1].id, &state)
                        offset = 0
                    }
                } catch {
                    return .paused(
                        problem: "spool write failed; intake paused (the broker queues), retrying every second",
                        metadata: ["error": "\(error)", "code": "\(error.code)"])
                }
                // The run: the first record always (a new segment takes it whatever its size), then every
                // following one while the segment has room and the spool is not full.
                var count = 0
                var length: Int64 = 0
                for end in ends[first...] {
                    let total = Int64(end - start)
                    if count > 0 && (offset + total > segmentBytes || state.isFull(adding: total, maxBytes: maxBytes)) {
                        break
                    }
                    count += 1
                    length = total
                }
                do throws(SpoolError) {
                    try state.activeFile.write(bytes[start..<start + Int(length)], at: offset)
                    if settings.fsync == .always { try state.activeFile.sync() }
                    state.unsyncedBytes = true
                } catch {
                    // A partial run must not stay; the retry writes at the same offset anyway.
                    try? state.activeFile.truncate(to: offset)
                    return .paused(
                        problem: "spool write failed; intake paused (the broker queues), retrying every second",
                        metadata: ["error": "\(error)", "code": "\(error.code)"])
                }
                state.segments[state.segments.count - 1].size += length
                state.segments[state.segments.count - 1].records += count
                state.totalBytes += length
                state.pendingRecords += count
                defer { state.appendProblem = nil }
                return .stored(records: count, resumed: state.appendProblem != nil)
            }
            switch outcome {
            case .stored(let count, let resumed):
                if resumed { logger.notice("spool intake resumed") }
                return count
            case .closed:
                return nil
            case .paused(let problem, let metadata):
                let isNew = state.withLock { state in
                    defer { state.appendProblem = problem }
                    return state.appendProblem != problem
                }
                if isNew { logger.error("\(problem)", metadata: metadata) }
                if !problem.hasPrefix("spool full") {
                    // A failed write is tried again in a second (a full spool waits for space above).
                    _ = state.wait(until: Date().addingTimeInterval(1), for: \.closed) { _, _ in }
                }
            }
        }
    }

    /// Seals the active segment and starts the next.
    private func rollOver(after id: UInt64, _ state: inout State) throws(SpoolError) {
        if settings.fsync != .never { try state.activeFile.sync() }
        let next = try SpoolFile(path: Self.path(id + 1, in: settings.directory), flags: O_WRONLY | O_CREAT | O_EXCL)
        if settings.fsync != .never { try SpoolFile.syncDirectory(settings.directory) }
        state.activeFile = next
        state.segments.append(Segment(id: id + 1, size: 0, records: 0))
    }

    private func startFlusher() {
        let thread = Thread { [self] in
            let interval = Double(settings.fsyncIntervalMilliseconds) / 1_000
            while true {
                let failure: SpoolError? = state.wait(until: Date().addingTimeInterval(interval), for: \.closed) {
                    state, closed in
                    guard !closed, state.unsyncedBytes else { return nil }
                    do throws(SpoolError) {
                        try state.activeFile.sync()
                        state.unsyncedBytes = false
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failure { logger.error("spool fsync failed", metadata: ["error": "\(failure)"]) }
                if state.withLock({ $0.closed }) { return }
            }
        }
        thread.name = "outletd-spool-fsync"
        thread.start()
    }

    /// Intake is over (graceful stop): once everything is read, ``read(upTo:waitingUntil:)``
    /// returns at once and ``isIntakeStoppedAndRead`` becomes true.
    public func stopIntake() {
        state.update { $0.intakeStopped = true }
    }

    /// Lets appends exceed `maxBytes` (the disk permitting). For the stop: the MQTT loop must be able
    /// to finish its current callback, and what it hands over must still be stored.
    public func liftSizeLimit() {
        state.update { $0.limitLifted = true }
    }

    // MARK: consumer

    /// Sets where reading resumes: just after `checkpoint` if it is of this spool, else at the
    /// oldest record. Deletes segments before it. Call once, before the first read.
    public func seek(to checkpoint: SpoolCheckpoint?) throws(SpoolError) {
        try state.update { state throws(SpoolError) in
            let oldest = SpoolPosition(segment: state.segments[0].id, offset: 0)
            var start = oldest
            if let checkpoint {
                if checkpoint.spoolID != identity {
                    logger.notice(
                        "the stored checkpoint is of another spool; reading this spool from its start",
                        metadata: ["checkpoint_spool": "\(checkpoint.spoolID)", "spool": "\(identity)"])
                } else if checkpoint.position.segment < oldest.segment {
                    logger.warning(
                        "the stored checkpoint is before the oldest spool segment; reading from the oldest",
                        metadata: ["checkpoint": "\(checkpoint.position)", "oldest": "\(oldest)"])
                } else {
                    start = checkpoint.position
                }
            }
            var skipped = state.segments.filter { $0.id < start.segment }.reduce(0) { $0 + $1.records }
            if let startSegment = state.segments.first(where: { $0.id == start.segment }), start.offset > 0 {
                if start.offset > startSegment.size {
                    logger.warning(
                        "the stored checkpoint is past the end of its spool segment (its tail was cut); continuing after it",
                        metadata: ["checkpoint": "\(start)", "segment_bytes": "\(startSegment.size)"])
                }
                skipped += try Self.scan(
                    path: Self.path(startSegment.id, in: settings.directory), size: startSegment.size,
                    upTo: min(start.offset, startSegment.size)
                ).records
            }
            state.pendingRecords -= skipped
            state.cursor = start
            state.committed = start
            deleteSegments(before: start, &state)
        }
    }

    /// Reads up to `maxRecords` records after the cursor. Waits until at least one is there, intake
    /// stopped, or `deadline` passes; then returns what is there without waiting more, across
    /// segment boundaries.
    public func read(upTo maxRecords: Int, waitingUntil deadline: Date) throws(SpoolError) -> [SpoolRecord] {
        try state.wait(
            until: deadline,
            for: { state in
                var probe = state
                probe.normalizeCursor()
                let current = probe.segments.first { $0.id == probe.cursor.segment }
                return current.map { $0.size > probe.cursor.offset } ?? true || state.intakeStopped || state.closed
            }
        ) { state, _ throws(SpoolError) in
            var records: [SpoolRecord] = []
            while records.count < maxRecords {
                let before = records.count
                try readSegment(upTo: maxRecords, into: &records, &state)
                if records.count == before { break }
            }
            return records
        }
    }

    /// Reads the records of the cursor's segment that are there, up to `maxRecords` in all.
    private func readSegment(upTo maxRecords: Int, into records: inout [SpoolRecord], _ state: inout State)
        throws(SpoolError)
    {
        state.normalizeCursor()
        guard let segment = state.segments.first(where: { $0.id == state.cursor.segment }),
            segment.size > state.cursor.offset
        else { return }
        let file: SpoolFile
        if let readFile = state.readFile, readFile.segment == segment.id {
            file = readFile.file
        } else {
            file = try SpoolFile(path: Self.path(segment.id, in: settings.directory), flags: O_RDONLY)
            state.readFile = (segment.id, file)
        }
        var position = state.cursor.offset
        while records.count < maxRecords && position < segment.size {
            let want = Int(min(segment.size - position, Int64(Self.readChunkBytes)))
            var read = try file.read(count: want, at: position, into: &state.readBuffer)
            var used = 0
            parsing: while records.count < maxRecords {
                let decoded = state.readBuffer.withUnsafeBytes { buffer in
                    SpoolFraming.decode(UnsafeRawBufferPointer(rebasing: buffer[..<read]), at: used)
                }
                switch decoded {
                case .record(let message, let tag, let length):
                    used += length
                    records.append(
                        SpoolRecord(
                            message: message, tag: tag,
                            end: SpoolPosition(segment: segment.id, offset: position + Int64(used))))
                case .incomplete(let length):
                    if used > 0 || position + Int64(length) > segment.size { break parsing }
                    // One record larger than a chunk: read it whole.
                    read = try file.read(count: length, at: position, into: &state.readBuffer)
                case .corrupt(let reason):
                    // Verified at open and written by us since: only a failing disk gets here.
                    logger.error(
                        "spool record unreadable; skipping the rest of its segment",
                        metadata: [
                            "segment": "\(segment.id)", "offset": "\(position + Int64(used))", "reason": "\(reason)",
                            "bytes_skipped": "\(segment.size - position - Int64(used))",
                        ])
                    state.cursor = SpoolPosition(segment: segment.id, offset: segment.size)
                    return
                }
            }
            if used == 0 { break }
            position += Int64(used)
        }
        state.cursor = SpoolPosition(segment: segment.id, offset: position)
    }

    /// Records up to `position` are committed (with `position` in `ingest_checkpoints`);
    /// `records` is how many that commit covered. Deletes segments that are now fully committed.
    public func commit(through position: SpoolPosition, records: Int) {
        state.update { state in
            state.committed = max(state.committed, position)
            state.pendingRecords -= records
            deleteSegments(before: position, &state)
        }
    }

    /// Whether ``stopIntake()`` was called.
    public var isIntakeStopped: Bool {
        state.withLock { $0.intakeStopped }
    }

    /// Whether ``stopIntake()`` was called and every record appended has been read.
    public var isIntakeStoppedAndRead: Bool {
        state.withLock { state in
            guard state.intakeStopped else { return false }
            state.normalizeCursor()
            let last = state.segments[state.segments.count - 1]
            return state.cursor.segment == last.id && state.cursor.offset >= last.size
        }
    }

    /// Deletes sealed segments wholly before `position`.
    private func deleteSegments(before position: SpoolPosition, _ state: inout State) {
        while state.segments.count > 1 {
            let first = state.segments[0]
            let done = first.id < position.segment || (first.id == position.segment && position.offset >= first.size)
            guard done else { return }
            let path = Self.path(first.id, in: settings.directory)
            if unlink(path) != 0 && errno != ENOENT {
                logger.error(
                    "cannot delete a committed spool segment", metadata: ["error": "\(SpoolError.system(path))"])
                return
            }
            state.segments.removeFirst()
            state.totalBytes -= first.size
        }
    }

    // MARK: status and life

    /// Bytes, pending records and the age of the oldest; cheap enough for every metrics snapshot.
    public func status() -> Status {
        let (bytes, pending, oldest) = state.withLock { state -> (Int64, Int, SpoolPosition?) in
            guard state.pendingRecords > 0 else { return (state.totalBytes, 0, nil) }
            var position = state.committed
            if position.segment < state.segments[0].id {
                position = SpoolPosition(segment: state.segments[0].id, offset: 0)
            }
            while let index = state.segments.firstIndex(where: { $0.id == position.segment }),
                index < state.segments.count - 1, position.offset >= state.segments[index].size
            {
                position = SpoolPosition(segment: state.segments[index + 1].id, offset: 0)
            }
            return (state.totalBytes, state.pendingRecords, position)
        }
        var status = Status(bytes: bytes, recordsPending: max(0, pending), oldestPendingReceivedAt: nil)
        if let oldest,
            let file = try? SpoolFile(path: Self.path(oldest.segment, in: settings.directory), flags: O_RDONLY),
            let header = try? file.read(count: SpoolFraming.headerBytes + 8, at: oldest.offset)
        {
            status.oldestPendingReceivedAt = SpoolFraming.receivedAt(header: header)
        }
        return status
    }

    /// Stops everything: waiting appends return false, reads return empty. With an fsync policy,
    /// the active segment is flushed.
    public func close() {
        state.update { state in
            state.closed = true
            if settings.fsync != .never && state.unsyncedBytes { try? state.activeFile.sync() }
        }
    }

    // MARK: files

    /// Write-locks `spool.lock` in `directory`, or throws ``SpoolError/Code/inUse`` when another process holds it.
    private static func lock(directory: String) throws(SpoolError) -> SpoolFile {
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
    private static func claim(directory: String, for owner: String) throws(SpoolError) {
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
    private static func verify(segment id: UInt64, directory: String, logger: Logger) throws(SpoolError) -> Segment {
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
