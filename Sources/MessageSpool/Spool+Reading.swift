import Foundation
import Logging
import Runtime
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// The consumer's side of the spool: where reading resumes, reading records in order, and committing them
/// (segments wholly committed are deleted).
extension Spool {
    // MARK: consumer

    /// Sets where reading resumes: just after `checkpoint` if it is of this spool, else at the
    /// oldest record; what comes before it counts as committed. Deletes segments before it (with
    /// ``Settings/keepUntilReleased``, only those released too). Call before the first read, and again when the
    /// database lost commits the spool still holds (a failover to a standby that lacked them): the cursor then
    /// moves back and those records are read again.
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
            if settings.keepUntilReleased, let checkpoint, checkpoint.spoolID == identity,
                checkpoint.position < state.released
            {
                logger.error(
                    """
                    the database lacks records this spool released already (a standby less advanced than the one \
                    that confirmed them was promoted); they are lost
                    """,
                    metadata: ["checkpoint": "\(checkpoint.position)", "released": "\(state.released)"])
            }
            state.pendingRecords = state.segments.reduce(0) { $0 + $1.records } - skipped
            state.cursor = start
            state.committed = start
            if !settings.keepUntilReleased { state.released = start }
            deleteSegments(before: min(state.committed, state.released), &state)
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
    /// `records` is how many that commit covered. Deletes segments that are now fully committed (with
    /// ``Settings/keepUntilReleased``, once released too).
    public func commit(through position: SpoolPosition, records: Int) {
        state.update { state in
            state.committed = max(state.committed, position)
            state.pendingRecords -= records
            if !settings.keepUntilReleased { state.released = state.committed }
            deleteSegments(before: min(state.committed, state.released), &state)
        }
    }

    /// With ``Settings/keepUntilReleased``: records up to `position` may go once committed (a standby has their
    /// commit). Deletes segments that are now wholly committed and released.
    public func release(through position: SpoolPosition) {
        state.update { state in
            state.released = max(state.released, position)
            deleteSegments(before: min(state.committed, state.released), &state)
        }
    }

    /// Everything before this position is committed.
    public var committedPosition: SpoolPosition {
        state.withLock { $0.committed }
    }

    /// The start of the oldest segment.
    public var oldestPosition: SpoolPosition {
        state.withLock { SpoolPosition(segment: $0.segments[0].id, offset: 0) }
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
}
