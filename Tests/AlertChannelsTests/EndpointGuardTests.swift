import Foundation
import Testing

@testable import AlertChannels

/// The private-address rule: an owner's URL may not make outletd call loopback, private, link-local or other
/// internal addresses, in whatever form the address is written, unless the operator allows it.
@Suite struct EndpointGuardTests {
    /// URLs whose host is, or resolves (without the network: numeric forms, /etc/hosts) to, an address that is not
    /// public.
    static let internalURLs = [
        "http://127.0.0.1/", "http://127.0.0.1:9464/metrics", "https://127.255.255.254/", "http://[::1]/",
        "http://[::1]:8080/x", "http://10.1.2.3/", "http://172.16.0.1/", "http://172.31.255.255/",
        "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/",
        "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[fe80::1]/", "http://[fec0::1]/",
        "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/", "http://[::ffff:7f00:1]/",
        "http://[::127.0.0.1]/", "http://[64:ff9b::a00:1]/", "http://[2002:7f00:1::]/", "http://[ff02::1]/",
        "http://localhost/", "http://localhost:5432/", "http://LocalHost/", "http://0.0.0.0/", "http://0/",
        "http://[::]/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f.0.0.1/", "http://0x7f000001/",
        "http://127.1/", "http://017700000001/", "http://3232235777/", "http://224.0.0.1/",
        "http://255.255.255.255/", "http://[2001:db8::1]/",
    ]

    @Test(arguments: internalURLs) func refusesInternalAddresses(url: String) async throws {
        await #expect {
            try await EndpointGuard.check(url: url, allowPrivate: false)
        } throws: { error in
            guard case .permanent(let reason) = error as? DeliveryError else { return false }
            return reason.contains("not allowed")
        }
    }

    @Test(arguments: internalURLs) func allowsInternalAddressesWhenTheOperatorDoes(url: String) async throws {
        let endpoint = try await EndpointGuard.resolve(url: url, allowPrivate: true)
        #expect(!endpoint.addresses.isEmpty)
        #expect(endpoint.addresses.allSatisfy { !EndpointGuard.isPublic($0) })
    }

    /// Numeric forms resolve to the address they mean, and a public one passes.
    @Test(arguments: [
        ("http://1.1.1.1/", "1.1.1.1"), ("https://16843009/hook", "1.1.1.1"),
        ("http://0x5db8d80e:8080/", "93.184.216.14"),
        ("https://[2606:4700:4700::1111]/x", "2606:4700:4700::1111"), ("http://[::ffff:1.1.1.1]/", "::ffff:1.1.1.1"),
        ("http://[2002:101:101::1]/", "2002:101:101::1"),
    ])
    func allowsPublicAddresses(url: String, address: String) async throws {
        let endpoint = try await EndpointGuard.resolve(url: url, allowPrivate: false)
        #expect(endpoint.pinned.description == address)
    }

    @Test(arguments: [
        "ftp://example.com/", "file:///etc/passwd", "javascript:alert(1)", "example.com/hook", "http:///x",
        "https://user:secret@example.com/", "http://exa mple.com/", "http://ex%61mple.com/", "http://1.1.1.1:0/",
        "http://1.1.1.1/\r\nHost: x", "",
    ])
    func refusesWhatIsNotAPlainHTTPURL(url: String) async throws {
        await #expect {
            try await EndpointGuard.check(url: url, allowPrivate: true)
        } throws: { error in
            guard case .permanent = error as? DeliveryError else { return false }
            return true
        }
    }

    /// A request goes to the address that was checked, not to what the name resolves to a moment later (DNS
    /// rebinding): its client's resolver is overridden for that one name.
    @Test func requestsArePinnedToTheAddressChecked() throws {
        let url = try #require(URL(string: "https://hooks.example.com/x"))
        let endpoint = ResolvedEndpoint(
            url: url, scheme: "https", host: "hooks.example.com", port: 443,
            addresses: [try #require(IPAddress("93.184.216.14")), try #require(IPAddress("2606:2800:21f::1"))],
            pinned: try #require(IPAddress("93.184.216.14")))
        let pinned = HTTPDelivery.configuration(for: endpoint, allowPrivate: false, timeout: .seconds(3))
        #expect(pinned.dnsOverride == ["hooks.example.com": "93.184.216.14"])
        #expect(pinned.timeout.connect == .seconds(3))
        #expect(HTTPDelivery.configuration(for: endpoint, allowPrivate: true, timeout: .seconds(3)).dnsOverride == [:])
    }

    @Test func aNameThatDoesNotResolveIsRetryable() async throws {
        await #expect {
            try await EndpointGuard.check(url: "https://no-such-host.invalid/hook", allowPrivate: false)
        } throws: { error in
            guard case .retryable = error as? DeliveryError else { return false }
            return true
        }
    }

    @Test(arguments: [
        ("8.8.8.8", true), ("172.15.255.255", true), ("172.32.0.0", true), ("100.128.0.0", true),
        ("169.253.1.1", true), ("2606:4700::1", true), ("64:ff9b::808:808", true), ("10.0.0.0", false),
        ("100.127.255.255", false), ("198.18.0.1", false), ("240.0.0.1", false), ("::", false), ("::1", false),
        ("fe80::1", false), ("febf::1", false), ("fc00::", false), ("ff00::", false), ("::ffff:192.168.0.1", false),
        ("64:ff9b:1::1", false), ("100::1", false),
    ])
    func classifiesAddresses(text: String, isPublic: Bool) throws {
        let address = try #require(IPAddress(text))
        #expect(EndpointGuard.isPublic(address) == isPublic)
        #expect(address.description == text)
    }
}
