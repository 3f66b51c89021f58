import Foundation
import Postgres
import Protocols
import Telemetry

/// A row of `devices`, as the CLI shows it.
public struct DeviceRecord: Sendable, Equatable {
    public var id: Int32
    public var code: String
    public var name: String
    public var description: String
    /// The name of the app account that owns the outlet (`devices.owner_id`), nil when unclaimed.
    public var owner: String?
    public var protocolName: String
    public var enabled: Bool
    public var createdAt: Date?
    /// Tasmota topic, Shelly id or Gen2 prefix; nil for native outlets.
    public var protocolTopic: String? = nil
    /// Relay number (Tasmota 1-based, Shelly 0-based; 0 for native).
    public var channel: Int = 0
    /// Tasmota FullTopic, when not the default.
    public var fullTopic: String? = nil
    /// Tasmota's ON/OFF words, when not `ON`/`OFF`.
    public var stateOnWord: String? = nil
    public var stateOffWord: String? = nil
    /// The free-text `devices.owner` of `device add --owner` (from before owners were accounts).
    public var ownerNote: String? = nil
    /// The key printed on the outlet's label, stored form (``ClaimKey/display(_:)`` prints it with dashes).
    public var claimKey: String = ""
    /// Zigbee2MQTT endpoint / ESPHome switch object id; empty for a device's only outlet.
    public var endpoint: String = ""
    /// ESPHome: the sensors from `--sensor`/`--switch`, and those the node's discovery named.
    public var sensorMap: String? = nil
    public var discoveredSensorMap: String? = nil
}

/// A row of `pending_devices`: a code that sent data without being registered.
public struct PendingDevice: Sendable, Equatable {
    public var code: String
    public var firstSeenAt: Date?
    public var lastSeenAt: Date?
    public var messageCount: Int64
    public var lastTopic: String
    /// What discovery suggested (nil when the code only sent data).
    public var suggestedProtocol: String? = nil
    public var suggestedTopic: String? = nil
    public var suggestedChannels: [Int] = []
    /// Named endpoints (Zigbee2MQTT sockets, ESPHome switches): one outlet each.
    public var suggestedEndpoints: [String] = []
}

/// A registry operation that cannot be done, said in words an operator understands.
public struct DeviceStoreError: Error, Sendable, CustomStringConvertible, Equatable {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// The registry's SQL: every statement the CLI and the daemon run against `devices` and
/// `pending_devices`. All parameterised.
public struct DeviceStore {
    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Options of a new outlet.
    public struct NewDevice: Sendable {
        public var code: String
        public var name: String = ""
        public var description: String = ""
        public var owner: String?
        public var enabled: Bool = true
        /// `native`, `tasmota`, `shelly-gen1` or `shelly-gen2`.
        public var outletProtocol: OutletProtocol = .native
        /// Tasmota topic, Shelly Gen1 id or Gen2 prefix (required for those protocols).
        public var protocolTopic: String?
        /// Tasmota FullTopic (nil: `%prefix%/%topic%/`).
        public var fullTopic: String?
        /// Relay number; nil: 1 for Tasmota, 0 for Shelly.
        public var channel: Int?
        /// Tasmota's ON/OFF words when not `ON`/`OFF`.
        public var stateOnWord: String?
        public var stateOffWord: String?
        /// Zigbee2MQTT endpoint (`l2`) or ESPHome switch object id (`--switch`).
        public var endpoint: String = ""
        /// ESPHome `--sensor` flags as a ``ESPHomeProtocol/SensorMap`` text.
        public var sensorMap: String?
        /// What discovery said of an ESPHome node's sensors (set by `approve`).
        public var discoveredSensorMap: String?

