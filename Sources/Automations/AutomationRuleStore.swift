import Foundation
import Telemetry

/// The SQL a round of automations needs, typed: the rules due, the readings since, a firing recorded, a rule's state
/// saved. `Storage`'s `AutomationStore` implements it; this target never sees a query.
///
/// Each `with…` method is one transaction that keeps other instances' runners off the rules it hands to `body`
/// (the due ones locked `FOR UPDATE SKIP LOCKED`; the power rules and the group limits as a whole by an advisory
/// lock each) and commits when `body` returns: what `body` records and saves through the ``Transaction`` is all in
/// the database or none of it, which is what makes each firing happen once.
public protocol AutomationRuleStore {
    associatedtype Transaction: AutomationRuleTransaction

    /// Runs `body` with the schedules and timers due by the database's clock, at most `limit`, the soonest first,
    /// each locked for this transaction (rules another runner holds are passed over).
    func withRulesDue<T>(limit: Int, _ body: (Transaction, [DueRule]) throws -> T) throws -> T

    /// Runs `body` with the enabled over-power and idle rules, in id order, under the power rules' advisory lock;
    /// nil, without running `body`, when another runner holds it.
    func withPowerRules<T>(_ body: (Transaction, [PowerRuleRow]) throws -> T) throws -> T?

    /// Runs `body` with the enabled group limits, in id order, under the group limits' advisory lock; nil, without
    /// running `body`, when another runner holds it.
    func withGroupLimits<T>(_ body: (Transaction, [GroupLimitRow]) throws -> T) throws -> T?
}

/// What a round does inside one of ``AutomationRuleStore``'s transactions.
public protocol AutomationRuleTransaction {
    /// Records `firing` once (a second record of the same automation, due instant and outlet is nothing: nil) and,
    /// when its result is ``AutomationResult/fired``, requests its command (source `automation`, the firing's cause).
    func record(_ firing: PlannedFiring, instanceID: String) throws -> RecordedFiring?

    /// Saves when a schedule or timer is due next (nil: never again).
    func saveNextDue(automationID: Int64, _ next: Date?) throws

    /// Each outlet's readings measured after its `since` and by `until`, in time order, at most 5,000 an outlet.
    func readings(_ outlets: [(deviceID: Int64, since: Date)], until: Date) throws -> [[PowerReading]]

    /// Saves where over-power and idle rules are.
    func savePowerWatches(_ watches: [(automationID: Int64, watch: PowerWatch)]) throws

    /// A group limit's outlets, least important first, each with its latest reading of the hour before `asOf`.
    func groupMembers(automationID: Int64, asOf: Date) throws -> [GroupMemberRow]

    /// The readings of `deviceIDs` measured after `since`, in time order (member: the index in `deviceIDs`), at
    /// most 50,000.
    func groupReadings(deviceIDs: [Int64], since: Date) throws -> [(member: Int, reading: PowerReading)]

    /// Saves where group limit `automationID` is: its watch and which members are shed (`deviceIDs` in the order of
    /// `watch.members`).
    func saveGroup(automationID: Int64, _ watch: GroupWatch, deviceIDs: [Int64]) throws
}

/// The outlet a firing acts on, and whether it may.
public struct AutomationTarget: Sendable, Equatable {
    public var deviceID: Int64?
    public var code: String?
    public var enabled: Bool
    /// False when an owner made the rule and no longer owns the outlet.
    public var ownerStillOwns: Bool

    public init(deviceID: Int64?, code: String?, enabled: Bool, ownerStillOwns: Bool) {
        self.deviceID = deviceID
        self.code = code
        self.enabled = enabled
        self.ownerStillOwns = ownerStillOwns
    }

    /// No outlet: what a group limit records when it has nothing to shed.
    public static let none = AutomationTarget(deviceID: nil, code: nil, enabled: true, ownerStillOwns: true)
}

/// A schedule or timer that is due, as its row holds it.
public struct DueRule: Sendable, Equatable {
    public var id: Int64
    public var kind: AutomationKind
    public var state: SwitchState
    /// A schedule's local time, minutes after midnight (0 for a timer).
    public var minute: Int
    public var days: [Weekday]
    public var nextDueAt: Date
    public var target: AutomationTarget
    /// The outlet's time zone.
    public var zone: TimeZone
    /// The database's clock when the row was read.
    public var now: Date

    public init(
        id: Int64, kind: AutomationKind, state: SwitchState, minute: Int, days: [Weekday], nextDueAt: Date,
        target: AutomationTarget, zone: TimeZone, now: Date
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.minute = minute
        self.days = days
        self.nextDueAt = nextDueAt
        self.target = target
        self.zone = zone
        self.now = now
    }
}

/// An over-power or idle rule as its row holds it.
public struct PowerRuleRow: Sendable, Equatable {
    public var id: Int64
    /// ``AutomationKind/overPower`` or ``AutomationKind/idle``.
    public var kind: AutomationKind
    public var watts: Double
    public var holdSeconds: Int
    /// Where the rule was when its row was last written.
    public var stored: PowerWatch
    public var target: AutomationTarget
    /// Whether the outlet reports itself on.
    public var reportsOn: Bool
    /// When the outlet's newest stored reading was measured (nil: none).
    public var newestReading: Date?
    /// The database's clock when the row was read.
    public var now: Date

    public init(
        id: Int64, kind: AutomationKind, watts: Double, holdSeconds: Int, stored: PowerWatch, target: AutomationTarget,
        reportsOn: Bool, newestReading: Date?, now: Date
    ) {
        self.id = id
        self.kind = kind
        self.watts = watts
        self.holdSeconds = holdSeconds
        self.stored = stored
        self.target = target
        self.reportsOn = reportsOn
        self.newestReading = newestReading
        self.now = now
    }
}

/// A group limit as its row holds it.
public struct GroupLimitRow: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var watts: Double
    public var holdSeconds: Int
    public var restore: AutomationRule.Restore?
    /// Where the group was when its row was last written (no members: ``AutomationRuleTransaction/groupMembers``).
    public var stored: GroupWatch
    /// The database's clock when the row was read.
    public var now: Date

    public init(
        id: Int64, name: String, watts: Double, holdSeconds: Int, restore: AutomationRule.Restore?,
        stored: GroupWatch, now: Date
    ) {
        self.id = id
        self.name = name
        self.watts = watts
        self.holdSeconds = holdSeconds
        self.restore = restore
        self.stored = stored
        self.now = now
    }
}

/// One outlet of a group limit.
public struct GroupMemberRow: Sendable, Equatable {
    public var deviceID: Int64
    public var enabled: Bool
    /// Its code, its latest reading and whether it is shed.
    public var member: GroupWatch.Member

    public init(deviceID: Int64, enabled: Bool, member: GroupWatch.Member) {
        self.deviceID = deviceID
        self.enabled = enabled
        self.member = member
    }
}

/// What recording a firing stored.
public struct RecordedFiring: Sendable, Equatable {
    /// The command it requested (nil: none, it did not fire).
    public var commandID: Int64?

    public init(commandID: Int64?) {
        self.commandID = commandID
    }
}
