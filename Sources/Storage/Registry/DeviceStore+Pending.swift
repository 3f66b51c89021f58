import Foundation
import Postgres
import Protocols
import Telemetry

extension DeviceStore {
    /// Codes that sent data without being registered, most recently seen first.
    public func pending() throws -> [PendingDevice] {
        let result = try connection.execute(
            """
            SELECT code, first_seen_at, last_seen_at, message_count, last_topic, suggested_protocol,
                   suggested_topic, array_to_string(suggested_channels, ','), array_to_string(suggested_endpoints, ',')
            FROM pending_devices ORDER BY last_seen_at DESC, code
            """)
        return try (0..<result.rowCount).map { row in
            PendingDevice(
                code: result[row, 0] ?? "", firstSeenAt: try result.date(row: row, column: 1),
                lastSeenAt: try result.date(row: row, column: 2),
                messageCount: try result.int64(row: row, column: 3) ?? 0,
                lastTopic: result[row, 4] ?? "", suggestedProtocol: result[row, 5], suggestedTopic: result[row, 6],
                suggestedChannels: (result[row, 7] ?? "").split(separator: ",").compactMap { Int($0) },
                suggestedEndpoints: (result[row, 8] ?? "").split(separator: ",").map(String.init))
        }
    }

    /// Records what discovery announced as a pending outlet, unless it is registered already (by code, or by
    /// protocol and topic) or `pending_devices` is full. Returns whether a row was written.
    @discardableResult
    public func suggest(_ suggestion: DeviceSuggestion, topic: String, seenAt: Date, pendingDevicesMax: Int) throws
        -> Bool
    {
        let result = try connection.execute(
            """
            INSERT INTO pending_devices AS p (code, first_seen_at, last_seen_at, message_count, last_topic,
                suggested_protocol, suggested_topic, suggested_full_topic, suggested_channels, suggested_on_word,
                suggested_off_word, suggested_endpoints, suggested_sensor_map)
            SELECT $1, $2, $2, 1, $3, $4, $5, $6, $7::integer[], $8, $9, $11::text[], $12
            WHERE NOT EXISTS (SELECT 1 FROM devices WHERE code = $1 OR (protocol = $4 AND protocol_topic = $5))
              AND ((SELECT count(*) FROM pending_devices) < $10 OR EXISTS (SELECT 1 FROM pending_devices WHERE code = $1))
            ON CONFLICT (code) DO UPDATE SET
                last_seen_at = GREATEST(p.last_seen_at, excluded.last_seen_at), message_count = p.message_count + 1,
                last_topic = excluded.last_topic, suggested_protocol = excluded.suggested_protocol,
                suggested_topic = excluded.suggested_topic, suggested_full_topic = excluded.suggested_full_topic,
                suggested_channels = excluded.suggested_channels, suggested_on_word = excluded.suggested_on_word,
                suggested_off_word = excluded.suggested_off_word, suggested_endpoints = excluded.suggested_endpoints,
                suggested_sensor_map = excluded.suggested_sensor_map
            """,
            [
                suggestion.code, seenAt, topic, suggestion.outletProtocol.rawValue, suggestion.deviceTopic,
                suggestion.fullTopic, suggestion.channels.map(Int64.init), suggestion.onWord, suggestion.offWord,
                Int64(pendingDevicesMax), suggestion.endpoints, suggestion.sensorMap,
            ])
        return (result.affectedRows ?? 0) > 0
    }