        public init(
            code: String, name: String = "", description: String = "", owner: String? = nil, enabled: Bool = true,
            outletProtocol: OutletProtocol = .native, protocolTopic: String? = nil, fullTopic: String? = nil,
            channel: Int? = nil, stateOnWord: String? = nil, stateOffWord: String? = nil, endpoint: String = "",
            sensorMap: String? = nil
        ) {
            self.endpoint = endpoint
            self.sensorMap = sensorMap
            self.code = code
            self.name = name
            self.description = description
            self.owner = owner
            self.enabled = enabled
            self.outletProtocol = outletProtocol
            self.protocolTopic = protocolTopic
            self.fullTopic = fullTopic
            self.channel = channel
            self.stateOnWord = stateOnWord
            self.stateOffWord = stateOffWord
        }
    }

    /// Registers an outlet (and forgets it as pending). Running daemons accept it within a second.
    @discardableResult
    public func add(_ device: NewDevice) throws -> DeviceRecord {
        try mappingDuplicates(device.code) { try connection.transaction { try insert(device) } }
    }

    /// Turns a unique violation into words.
    func mappingDuplicates<T>(_ code: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw DeviceStoreError(message: "device \(code) (or its protocol topic and channel) is already registered")
        }
    }

    /// Checks and inserts one outlet and deletes it from `pending_devices`; the caller holds a transaction.
    func insert(_ device: NewDevice) throws -> DeviceRecord {
        guard DeviceCode(device.code) != nil else {
            throw DeviceStoreError(
                message: "invalid device code \"\(device.code)\": use 1 to 64 of A-Z a-z 0-9 _ -")
        }
        var channel = device.channel ?? 0
        if device.outletProtocol != .native {
            guard let topic = device.protocolTopic, !topic.isEmpty, !topic.contains("+"), !topic.contains("#") else {
                throw DeviceStoreError(message: "protocol \(device.outletProtocol.rawValue) needs --topic")
            }
            if device.outletProtocol == .tasmota {
                channel = device.channel ?? 1
                guard channel >= 1 else { throw DeviceStoreError(message: "Tasmota channels start at 1") }
            }
            if let fullTopic = device.fullTopic, !TasmotaProtocol.isValidFullTopic(fullTopic) {
                throw DeviceStoreError(
                    message: "FullTopic \"\(fullTopic)\" must hold %prefix% and %topic% once each")
            }
            try Self.checkNamedAddress(device)
        }
        if !device.endpoint.isEmpty && device.outletProtocol != .zigbee2mqtt && device.outletProtocol != .esphome {
            throw DeviceStoreError(message: "only zigbee2mqtt and esphome outlets have a named endpoint")
        }
        let result = try connection.execute(
            """
            INSERT INTO devices (code, name, description, owner, enabled, protocol, protocol_topic, full_topic,
                                 channel, state_on_word, state_off_word, endpoint, sensor_map, discovered_sensor_map)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            RETURNING \(Self.columns)
            """,
            [
                device.code, device.name, device.description, device.owner, device.enabled,
                device.outletProtocol.rawValue, device.outletProtocol == .native ? nil : device.protocolTopic,
                device.outletProtocol == .tasmota ? device.fullTopic : nil, channel, device.stateOnWord,
                device.stateOffWord, device.endpoint, device.sensorMap, device.discoveredSensorMap,
            ])
        try connection.execute("DELETE FROM pending_devices WHERE code = $1", [device.code])
        return try Self.record(result, row: 0)
    }

    /// Registers many outlets at once, skipping codes already registered; returns how many were new.
    @discardableResult
    public func addMany(codes: [String], namePrefix: String = "") throws -> Int {
        for code in codes where DeviceCode(code) == nil {
            throw DeviceStoreError(message: "invalid device code \"\(code)\"")
        }
        let result = try connection.execute(
            """
            INSERT INTO devices (code, name)
            SELECT c, $2 || c FROM unnest($1::text[]) AS c
            ON CONFLICT (code) DO NOTHING
            """, [codes, namePrefix])
        return result.affectedRows ?? 0
    }

    /// Every registered outlet, by code.
    public func list() throws -> [DeviceRecord] {
        let result = try connection.execute("SELECT \(Self.columns) FROM devices ORDER BY code")
        return try (0..<result.rowCount).map { try Self.record(result, row: $0) }
    }

