/// Why a message that a supported firmware sends in normal operation produced no reading, although nothing
/// is wrong with it. Such messages are counted by kind (`outletd_messages_ignored_total{kind=…}`), never
/// rejected: rejections are for garbage. The raw values are stable metric labels.
public enum IgnoredKind: String, Sendable, CaseIterable, Codable {
    /// An energy counter without a power reading to go with it (a Shelly Gen1 `relay/<n>/energy` whose poll
    /// had no `power`, a Gen2 `aenergy` update while the channel's power is not known yet). A Gen2 counter is
    /// kept and stored with the channel's next sample.
    case energyOnly = "energy_only"
    /// A Tasmota `SENSOR` without an `ENERGY` block (a device whose sensors are not a meter).
    case noMeter = "no_meter"
    /// A Tasmota multi-relay device with one meter: the meter's reading belongs to its lowest registered
    /// relay, and is no reading of the others.
    case meterOfAnotherChannel = "meter_of_another_channel"
    /// A Shelly component (`switch:1`…) or Tasmota relay that no registered outlet uses.
    case unregisteredChannel = "unregistered_channel"
    /// A message that carries no meter value: a Gen2 notification other than a status, a status with only
    /// `output` (a state report, handled as one).
    case noReading = "no_reading"
    /// A Shelly Gen2 status equal to the one stored for the outlet moments ago (it arrives on both
    /// `status/<component>` and `events/rpc`).
    case repeatedStatus = "repeated_status"
    /// A topic that arrived through outletd's subscriptions but that it does not read (Tasmota
    /// `stat/<t>/STATUS`, a Gen2 `status/sys`…).
    case unreadTopic = "unread_topic"
}
