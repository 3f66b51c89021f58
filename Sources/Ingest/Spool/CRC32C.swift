/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of spool records.
///
/// Table-driven, one byte per step. Catches every burst error up to 32 bits and any torn write
/// that leaves a record's bytes half old and half new.
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index -> UInt32 in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    /// Continues a running checksum over `bytes`; start with 0.
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var value = ~crc
        table.withUnsafeBufferPointer { table in
            for byte in bytes {
                value = table[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8)
            }
        }
        return ~value
    }

    /// The checksum of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(0, $0) }
    }
}