    /// One outlet, or nil.
    public func find(_ code: String) throws -> DeviceRecord? {
        let result = try connection.execute("SELECT \(Self.columns) FROM devices WHERE code = $1", [code])
        return result.rowCount == 0 ? nil : try Self.record(result, row: 0)
    }

    /// Enables or disables an outlet; readings of a disabled outlet are rejected.
    public func setEnabled(_ code: String, _ enabled: Bool) throws {
        let result = try connection.execute("UPDATE devices SET enabled = $2 WHERE code = $1", [code, enabled])
        guard result.affectedRows == 1 else { throw Self.notRegistered(code) }
    }

    /// Sets the outlet's time zone for its owner's app ("today", the day by hour): an IANA name, or nil for
    /// `rollups.time_zone`. Throws when the outlet is not registered or PostgreSQL does not know the zone.
    public func setTimeZone(_ code: String, _ zone: String?) throws {
        do {
            let result = try connection.execute("UPDATE devices SET time_zone = $2 WHERE code = $1", [code, zone])
            guard result.affectedRows == 1 else { throw Self.notRegistered(code) }
        } catch let error as PostgresError where error.sqlState == "22023" {
            throw DeviceStoreError(message: "unknown time zone \(zone ?? "")")
        }
    }

    /// Removes an outlet with its samples and totals; returns how many samples went with it.
    @discardableResult
    public func remove(_ code: String) throws -> Int {
        try connection.transaction {
            let device = try connection.execute("DELETE FROM devices WHERE code = $1 RETURNING id", [code])
            guard device.rowCount == 1, let id = try device.int64(row: 0, column: 0) else {
                throw Self.notRegistered(code)
            }
            // Both forms of its readings (migration 26), by their tables: the view would take them a row at a time.
            let samples = try connection.execute(
                """
                WITH rows AS (DELETE FROM samples_stored WHERE device_id = $1 RETURNING 1),
                     compact AS (DELETE FROM samples_compact WHERE device_id = $1 RETURNING readings)
                SELECT (SELECT count(*) FROM rows) + (SELECT coalesce(sum(readings), 0) FROM compact)
                """, [id])
            try connection.execute("DELETE FROM device_power_totals WHERE device_id = $1", [id])
            return try samples.int(row: 0, column: 0) ?? 0
        }
    }

    /// The claim key of outlet `code` (stored form); with `rotate`, a new one replaces it first, and the old key
    /// claims nothing from then on.
    public func claimKey(_ code: String, rotate: Bool = false) throws -> String {
        let result =
            rotate
            ? try connection.execute(
                "UPDATE devices SET claim_key = outletd_new_claim_key(), updated_at = now() WHERE code = $1 "
                    + "RETURNING claim_key", [code])
            : try connection.execute("SELECT claim_key FROM devices WHERE code = $1", [code])
        guard result.rowCount == 1, let key = result[0, 0] else { throw Self.notRegistered(code) }
        return key
    }

    /// The FullTopic patterns of registered Tasmota outlets (other than the default).
    public func tasmotaFullTopics() throws -> Set<String> {
        let result = try connection.execute(
            "SELECT DISTINCT full_topic FROM devices WHERE protocol = 'tasmota' AND full_topic IS NOT NULL")
        return Set((0..<result.rowCount).compactMap { result[$0, 0] })
    }

    /// Every outlet as the in-memory registry holds it.
    public func registryEntries() throws -> RegistryEntries {
        // Through a cursor, `registryPageRows` at a time: one result of every registered outlet
        // would hold them all in libpq's memory at once, beside the dictionary being built.
        try connection.transaction {
            let total = try connection.execute("SELECT count(*) FROM devices").int64(row: 0, column: 0) ?? 0
            var entries = RegistryEntries(minimumCapacity: Int(total))
            try connection.execute(
                "DECLARE outletd_registry NO SCROLL CURSOR FOR SELECT code, \(Self.registryColumns) FROM devices")
            while true {
                let result = try connection.execute("FETCH \(Self.registryPageRows) FROM outletd_registry")
                for row in 0..<result.rowCount {
                    guard let code = result[row, 0], let entry = try Self.registryEntry(result, row: row, from: 1)
                    else { continue }
                    entries[code] = entry
                }
                if result.rowCount < Self.registryPageRows { break }
            }
            try connection.execute("CLOSE outletd_registry")
            return entries
        }
    }

