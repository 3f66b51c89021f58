import Foundation
import Protocols
import Telemetry
import TestSupport
import Testing

@testable import Storage

/// The registry's table (an `OrderedDictionary` whose removals swap the last entry into the hole) against a
/// plain `Dictionary` model, through loads, updates and removals; no database.
@Suite struct DeviceRegistryTests {
    /// An outlet for `number`: native for most, every fifth a Tasmota channel of a shared topic.
    static func device(_ number: Int, enabled: Bool = true) -> RegisteredDevice {
        if number % 5 == 0 {
            return RegisteredDevice(
                id: Int32(number), enabled: enabled, protocolName: "tasmota",
                address: ProtocolAddress(
                    outletProtocol: .tasmota, deviceTopic: "strip-\(number / 20)", channel: number % 20 / 5 + 1))
        }
        return RegisteredDevice(id: Int32(number), enabled: enabled, protocolName: "native")
    }

    static func code(_ number: Int) -> String { "outlet-\(number)" }

    /// Every code of the model is found with its entry, no other code is, and each Tasmota topic lists
    /// exactly the model's channels.
    static func expectSame(_ registry: DeviceRegistry, _ model: [String: RegisteredDevice], probing numbers: Range<Int>)
    {
        #expect(registry.count == model.count)
        for number in numbers {
            #expect(registry.lookup(code(number)) == model[code(number)], "\(code(number))")
        }
        var topics: [String: [(Int, String)]] = [:]
        for (code, device) in model {
            guard let address = device.address else { continue }
            topics[address.deviceTopic, default: []].append((address.channel, code))
        }
        for topic in Set((numbers.lowerBound / 20...numbers.upperBound / 20).map { "strip-\($0)" }) {
            let found = registry.lookup(.tasmota, topic: topic).map { "\($0.channel)=\($0.code)" }
            let expected = (topics[topic] ?? []).sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }
            #expect(found == expected, "\(topic)")
        }
    }

    @Test(
        arguments: [
            // (what happens after a load of outlets 0..<200, by outlet number; nil removes)
            ("remove the first", [(0, false as Bool?)]),
            ("remove the last", [(199, nil)]),
            ("remove one in the middle", [(100, nil)]),
            ("remove every third", stride(from: 0, to: 200, by: 3).map { ($0, nil as Bool?) }),
            ("remove all, then add some back", (0..<200).map { ($0, nil as Bool?) } + [(7, true), (10, false)]),
            ("disable and re-enable", [(5, false), (6, false), (5, true)]),
            ("add new outlets", [(250, true), (255, true), (300, false)]),
            ("remove an unknown code", [(999, nil)]),
        ] as [(String, [(Int, Bool?)])])
    func updatesKeepTheTableAndItsIndexEqualToTheModel(_ label: String, _ steps: [(Int, Bool?)]) {
        let registry = DeviceRegistry()
        var model: [String: RegisteredDevice] = [:]
        var loaded = RegistryEntries()
        for number in 0..<200 {
            loaded[Self.code(number)] = Self.device(number)
            model[Self.code(number)] = Self.device(number)
        }
        registry.replaceAll(loaded)
        Self.expectSame(registry, model, probing: 0..<320)
        for (number, enabled) in steps {
            let entry = enabled.map { Self.device(number, enabled: $0) }
            registry.update(Self.code(number), entry)
            model[Self.code(number)] = entry
        }
        Self.expectSame(registry, model, probing: 0..<320)
    }

    @Test func aLongRandomRunMatchesTheModel() {
        var generator = SplitMix64(seed: 29)
        let registry = DeviceRegistry()
        var model: [String: RegisteredDevice] = [:]
        registry.replaceAll([:])
        for _ in 0..<5_000 {
            let number = Int(generator.next() % 400)
            let entry = generator.next() % 3 == 0 ? nil : Self.device(number, enabled: generator.next() % 2 == 0)
            registry.update(Self.code(number), entry)
            model[Self.code(number)] = entry
        }
        Self.expectSame(registry, model, probing: 0..<400)
    }
}
