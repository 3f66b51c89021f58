import Config
import Foundation
import Logging
import MQTT
import Synchronization

/// Other outletd instances online on the broker, seen by their retained `outletd/<instance>/status`.
///
/// With both share groups empty (the default), every instance subscribes plainly: two of them would each store
/// every reading stamped with its receive time, and each turn every `set` request into a command. So an instance
/// with empty share groups refuses to start while another is online, unless `mqtt.ignore_peers` says it is a
/// deliberate copy (docs/SCALING.md). The instance already running goes on.
enum PeerCheck {
    /// The ids of the other instances whose status is `online`. Reads the retained statuses with a client of its
    /// own, then a marker published to itself: the broker queues it behind the retained messages of the
    /// subscription, so its arrival means they have all come. nil when the broker did not answer within `timeout`
    /// (outletd starts anyway and connects when it can, as without the check).
    static func onlinePeers(_ configuration: OutletdConfiguration, timeout: Double = 5) async throws -> [String]? {
        var settings = try MQTTConfiguration(
            url: configuration.mqtt.url, clientID: "\(configuration.instanceID)-peers")
        settings.cleanStart = true
        settings.sessionExpiryInterval = 0
        settings.tls = MQTTIntake.tls(configuration.mqtt, base: settings.tls)
        let marker = "outletd/\(configuration.instanceID)/peer-check"
        let seen = Seen()
        let client = try MQTTClient(configuration: settings) { message in
            if message.topic == marker {
                seen.markerArrived()
                return
            }
            let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
            guard levels.count == 3, levels[2] == "status" else { return }
            seen.status(String(levels[1]), String(decoding: message.payload, as: UTF8.self))
        }
        client.setSubscriptions([(filter: "outletd/+/status", qos: 1), (filter: marker, qos: 1)])
        try client.start()
        defer { client.stop() }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if client.isConnected { _ = try? client.publish(marker, payload: Array("check".utf8), qos: 1) }
            try await Task.sleep(for: .milliseconds(200))
            if seen.hasMarker {
                return seen.online.filter { $0 != configuration.instanceID }.sorted()
            }
        }
        return nil
    }

    /// Why this instance must not start, or nil.
    static func refusal(peers: [String], instanceID: String) -> String? {
        guard !peers.isEmpty else { return nil }
        return """
            another outletd instance is online on this broker (\(peers.joined(separator: ", "))), and this one \
            (\(instanceID)) has empty mqtt.share_group and commands.share_group: both would store every reading and \
            turn every set request into a command. Give every instance the same mqtt.share_group and \
            commands.share_group (docs/SCALING.md), or set mqtt.ignore_peers: true for a deliberate copy
            """
    }

    /// What the check has seen so far (written on the client's network thread).
    private final class Seen: Sendable {
        private let state = Mutex<(statuses: [String: String], marker: Bool)>(([:], false))

        func status(_ instance: String, _ payload: String) {
            state.withLock { $0.statuses[instance] = payload }
        }

        func markerArrived() { state.withLock { $0.marker = true } }

        var hasMarker: Bool { state.withLock { $0.marker } }

        var online: [String] { state.withLock { $0.statuses.filter { $0.value == "online" }.map(\.key) } }
    }
}