    /// Registers a pending code in one step. A discovered device is registered with the suggested protocol, topic
    /// and FullTopic, one outlet per suggested endpoint (Zigbee2MQTT sockets, ESPHome switches) or else per
    /// channel: the first keeps `code`, the others are `<code>-<endpoint>` / `<code>-<channel>`. An ESPHome node's
    /// discovered sensors go with it. Returns the outlets registered, `code` first.
    @discardableResult
    public func approve(_ code: String, name: String? = nil, owner: String? = nil) throws -> [DeviceRecord] {
        let pending = try connection.execute(
            """
            SELECT suggested_protocol, suggested_topic, suggested_full_topic,
                   array_to_string(suggested_channels, ','), suggested_on_word, suggested_off_word,
                   array_to_string(suggested_endpoints, ','), suggested_sensor_map
            FROM pending_devices WHERE code = $1
            """, [code])
        guard pending.rowCount == 1 else {
            throw DeviceStoreError(message: "\(code) is not pending (see `outletd device pending`)")
        }
        guard let protocolName = pending[0, 0], let outletProtocol = OutletProtocol(rawValue: protocolName),
            outletProtocol != .native
        else {
            return [try add(NewDevice(code: code, name: name ?? "", owner: owner))]
        }
        let channels = (pending[0, 3] ?? "").split(separator: ",").compactMap { Int($0) }
        let endpoints = (pending[0, 6] ?? "").split(separator: ",").map(String.init)
        // (suffix of the code, channel, endpoint) of each outlet.
        let slots: [(suffix: String, channel: Int?, endpoint: String)] =
            !endpoints.isEmpty
            ? endpoints.map { ($0, channels.first, $0) }
            : channels.isEmpty ? [("", nil, "")] : channels.map { (String($0), $0, "") }
        return try mappingDuplicates(code) {
            try connection.transaction {
                var records: [DeviceRecord] = []
                for (index, slot) in slots.enumerated() {
                    let outletCode = index == 0 ? code : String("\(code)-\(slot.suffix)".prefix(64))
                    var device = NewDevice(
                        code: DeviceSuggestion.code(from: outletCode) ?? outletCode, name: name ?? "", owner: owner,
                        outletProtocol: outletProtocol, protocolTopic: pending[0, 1], fullTopic: pending[0, 2],
                        channel: slot.channel, stateOnWord: pending[0, 4], stateOffWord: pending[0, 5],
                        endpoint: slot.endpoint)
                    device.discoveredSensorMap = pending[0, 7]
                    records.append(try insert(device))
                }
                try connection.execute("DELETE FROM pending_devices WHERE code = $1", [code])
                guard !records.isEmpty else { throw DeviceStoreError(message: "nothing to register") }
                return records
            }
        }
    }

    /// Stores what an ESPHome node's discovery says of its sensors for every outlet at its prefix whose stored
    /// text differs; returns how many changed (running daemons reload them through NOTIFY).
    @discardableResult
    public func setDiscoveredSensorMap(prefix: String, _ map: String) throws -> Int {
        let result = try connection.execute(
            """
            UPDATE devices SET discovered_sensor_map = $2
            WHERE protocol = 'esphome' AND protocol_topic = $1 AND discovered_sensor_map IS DISTINCT FROM $2
            """, [prefix, map])
        return result.affectedRows ?? 0
    }

    /// Checks what a Zigbee2MQTT or ESPHome outlet is given: an endpoint name and sensor flags that parse.
    static func checkNamedAddress(_ device: NewDevice) throws {
        if !device.endpoint.isEmpty {
            let valid =
                device.endpoint.count <= 128
                && !device.endpoint.contains(where: { "/+#,:= ".contains($0) })
            guard valid else { throw DeviceStoreError(message: "endpoint \"\(device.endpoint)\" is not a name") }
        }
        if let map = device.sensorMap {
            guard device.outletProtocol == .esphome else {
                throw DeviceStoreError(message: "--sensor and --switch are for esphome outlets")
            }
            if case .failure(let rejection) = ESPHomeProtocol.SensorMap.parse(map) {
                throw DeviceStoreError(message: "--sensor: \(rejection.detail)")
            }
        }
        if device.outletProtocol == .zigbee2mqtt, let topic = device.protocolTopic,
            topic.hasPrefix("/") || topic.hasSuffix("/") || topic.contains("//")
        {
            throw DeviceStoreError(message: "a Zigbee2MQTT friendly name has no empty level: \"\(topic)\"")
        }
    }
}
