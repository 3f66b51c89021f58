import MessageSpool
import Observability
import WritePath

/// `database.durability: replicated`, on the committer's thread: the batches committed on the primary and not yet
/// known to be on a standby, and when the spool may let them go.
///
/// After each commit the committer reads the primary's WAL position (``ReplicationStatus/currentLSN``, at or past
/// the end of that commit's record) and records it with the batch's spool end. Once the most advanced standby's
/// `flush_lsn` reaches a recorded position, everything up to that batch's end is on the standby's disk and the
/// spool may release it. With synchronous replication the commit waited for the standby, so the next look finds it
/// there. Pure: tested with a table.
struct ReplicationTracker: Equatable {
    /// A batch's spool end and the WAL position read after its commit.
    struct Entry: Equatable {
        var end: SpoolPosition
        var lsn: UInt64
    }

    /// Oldest first; both fields grow along it.
    private(set) var unconfirmed: [Entry] = []

    /// A batch ending at `end` was committed before the primary's WAL reached `lsn`.
    mutating func committed(through end: SpoolPosition, before lsn: UInt64) {
        unconfirmed.append(Entry(end: end, lsn: lsn))
    }

    /// The spool position up to which a standby has every commit, given its `flush_lsn`; nil when that moves
    /// nothing. Drops the entries it covers.
    mutating func confirmed(byFlushLSN flush: UInt64?) -> SpoolPosition? {
        guard let flush else { return nil }
        let covered = unconfirmed.prefix { $0.lsn <= flush }
        guard let last = covered.last else { return nil }
        unconfirmed.removeFirst(covered.count)
        return last.end
    }

    /// Starts over on a server whose WAL was at `lsn` when everything before `position` was found committed on it
    /// (the writer's start, or the replay after a failover): what came before is released once a standby has
    /// `lsn`.
    mutating func restart(committedBefore position: SpoolPosition?, lsn: UInt64) {
        unconfirmed = position.map { [Entry(end: $0, lsn: lsn)] } ?? []
    }

    /// What `/readyz`, the log and /metrics say about `status`.
    static func gauges(_ status: ReplicationStatus) -> IngestMetrics.ReplicationGauges {
        let problem: String?
        if status.standbys == 0 {
            problem =
                "no standby is connected to the primary (database.durability: replicated): "
                + "readings stay in the spool until one has them"
        } else if status.standbyFlushLSN == nil {
            problem =
                "the standbys' positions are hidden from outletd's database role (grant it pg_monitor): "
                + "readings stay in the spool"
        } else {
            problem = nil
        }
        return IngestMetrics.ReplicationGauges(standbys: status.standbys, lagBytes: status.lagBytes, problem: problem)
    }
}
