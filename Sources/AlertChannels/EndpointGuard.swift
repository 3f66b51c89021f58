import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address, as the resolver returned it.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// Four bytes, in network order.
    case v4([UInt8])
    /// Sixteen bytes, in network order.
    case v6([UInt8])

    /// Parses a numeric address in its standard form (`inet_pton`: dotted quad, or IPv6 text without brackets).
    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(withUnsafeBytes(of: &v4) { Array($0) })
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// The standard text form (`inet_ntop`), without brackets.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch self {
        case .v4(let bytes):
            _ = bytes.withUnsafeBytes { inet_ntop(AF_INET, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        case .v6(let bytes):
            _ = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A URL that `EndpointGuard` let through: its host's addresses at this moment, and the one to connect to.
public struct ResolvedEndpoint: Sendable, Equatable {
    public var url: URL
    /// `http` or `https`.
    public var scheme: String
    /// The URL's host as written (a name, or an address without brackets).
    public var host: String
    public var port: Int
    /// Every address the host resolved to (each one checked).
    public var addresses: [IPAddress]
    /// The address the request must go to: the first of `addresses`.
    public var pinned: IPAddress
}

/// The rule that keeps owners' URLs (webhooks, push endpoints) off outletd's own network: a URL's host is resolved
/// when the message is sent, and refused when any of its addresses is loopback, private, link-local, unique-local,
/// unspecified, multicast, reserved, or an IPv4-mapped (or NAT64, 6to4) form of one, unless the operator allows
/// private addresses (`alerts.webhook_allow_private`). Numeric hosts in any form the system resolver takes (`127.1`,
/// `2130706433`, `0177.0.0.1`) are resolved by the same resolver, so they are judged by the address they reach.
public enum EndpointGuard {
    /// How long resolving a host may take.
    public static let resolveTimeout: Duration = .seconds(5)

    /// Refuses `url` (`.permanent`) unless it is an http(s) URL whose host resolves only to public addresses, or
    /// `allowPrivate`; `.retryable` when the name does not resolve now.
    public static func check(url: String, allowPrivate: Bool) async throws(DeliveryError) {
        _ = try await resolve(url: url, allowPrivate: allowPrivate)
    }

    /// As ``check(url:allowPrivate:)``, returning the addresses checked, the one to connect to first.
    public static func resolve(url text: String, allowPrivate: Bool) async throws(DeliveryError) -> ResolvedEndpoint {
        let (url, scheme, host, port) = try parse(text)
        let addresses: [IPAddress]
        if let literal = IPAddress(host) {
            addresses = [literal]
        } else {
            addresses = try await lookUp(host: host, timeout: resolveTimeout)
        }
        guard let first = addresses.first else { throw .retryable("\(host) has no address") }
        if !allowPrivate, let refused = addresses.first(where: { !isPublic($0) }) {
            throw .permanent("\(host) is \(refused), a loopback, private or reserved address; not allowed")
        }
        return ResolvedEndpoint(
            url: url, scheme: scheme, host: host, port: port, addresses: addresses, pinned: first)
    }

    /// The URL's parts; refuses what is not http(s), has no host, carries credentials or a percent-encoded host.
    static func parse(_ text: String) throws(DeliveryError) -> (URL, String, String, Int) {
        guard text.utf8.count <= 2_048, !text.contains(where: { $0.isWhitespace || $0.isNewline }),
            let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .permanent("not an http(s) URL") }
        guard let host = url.host(percentEncoded: false), !host.isEmpty,
            host == url.host(percentEncoded: true)
        else { throw .permanent("the URL has no usable host") }
        guard url.user == nil, url.password == nil else { throw .permanent("credentials in a URL are not allowed") }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65_535).contains(port) else { throw .permanent("port \(port) is out of range") }
        return (url, scheme, host, port)
    }

    /// Whether `address` may be called when private addresses are not allowed.
    public static func isPublic(_ address: IPAddress) -> Bool {
        switch address {
        case .v4(let bytes): return isPublicV4(bytes)
        case .v6(let bytes): return isPublicV6(bytes)
        }
    }

    static func isPublicV4(_ b: [UInt8]) -> Bool {
        guard b.count == 4 else { return false }
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return false  // "this network", 0.0.0.0
        case (10, _, _): return false  // private
        case (100, 64...127, _): return false  // shared address space (carrier-grade NAT)
        case (127, _, _): return false  // loopback
        case (169, 254, _): return false  // link-local (cloud metadata services live here)
        case (172, 16...31, _): return false  // private
        case (192, 0, 0), (192, 0, 2): return false  // IETF protocol assignments, TEST-NET-1
        case (192, 88, 99): return false  // 6to4 relay anycast (deprecated)
        case (192, 168, _): return false  // private
        case (198, 18...19, _): return false  // benchmarking
        case (198, 51, 100), (203, 0, 113): return false  // TEST-NET-2, TEST-NET-3
        case (224...255, _, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    static func isPublicV6(_ b: [UInt8]) -> Bool {
        guard b.count == 16 else { return false }
        let prefix96 = b[0..<12]
        if prefix96.allSatisfy({ $0 == 0 }) { return false }  // ::, ::1, IPv4-compatible (deprecated)
        if prefix96.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) {
            return isPublicV4(Array(b[12..<16]))  // IPv4-mapped
        }
        if prefix96.elementsEqual([0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) {
            return isPublicV4(Array(b[12..<16]))  // NAT64 well-known prefix
        }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4] == 0, b[5] == 1 { return false }  // local NAT64
        if b[0] == 0x20, b[1] == 0x02 { return isPublicV4(Array(b[2..<6])) }  // 6to4
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }  // documentation
        if b[0] == 0x01, b[1] == 0x00, b[2...7].allSatisfy({ $0 == 0 }) { return false }  // discard-only
        if b[0] & 0xFE == 0xFC { return false }  // unique-local fc00::/7
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return false }  // link-local fe80::/10
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return false }  // site-local fec0::/10 (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        return true
    }

    /// The host's addresses by the system resolver (`getaddrinfo`, on NIO's thread pool), within `timeout`.
    static func lookUp(host: String, timeout: Duration) async throws(DeliveryError) -> [IPAddress] {
        let result: Result<[IPAddress], DeliveryError> = await withCheckedContinuation { continuation in
            let once = NIOLockedValueBox<CheckedContinuation<Result<[IPAddress], DeliveryError>, Never>?>(continuation)
            @Sendable func finish(_ result: Result<[IPAddress], DeliveryError>) {
                once.withLockedValue { pending in
                    pending?.resume(returning: result)
                    pending = nil
                }
            }
            let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .init(timeout)) {
                finish(.failure(.retryable("resolving \(host) took longer than \(timeout)")))
            }
            NIOThreadPool.singleton.submit { state in
                guard case .active = state else {
                    finish(.failure(.retryable("the resolver's thread pool is not running")))
                    return
                }
                finish(getAddresses(host: host))
                timer.cancel()
            }
        }
        return try result.get()
    }

    /// `getaddrinfo` for TCP, both families, in the resolver's order, without duplicates.
    static func getAddresses(host: String) -> Result<[IPAddress], DeliveryError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason = String(cString: gai_strerror(status))
            if status == EAI_NONAME { return .failure(.retryable("\(host) does not resolve: \(reason)")) }
            return .failure(.retryable("resolving \(host): \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var cursor = list
        while let entry = cursor?.pointee {
            cursor = entry.ai_next
            guard let socketAddress = entry.ai_addr else { continue }
            let address: IPAddress
            switch entry.ai_family {
            case AF_INET:
                address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var raw = $0.pointee.sin_addr
                    return .v4(withUnsafeBytes(of: &raw) { Array($0) })
                }
            case AF_INET6:
                address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var raw = $0.pointee.sin6_addr
                    return .v6(withUnsafeBytes(of: &raw) { Array($0) })
                }
            default:
                continue
            }
            if !addresses.contains(address) { addresses.append(address) }
        }
        return .success(addresses)
    }
}

extension TimeAmount {
    /// A Swift `Duration` as NIO's nanoseconds.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
