/// Why a message that a supported firmware sends in normal operation produced no reading, although nothing
/// is wrong with it. Such messages are counted by kind (`outletd_messages_ignored_total{kind=…}`), never
/// rejected: rejections are for garbage. The raw values are stable metric labels.
public enum IgnoredKind: String, Sendable, CaseIterable, Codable {
    /// An energy counter without a power reading to go with it (a Shelly Gen1 `relay/<n>/energy` whose poll
    /// had no `power`, a Gen2 `aenergy` update while the channel's power is not known yet). A Gen2 counter is
    /// kept and stored with the channel's next sample.
    case energyOnly = "energy_only"
    /// A sensor that is no meter: a Tasmota `SENSOR` without an `ENERGY` block, an ESPHome sensor that is none of
    /// the outlet's power, voltage, current, power factor and energy counter (Wi-Fi signal, a daily energy).
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
    /// A device under Zigbee2MQTT's base topic, or an ESPHome node, that no registered outlet uses (sensors,
    /// lights, a plug not yet approved): the bridge and ESPHome's topics carry every device of the network.
    case notAnOutlet = "not_an_outlet"
    /// A Zigbee2MQTT attribute topic (`<name>/<attribute>`, `output: attribute_and_json`): the same values come
    /// in the device's JSON state, which is read.
    case attributeTopic = "attribute_topic"
    /// A Zigbee2MQTT state whose meter values all equal the outlet's last ones: with `cache_state: true` every
    /// message repeats the cached values beside the attribute that changed (a state, a link quality).
    case cachedValues = "cached_values"
    /// Meter values without a power (nor a voltage and a current) to make a sample of: a Zigbee2MQTT voltage
    /// before any power is known, an ESPHome update cycle with only a voltage.
    case noPower = "no_power"
    /// A Home Assistant discovery config that is not an ESPHome node's (Zigbee2MQTT's own, outletd's, another
    /// publisher's), or the removal of one: outletd reads discovery only to learn ESPHome nodes' sensors.
    case otherDiscovery = "other_discovery"
}
