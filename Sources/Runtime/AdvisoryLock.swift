/// Every PostgreSQL advisory lock key outletd and its SQL take, in one place, so that no two uses share a key by
/// accident (`AdvisoryLockTests` checks that they are distinct, and that the keys written in sql/ are these).
///
/// PostgreSQL keeps one-key locks (a `bigint`) and two-key locks (two `integer`s) apart, so the two kinds are
/// listed apart; a two-key lock's first key names the use, its second the object (an outlet, a day, a group).
public enum AdvisoryLock {
    /// One-key locks (`pg_advisory_lock(bigint)` and its kin).
    public enum Single: Int64, CaseIterable, Sendable {
        /// `outletd migrate` (Storage's `Migration`): one migrating instance at a time. "outletd" in ASCII.
        case migration = 0x6F75_746C_6574_64
        /// The automation runner's power rules, one instance a round (`AutomationStore+Outlets`).
        case powerRules = 0x6F75_746C_6574_65
        /// The automation runner's group limits, one instance a round (`AutomationStore+Groups`).
        case groupRules = 0x6F75_746C_6574_66
        /// The command results sweep, one instance at a time (`CommandStore`).
        case commandResults = 0x6F75_746C_6574_6472
        /// The alert runner's evaluation round, one instance a round (Storage's `AlertSQLStore`).
        case alertRounds = 0x6F75_746C_6574_67
    }

    /// Two-key locks (`pg_advisory_lock(integer, integer)` and their kin): the first key.
    public enum Pair: Int32, CaseIterable, Sendable {
        /// Share-group membership, shared per member (`ShareGroupMembership`; second key: the group's hash).
        case shareGroupMember = 0x6F75_7464
        /// Share-group decisions (`ShareGroupMembership`; second key: the group's hash).
        case shareGroupDecision = 0x6F75_7465
        /// An outlet's rollups (sql/0002_rollups.sql `outletd_lock_devices`; second key: the outlet's id).
        case outletRollups = 1_869_903_988
        /// Creating a day's partition of samples (sql/0008, 0024 `outletd_ensure_sample_partitions`; second: 0).
        case samplePartitions = 1_869_903_989
        /// A stripe of outlets' rollup locks (sql/0013_rollup_lock_stripes.sql; second key: the stripe).
        case rollupStripes = 1_869_903_990
        /// Compacting or expanding a day (Compaction's `CompactionStore`; second key: days since 1970-01-01).
        case compaction = 1_869_903_991
    }

    /// The compaction of one day: first key.
    public static var compaction: Int32 { Pair.compaction.rawValue }
}
