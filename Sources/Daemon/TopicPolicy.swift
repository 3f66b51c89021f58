import Config
import Routing

/// Which MQTT topics one outletd instance subscribes to, which forms of them it drops as stale, and the topics it
/// publishes about itself: the daemon's topic policy, read from the configuration.
///
/// All subscriptions are QoS 1. With share groups set (several instances), telemetry goes through the shared
/// subscription `$share/<mqtt.share_group>/…` and set requests through `$share/<commands.share_group>/…`, so that
/// each message reaches one of them; without (the default), they are plain. State and availability reports stay
/// plain subscriptions: they are few, retained (a shared subscription receives no retained messages), and every
/// instance's command relay acts on them (the database decides which one's update counts).
struct TopicPolicy: Sendable {
    let configuration: OutletdConfiguration

    init(_ configuration: OutletdConfiguration) {
        self.configuration = configuration
    }

    /// The topic filters outletd subscribes to, without the FullTopics of registered Tasmota outlets.
    var subscriptions: [String] {
        subscriptions(registeredFullTopics: [])
    }

    /// The subscriptions, with the Tasmota FullTopics of registered outlets added (see docs/PROTOCOLS.md).
    func subscriptions(registeredFullTopics: Set<String>) -> [String] {
        let prefix = configuration.mqtt.topicPrefix
        let router = ProtocolRouter(configuration, registeredFullTopics: registeredFullTopics)
        // A shared filter receives no retained message: those the relay needs (Zigbee2MQTT's device list) get a
        // plain one beside it.
        let companions = configuration.mqtt.shareGroup.isEmpty ? [] : router.plainCompanions
        return [
            Self.filter("\(prefix)/+/telemetry", shareGroup: configuration.mqtt.shareGroup),
            Self.filter("\(prefix)/+/set", shareGroup: configuration.commands.shareGroup),
            "\(prefix)/+/state",
            "\(prefix)/+/availability",
        ]
            + router.subscriptions.map {
                // Readings of other protocols are shared like native telemetry: with several instances, a
                // reading stamped with the receive time would otherwise be stored once per instance.
                router.carriesReadings($0) ? Self.filter($0, shareGroup: configuration.mqtt.shareGroup) : $0
            } + companions
    }

    /// Forms of the shared filters that a persistent session may still hold from another setting of the
    /// share groups (plain, or the conventional group `outletd`, the default of earlier versions), unsubscribed
    /// on connect; otherwise the broker would deliver those messages a second time through the stale
    /// subscription.
    var staleSubscriptions: [String] {
        let prefix = configuration.mqtt.topicPrefix
        let groups = [
            ("\(prefix)/+/telemetry", configuration.mqtt.shareGroup),
            ("\(prefix)/+/set", configuration.commands.shareGroup),
        ]
        return groups.flatMap { topic, group in
            ["", OutletdConfiguration.conventionalShareGroup].filter { $0 != group }.map {
                Self.filter(topic, shareGroup: $0)
            }
        } + [drainTopic]
    }

    /// `topic` as a shared subscription of `shareGroup` (`$share/<group>/<topic>`), or plain when the group is
    /// empty. Intake topics of other protocols go through this too.
    static func filter(_ topic: String, shareGroup: String) -> String {
        shareGroup.isEmpty ? topic : "$share/\(shareGroup)/\(topic)"
    }

    /// `outletd/<instance>/status`: `online` while connected, `offline` (the will) otherwise.
    var statusTopic: String { "outletd/\(configuration.instanceID)/status" }

    /// `outletd/<instance>/drain`: the marker a stopping instance sends itself after unsubscribing its shared
    /// filters. The broker queues it behind everything it dealt this session before, so its arrival means
    /// the session holds nothing more of the share.
    var drainTopic: String { "outletd/\(configuration.instanceID)/drain" }
}
