import CCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of spool records.
///
/// With the processor's `crc32` instruction where it has one (SSE 4.2, `CCRC32C`: eight bytes per
/// instruction); otherwise table-driven, eight bytes per step ("slicing by 8": eight tables of 256 entries, 8 KiB), then one
/// byte per step for the rest. Catches every burst error up to 32 bits and any torn write that leaves a
/// record's bytes half old and half new. Every message is checksummed twice (appended, read back).
enum CRC32C {
    /// `tables[k * 256 + b]`: the CRC of byte `b` followed by `k` zero bytes. Table 0 is the classic
    /// one-byte table.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[index] = crc
        }
        for slice in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// Whether the processor has the instruction.
    static let hasInstruction = outletd_crc32c_hardware_available() != 0

    /// Continues a running checksum over `bytes`; start with 0.
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard hasInstruction, let base = bytes.baseAddress else { return updateByTable(crc, bytes) }
        return outletd_crc32c_hardware(crc, base, bytes.count)
    }

    /// ``update(_:_:)`` without the instruction.
    static func updateByTable(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var value = ~crc
        tables.withUnsafeBufferPointer { table in
            var offset = 0
            while bytes.count - offset >= 8 {
                let low = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) ^ value
                let high = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                value =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                offset += 8
            }
            while offset < bytes.count {
                value = table[Int((value ^ UInt32(bytes[offset])) & 0xFF)] ^ (value >> 8)
                offset += 1
            }
        }
        return ~value
    }

    /// The checksum of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(0, $0) }
    }
}
