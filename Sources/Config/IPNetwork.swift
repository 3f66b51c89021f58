import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `::1/128`; a bare address is its own /32 or /128):
/// the reverse proxies whose `X-Forwarded-For` the owners' app believes (`app.trusted_proxies`).
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes: 4 for IPv4, 16 for IPv6.
    public let address: [UInt8]
    /// Leading bits that must match.
    public let prefixLength: Int

    /// Parses `10.0.0.0/8`, `192.168.1.7`, `fd00::/8` or `::1`; nil when `text` is none of these.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = Self.addressBytes(String(parts[0])) else { return nil }
        let bits = address.count * 8
        if parts.count == 2 {
            guard parts[1].allSatisfy(\.isASCII), let length = Int(parts[1]), (0...bits).contains(length) else {
                return nil
            }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        self.address = address
    }

    /// Whether `address` (text, as a socket reports it) lies in this network. An IPv4-mapped IPv6 address
    /// (`::ffff:10.1.2.3`) counts as its IPv4 address.
    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.addressBytes(address) else { return false }
        return contains(bytes)
    }

    func contains(_ bytes: [UInt8]) -> Bool {
        var candidate = bytes
        if candidate.count == 16 && self.address.count == 4 && candidate[0..<12] == Self.mappedPrefix[...] {
            candidate = Array(candidate[12...])
        }
        guard candidate.count == self.address.count else { return false }
        var remaining = prefixLength
        for index in 0..<candidate.count where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if candidate[index] & mask != self.address[index] & mask { return false }
            remaining -= 8
        }
        return true
    }

    public var description: String {
        let text = address.count == 4 ? address.map(String.init).joined(separator: ".") : Self.ipv6Text(address)
        return "\(text)/\(prefixLength)"
    }

    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// The bytes of an IPv4 or IPv6 address in text, or nil.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var ipv4 = in_addr()
        if inet_pton(AF_INET, text, &ipv4) == 1 {
            return withUnsafeBytes(of: &ipv4) { Array($0) }
        }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, text, &ipv6) == 1 {
            return withUnsafeBytes(of: &ipv6) { Array($0) }
        }
        return nil
    }

    private static func ipv6Text(_ bytes: [UInt8]) -> String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension IPNetwork {
    /// A comma-separated list of networks (`10.0.0.0/8, ::1`); throws naming the first entry that is not one.
    public static func list(_ text: String) throws(ConfigurationKeyError) -> [IPNetwork] {
        var networks: [IPNetwork] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let network = IPNetwork(trimmed) else {
                throw ConfigurationKeyError(
                    message: "\"\(trimmed)\" is not an IPv4 or IPv6 address or network (10.0.0.0/8, ::1/128)")
            }
            networks.append(network)
        }
        return networks
    }
}
