import Foundation
import Telemetry

/// One round of every automation: the entry point of the feature's evaluation (docs/AUTOMATIONS.md).
///
/// The shape of the feature, which others follow (alerts):
/// - **This target is the feature's home.** The rules (``AutomationRule``, its validation and its words), the clock
///   (``ScheduleClock``), the followers of readings (``PowerWatch``, ``GroupWatch``) and every decision of a round
///   (``DueRules``, ``PowerRules``, ``GroupLimits``: what fires, what is missed or skipped and why, what a rule's
///   row keeps) are pure values and functions, tested with tables and no database (Tests/AutomationsTests).
/// - **The SQL is behind a small protocol defined here**, ``AutomationRuleStore``: typed reads and writes only
///   (the rules due, the readings since, record a firing, save a rule's state), no decision. `Storage`'s
///   `AutomationStore` implements it; the arrow goes `Storage → Automations`, as `Storage → Telemetry` does.
/// - **Exactly once stays the database's job**: each of the store's `with…` calls is one transaction holding the
///   locks (`FOR UPDATE SKIP LOCKED`, ``/Runtime/AdvisoryLock``), and the round makes its decisions inside it, so
///   a firing, its command and the rule's new state commit together or not at all.
/// - **One entry point per caller**: the runner (``AutomationRunner``, a `DatabaseJob` that the composition root
///   hands a store maker) calls ``run(_:memory:)``; tests call the three steps.
public struct AutomationRound: Sendable {
    /// Names the instance in the firings it records.
    public var instanceID: String
    /// An occurrence due longer ago than this is missed (`automations.catch_up_seconds`).
    public var catchUpSeconds: Double
    /// How far before a power rule's hold (a group's longest wait) a rule not followed recently looks back, seconds.
    public var slackSeconds: Double
    /// At most this many due rules a round.
    public var dueLimit: Int

    public init(instanceID: String, catchUpSeconds: Double, slackSeconds: Double = 60, dueLimit: Int = 200) {
        self.instanceID = instanceID
        self.catchUpSeconds = catchUpSeconds
        self.slackSeconds = slackSeconds
        self.dueLimit = dueLimit
    }

    /// Due schedules and timers, then outlets' power rules, then group limits.
    public func run<Store: AutomationRuleStore>(_ store: Store, memory: inout PowerWatchMemory) throws
        -> [AutomationOutcome]
    {
        try runDue(store) + (try watchOutlets(store, memory: &memory)) + (try watchGroups(store))
    }

    /// Fires or records as missed every schedule and timer due by now, and saves when each is due next.
    public func runDue<Store: AutomationRuleStore>(_ store: Store) throws -> [AutomationOutcome] {
        try store.withRulesDue(limit: dueLimit) { transaction, rules in
            var outcomes: [AutomationOutcome] = []
            for rule in rules {
                let (firings, next) = DueRules.firings(of: rule, catchUpSeconds: catchUpSeconds)
                outcomes += try record(firings, transaction)
                try transaction.saveNextDue(automationID: rule.id, next)
            }
            return outcomes
        }
    }

    /// Follows the readings of every over-power and idle rule since it last looked, switches off the outlets whose
    /// rule met, and saves where the rules are (``PowerRules``). Nothing when another runner holds them.
    public func watchOutlets<Store: AutomationRuleStore>(_ store: Store, memory: inout PowerWatchMemory) throws
        -> [AutomationOutcome]
    {
        let remembered = memory
        let round = try store.withPowerRules { transaction, rows -> ([AutomationOutcome], PowerWatchMemory) in
            var rules = PowerRules(rows, memory: remembered, slackSeconds: slackSeconds)
            let reading = rules.needingReadings
            var readings = Array(repeating: [PowerReading](), count: rows.count)
            if !reading.isEmpty {
                let read = try transaction.readings(
                    reading.map { (rows[$0].target.deviceID ?? 0, rules.rules[$0].since) },
                    until: rules.readingsUntil(reading))
                for (position, index) in reading.enumerated() where read.indices.contains(position) {
                    readings[index] = read[position]
                }
            }
            let outcomes = try record(rules.follow(readings), transaction)
            let saving = rules.toSave
            if !saving.isEmpty { try transaction.savePowerWatches(saving) }
            return (outcomes, rules.memory)
        }
        guard let (outcomes, kept) = round else { return [] }
        memory = kept
        return outcomes
    }

    /// Follows the readings of every group limit's outlets since it last looked, sheds and restores outlets, and
    /// saves where each group is (``GroupLimits``). Nothing when another runner holds them.
    public func watchGroups<Store: AutomationRuleStore>(_ store: Store) throws -> [AutomationOutcome] {
        try store.withGroupLimits { transaction, rows in
            var outcomes: [AutomationOutcome] = []
            for row in rows {
                var group = GroupLimits(row, slackSeconds: slackSeconds)
                let members = try transaction.groupMembers(automationID: row.id, asOf: group.since)
                let deviceIDs = members.map(\.deviceID)
                let readings = try transaction.groupReadings(deviceIDs: deviceIDs, since: group.since)
                outcomes += try record(group.follow(members: members, readings: readings), transaction)
                try transaction.saveGroup(automationID: row.id, group.watch, deviceIDs: deviceIDs)
            }
            return outcomes
        } ?? []
    }

    private func record<Transaction: AutomationRuleTransaction>(
        _ firings: [PlannedFiring], _ transaction: Transaction
    ) throws -> [AutomationOutcome] {
        try firings.compactMap { firing in
            try transaction.record(firing, instanceID: instanceID).map(firing.outcome)
        }
    }
}