    static let registryPageRows = 5_000

    /// One outlet as the registry holds it, or nil when it is not registered.
    public func registryEntry(_ code: String) throws -> RegisteredDevice? {
        let result = try connection.execute(
            "SELECT \(Self.registryColumns) FROM devices WHERE code = $1", [code])
        guard result.rowCount == 1 else { return nil }
        return try Self.registryEntry(result, row: 0, from: 0)
    }

    private static let registryColumns =
        "id, enabled, protocol, protocol_topic, full_topic, channel, state_on_word, state_off_word, endpoint, "
        + "sensor_map, discovered_sensor_map"

    private static func registryEntry(_ result: PostgresResult, row: Int, from column: Int) throws
        -> RegisteredDevice?
    {
        guard let id = try result.int64(row: row, column: column) else { return nil }
        let protocolName = result[row, column + 2] ?? "native"
        var address: ProtocolAddress?
        if let outletProtocol = OutletProtocol(rawValue: protocolName), outletProtocol != .native,
            let topic = result[row, column + 3]
        {
            address = ProtocolAddress(
                outletProtocol: outletProtocol, deviceTopic: topic,
                channel: Int(try result.int64(row: row, column: column + 5) ?? 0),
                endpoint: result[row, column + 8] ?? "")
        }
        // Discovery's roles over the flags', role by role (a stored text that does not parse counts as none).
        func map(_ text: String?) -> ESPHomeProtocol.SensorMap {
            text.flatMap { try? ESPHomeProtocol.SensorMap.parse($0).get() } ?? ESPHomeProtocol.SensorMap()
        }
        let sensorMap = map(result[row, column + 9]).overlaid(by: map(result[row, column + 10]))
        return RegisteredDevice(
            id: Int32(truncatingIfNeeded: id), enabled: try result.bool(row: row, column: column + 1) ?? false,
            protocolName: protocolName, address: address,
            fullTopic: result[row, column + 4] ?? TasmotaProtocol.defaultFullTopic,
            stateWords: TasmotaProtocol.StateWords(
                on: result[row, column + 6] ?? "ON", off: result[row, column + 7] ?? "OFF"),
            sensorMap: sensorMap)
    }

    private static let columns =
        "id, code, name, description, (SELECT u.name FROM app_users u WHERE u.id = devices.owner_id), protocol, "
        + "enabled, created_at, protocol_topic, channel, full_topic, state_on_word, state_off_word, owner, claim_key, "
        + "endpoint, sensor_map, discovered_sensor_map"

    private static func record(_ result: PostgresResult, row: Int) throws -> DeviceRecord {
        guard let id = try result.int64(row: row, column: 0), let code = result[row, 1] else {
            throw DeviceStoreError(message: "unexpected devices row")
        }
        return DeviceRecord(
            id: Int32(truncatingIfNeeded: id), code: code, name: result[row, 2] ?? "",
            description: result[row, 3] ?? "", owner: result[row, 4], protocolName: result[row, 5] ?? "native",
            enabled: try result.bool(row: row, column: 6) ?? false, createdAt: try result.date(row: row, column: 7),
            protocolTopic: result[row, 8], channel: Int(try result.int64(row: row, column: 9) ?? 0),
            fullTopic: result[row, 10], stateOnWord: result[row, 11], stateOffWord: result[row, 12],
            ownerNote: result[row, 13], claimKey: result[row, 14] ?? "", endpoint: result[row, 15] ?? "",
            sensorMap: result[row, 16], discoveredSensorMap: result[row, 17])
    }

    static func notRegistered(_ code: String) -> DeviceStoreError {
        DeviceStoreError(message: "no device \(code) is registered")
    }
}
