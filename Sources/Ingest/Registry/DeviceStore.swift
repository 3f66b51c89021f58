import Foundation
import Postgres
import Telemetry

/// A row of `devices`, as the CLI shows it.
public struct DeviceRecord: Sendable, Equatable {
    public var id: Int32
    public var code: String
    public var name: String
    public var description: String
    public var owner: String?
    public var protocolName: String
    public var enabled: Bool
    public var createdAt: Date?
}

/// A row of `pending_devices`: a code that sent data without being registered.
public struct PendingDevice: Sendable, Equatable {
    public var code: String
    public var firstSeenAt: Date?
    public var lastSeenAt: Date?
    public var messageCount: Int64
    public var lastTopic: String
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
    let connection: PostgresConnection

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

        public init(
            code: String, name: String = "", description: String = "", owner: String? = nil, enabled: Bool = true
        ) {
            self.code = code
            self.name = name
            self.description = description
            self.owner = owner
            self.enabled = enabled
        }
    }

    /// Registers an outlet (and forgets it as pending). Running daemons accept it within a second.
    @discardableResult
    public func add(_ device: NewDevice) throws -> DeviceRecord {
        guard DeviceCode(device.code) != nil else {
            throw DeviceStoreError(
                message: "invalid device code \"\(device.code)\": use 1 to 64 of A-Z a-z 0-9 _ -")
        }
        do {
            return try connection.transaction {
                let result = try connection.execute(
                    """
                    INSERT INTO devices (code, name, description, owner, enabled) VALUES ($1, $2, $3, $4, $5)
                    RETURNING \(Self.columns)
                    """, [device.code, device.name, device.description, device.owner, device.enabled])
                try connection.execute("DELETE FROM pending_devices WHERE code = $1", [device.code])
                return try Self.record(result, row: 0)
            }
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw DeviceStoreError(message: "device \(device.code) is already registered")
        }
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

    /// Removes an outlet with its samples and totals; returns how many samples went with it.
    @discardableResult
    public func remove(_ code: String) throws -> Int {
        try connection.transaction {
            let device = try connection.execute("DELETE FROM devices WHERE code = $1 RETURNING id", [code])
            guard device.rowCount == 1, let id = try device.int64(row: 0, column: 0) else {
                throw Self.notRegistered(code)
            }
            let samples = try connection.execute("DELETE FROM samples WHERE device_id = $1", [id])
            try connection.execute("DELETE FROM device_power_totals WHERE device_id = $1", [id])
            return samples.affectedRows ?? 0
        }
    }

    /// Codes that sent data without being registered, most recently seen first.
    public func pending() throws -> [PendingDevice] {
        let result = try connection.execute(
            """
            SELECT code, first_seen_at, last_seen_at, message_count, last_topic
            FROM pending_devices ORDER BY last_seen_at DESC, code
            """)
        return try (0..<result.rowCount).map { row in
            PendingDevice(
                code: result[row, 0] ?? "", firstSeenAt: try result.date(row: row, column: 1),
                lastSeenAt: try result.date(row: row, column: 2),
                messageCount: try result.int64(row: row, column: 3) ?? 0,
                lastTopic: result[row, 4] ?? "")
        }
    }

    /// Registers a pending code in one step.
    @discardableResult
    public func approve(_ code: String, name: String? = nil, owner: String? = nil) throws -> DeviceRecord {
        let pending = try connection.execute("SELECT 1 FROM pending_devices WHERE code = $1", [code])
        guard pending.rowCount == 1 else {
            throw DeviceStoreError(message: "\(code) is not pending (see `outletd device pending`)")
        }
        return try add(NewDevice(code: code, name: name ?? "", owner: owner))
    }

    /// Every outlet as the in-memory registry holds it.
    public func registryEntries() throws -> [String: RegisteredDevice] {
        let result = try connection.execute("SELECT code, id, enabled, protocol FROM devices")
        var entries: [String: RegisteredDevice] = [:]
        entries.reserveCapacity(result.rowCount)
        for row in 0..<result.rowCount {
            guard let code = result[row, 0], let id = try result.int64(row: row, column: 1) else { continue }
            entries[code] = RegisteredDevice(
                id: Int32(truncatingIfNeeded: id), enabled: try result.bool(row: row, column: 2) ?? false,
                protocolName: result[row, 3] ?? "native")
        }
        return entries
    }

    /// One outlet as the registry holds it, or nil when it is not registered.
    public func registryEntry(_ code: String) throws -> RegisteredDevice? {
        let result = try connection.execute("SELECT id, enabled, protocol FROM devices WHERE code = $1", [code])
        guard result.rowCount == 1, let id = try result.int64(row: 0, column: 0) else { return nil }
        return RegisteredDevice(
            id: Int32(truncatingIfNeeded: id), enabled: try result.bool(row: 0, column: 1) ?? false,
            protocolName: result[0, 2] ?? "native")
    }

    private static let columns = "id, code, name, description, owner, protocol, enabled, created_at"

    private static func record(_ result: PostgresResult, row: Int) throws -> DeviceRecord {
        guard let id = try result.int64(row: row, column: 0), let code = result[row, 1] else {
            throw DeviceStoreError(message: "unexpected devices row")
        }
        return DeviceRecord(
            id: Int32(truncatingIfNeeded: id), code: code, name: result[row, 2] ?? "",
            description: result[row, 3] ?? "", owner: result[row, 4], protocolName: result[row, 5] ?? "native",
            enabled: try result.bool(row: row, column: 6) ?? false, createdAt: try result.date(row: row, column: 7))
    }

    private static func notRegistered(_ code: String) -> DeviceStoreError {
        DeviceStoreError(message: "no device \(code) is registered")
    }
}
