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
///   `ingest_checkpoints`) committed; fully committed segments are deleted. With
///   ``Settings/keepUntilReleased`` they stay until ``release(through:)`` too (a standby has the commit), and
///   ``seek(to:)`` can move the cursor back to what a new primary lacks after a failover.
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
        /// Whether committed records stay until ``Spool/release(through:)`` (`database.durability: replicated`:
        /// until a standby has their commit) rather than going at ``Spool/commit(through:records:)``.
        public var keepUntilReleased: Bool

        public init(
            directory: String, maxBytes: Int64 = 1 << 30, segmentBytes: Int64 = 64 << 20, fsync: FsyncPolicy = .never,
            fsyncIntervalMilliseconds: Int = 1_000, owner: String = "", keepUntilReleased: Bool = false
        ) {
            self.directory = directory
            self.maxBytes = maxBytes
            self.segmentBytes = segmentBytes
            self.fsync = fsync
            self.fsyncIntervalMilliseconds = fsyncIntervalMilliseconds
            self.owner = owner
            self.keepUntilReleased = keepUntilReleased
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
        /// Bytes of records committed and kept until released (``Settings/keepUntilReleased``; 0 without).
        public var unconfirmedBytes: Int64 = 0
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
    let logger: Logger
    /// `spool.lock`, write-locked (`fcntl`) for as long as this object lives: another process opening the same
    /// directory fails. (POSIX record locks belong to the process: a second open in the same process, as the
    /// tests do to simulate a crash, is not refused.)
    private let directoryLock: SpoolFile

    /// Everything that changes.
    struct State: Sendable {
        /// The segment files, oldest first; the last one is appended to.
        var segments: [Segment]
        /// Bytes of all segments.
        var totalBytes: Int64
        /// Records appended and not yet committed.
        var pendingRecords: Int
        /// Everything before this position is committed.
        var committed: SpoolPosition
        /// Everything before this position may be deleted once committed (``Settings/keepUntilReleased``).
        var released: SpoolPosition
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

        /// Whether appending `length` bytes would pass `maxBytes` (never for the first record: it must fit). Records
        /// committed and kept until released count: sealed segments are there only while something in them waits.
        func isFull(adding length: Int64, maxBytes: Int64) -> Bool {
            !limitLifted && (pendingRecords > 0 || segments.count > 1) && totalBytes + length > maxBytes
        }

        /// Bytes of the segments between `from` and `to`.
        func bytes(from: SpoolPosition, to: SpoolPosition) -> Int64 {
            guard from < to else { return 0 }
            return segments.reduce(0) { total, segment in
                func offset(_ position: SpoolPosition) -> Int64 {
                    position.segment < segment.id ? 0 : position.segment == segment.id ? position.offset : segment.size
                }
                return total + max(0, min(offset(to), segment.size) - offset(from))
            }
        }
    }

    let state: Guarded<State>

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
                pendingRecords: segments.reduce(0) { $0 + $1.records }, committed: start, released: start,
                activeFile: activeFile, cursor: start))
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

    // MARK: status and life

    /// Bytes, pending records and the age of the oldest; cheap enough for every metrics snapshot.
    public func status() -> Status {
        let keep = settings.keepUntilReleased
        let (bytes, unconfirmed, pending, oldest) = state.withLock { state -> (Int64, Int64, Int, SpoolPosition?) in
            let unconfirmed = keep ? state.bytes(from: state.released, to: state.committed) : 0
            guard state.pendingRecords > 0 else { return (state.totalBytes, unconfirmed, 0, nil) }
            var position = state.committed
            if position.segment < state.segments[0].id {
                position = SpoolPosition(segment: state.segments[0].id, offset: 0)
            }
            while let index = state.segments.firstIndex(where: { $0.id == position.segment }),
                index < state.segments.count - 1, position.offset >= state.segments[index].size
            {
                position = SpoolPosition(segment: state.segments[index + 1].id, offset: 0)
            }
            return (state.totalBytes, unconfirmed, state.pendingRecords, position)
        }
        var status = Status(
            bytes: bytes, recordsPending: max(0, pending), oldestPendingReceivedAt: nil, unconfirmedBytes: unconfirmed)
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

}
