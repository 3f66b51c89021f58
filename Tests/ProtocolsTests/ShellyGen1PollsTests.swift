import Foundation
import Protocols
import Telemetry
import Testing

/// Pairing a Shelly Gen1 poll's `relay/<n>/power` and `relay/<n>/energy` messages.
@Suite("ShellyGen1Polls")
struct ShellyGen1PollsTests {
    /// One message of a script: which outlet, power (W) or energy (watt-minutes, nil = `null`), seconds after t0.
    enum Step: Sendable {
        case power(String, Double, at: Double)
        case energy(String, Double?, at: Double)
        case expire(at: Double)
        case completeAll
    }

    /// A completed poll as (outlet, power, energy, seconds after t0).
    struct Poll: Equatable, Sendable, CustomStringConvertible {
        var outlet: String
        var power: Double?
        var energy: Double?
        var at: Double
        var description: String {
            "\(outlet) \(power.map { "\($0) W" } ?? "-") \(energy.map { "\($0) Wmin" } ?? "-") @\(at)"
        }
    }

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static let scripts: [(String, [Step], [Poll], Bool)] = [
        (
            "the firmware's order, power then energy: each sample carries its own poll's counter",
            [
                .power("a", 20, at: 0), .energy("a", 600, at: 0.001), .power("a", 21, at: 30),
                .energy("a", 601, at: 30.001),
            ],
            [Poll(outlet: "a", power: 20, energy: 600, at: 0), Poll(outlet: "a", power: 21, energy: 601, at: 30)], true
        ),
        (
            "energy first works too",
            [.energy("a", 600, at: 0), .power("a", 20, at: 0.2)],
            [Poll(outlet: "a", power: 20, energy: 600, at: 0.2)], true
        ),
        (
            "interleaved outlets pair by outlet",
            [.power("a", 1, at: 0), .power("b", 2, at: 0.01), .energy("b", 20, at: 0.02), .energy("a", 10, at: 0.03)],
            [Poll(outlet: "b", power: 2, energy: 20, at: 0.01), Poll(outlet: "a", power: 1, energy: 10, at: 0)], true
        ),
        (
            "a power without energy ends when the next power comes",
            [.power("a", 5, at: 0), .power("a", 6, at: 30), .energy("a", 60, at: 30.001)],
            [Poll(outlet: "a", power: 5, energy: nil, at: 0), Poll(outlet: "a", power: 6, energy: 60, at: 30)], true
        ),
        (
            "an energy later than the window is not this poll's",
            [.power("a", 5, at: 0), .energy("a", 60, at: 1.5), .expire(at: 3)],
            [Poll(outlet: "a", power: 5, energy: nil, at: 0), Poll(outlet: "a", power: nil, energy: 60, at: 1.5)], true
        ),
        (
            "a null counter is no counter",
            [.power("a", 5, at: 0), .energy("a", nil, at: 0.01)],
            [Poll(outlet: "a", power: 5, energy: nil, at: 0)], true
        ),
        (
            "expiry ends only polls older than the window",
            [.power("a", 5, at: 0), .power("b", 6, at: 0.9), .expire(at: 1.5)],
            [Poll(outlet: "a", power: 5, energy: nil, at: 0)], false
        ),
        (
            "at shutdown every open poll ends with what it has",
            [.power("a", 5, at: 0), .energy("b", 6, at: 0.2), .completeAll],
            [Poll(outlet: "a", power: 5, energy: nil, at: 0), Poll(outlet: "b", power: nil, energy: 6, at: 0.2)], true
        ),
    ]

    @Test(arguments: scripts)
    func pairsThePollsOfEachOutlet(name: String, steps: [Step], expected: [Poll], endsEmpty: Bool) {
        var polls = ShellyGen1Polls<String>()
        var completed: [ShellyGen1Polls<String>.Completed] = []
        for step in steps {
            switch step {
            case .power(let outlet, let watts, let at):
                completed += polls.addPower(watts, of: outlet, at: Self.t0.addingTimeInterval(at))
            case .energy(let outlet, let wattMinutes, let at):
                completed += polls.addEnergy(wattMinutes, of: outlet, at: Self.t0.addingTimeInterval(at))
            case .expire(let at):
                completed += polls.expire(openedBefore: Self.t0.addingTimeInterval(at))
            case .completeAll:
                completed += polls.completeAll()
            }
        }
        let got = completed.map {
            Poll(
                outlet: $0.outlet, power: $0.powerWatts, energy: $0.energyWattMinutes,
                at: ($0.receivedAt.timeIntervalSince(Self.t0) * 1_000).rounded() / 1_000)
        }
        #expect(got == expected, "\(name)")
        #expect(polls.isEmpty == endsEmpty)
    }

    @Test func nextExpiryIsTheOldestOpenPollPlusTheWindow() {
        var polls = ShellyGen1Polls<String>()
        #expect(polls.nextExpiry == nil)
        _ = polls.addPower(1, of: "a", at: Self.t0.addingTimeInterval(5))
        _ = polls.addEnergy(1, of: "b", at: Self.t0.addingTimeInterval(2))
        #expect(polls.nextExpiry == Self.t0.addingTimeInterval(2 + ShellyGen1Polls<String>.window))
    }
}
