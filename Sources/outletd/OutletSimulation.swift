import Foundation
import Telemetry

/// A small, fast, seedable random number generator (SplitMix64), so a simulated fleet behaves
/// the same in every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What a simulated outlet has plugged in; each draws power the way that appliance does.
enum Appliance: CaseIterable {
    case fridge, television, kettle, washingMachine, computer, lamp

    /// Power factor of the load: resistive loads 1.0, motors and electronics less.
    var powerFactor: Double {
        switch self {
        case .fridge: 0.82
        case .television: 0.93
        case .kettle: 1.0
        case .washingMachine: 0.88
        case .computer: 0.95
        case .lamp: 0.6
        }
    }
}

/// One simulated outlet: an appliance, a mains voltage (127 V or 220 V, as in Brazil), a
/// cumulative energy counter and a sequence number.
struct SimulatedOutlet {
    let code: String
    let appliance: Appliance
    let nominalVoltage: Double
    private var random: SplitMix64
    private(set) var sequence: Int64 = 0
    /// The relay: off, the outlet draws nothing (its readings say 0 W and 0 A).
    var isOn = true
    private var energyWattHours: Double
    private var lastAt: Date?
    /// Seconds into the appliance's own cycle, so outlets are not in lockstep.
    private let phase: Double

    init(code: String, index: Int) {
        self.code = code
        var random = SplitMix64(seed: 0x5EED_0000 &+ UInt64(index) &* 7_919)
        self.appliance = Appliance.allCases[Int(random.next() % UInt64(Appliance.allCases.count))]
        self.nominalVoltage = random.next() % 3 == 0 ? 220 : 127
        self.energyWattHours = Double(random.next() % 50_000) / 10
        self.phase = Double(random.next() % 86_400)
        self.random = random
    }

    private mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        Double.random(in: range, using: &random)
    }

    /// Active power at time `t` (seconds since the epoch), watts.
    private mutating func powerWatts(at t: Double) -> Double {
        let local = (t + phase)
        switch appliance {
        case .fridge:
            // Compressor: 40-minute cycle, running 40 % of it, a start-up surge, 2 W idle.
            let inCycle = local.truncatingRemainder(dividingBy: 2_400)
            if inCycle < 5 { return uniform(350...450) }
            return inCycle < 960 ? uniform(95...130) : uniform(1.5...2.5)
        case .television:
            // On for 4 of every 12 hours, standby otherwise.
            let inCycle = local.truncatingRemainder(dividingBy: 43_200)
            return inCycle < 14_400 ? uniform(70...120) : uniform(0.4...0.6)
        case .kettle:
            // Boils for 3 minutes every 2 hours.
            return local.truncatingRemainder(dividingBy: 7_200) < 180 ? uniform(1_850...2_150) : 0
        case .washingMachine:
            // 90-minute programme every 6 hours: heating, washing, spinning.
            let inCycle = local.truncatingRemainder(dividingBy: 21_600)
            switch inCycle {
            case ..<900: return uniform(1_900...2_100)
            case ..<4_200: return uniform(150...450)
            case ..<5_400: return uniform(400...600)
            default: return uniform(0.8...1.2)
            }
        case .computer:
            return 60 + 40 * sin(local / 600) + uniform(-10...10) + 30
        case .lamp:
            return local.truncatingRemainder(dividingBy: 28_800) < 18_000 ? uniform(8.5...9.5) : 0
        }
    }

    /// The next reading, at `now`.
    mutating func nextReading(at now: Date) -> Reading {
        sequence += 1
        let t = now.timeIntervalSince1970
        let appliancePower = max(0, powerWatts(at: t))
        let power = isOn ? appliancePower : 0
        let voltage = nominalVoltage * (1 + 0.03 * sin(t / 3_600 + phase)) + uniform(-0.8...0.8)
        let powerFactor = power == 0 ? 1.0 : appliance.powerFactor
        let current = power / (voltage * powerFactor)
        if let lastAt { energyWattHours += power * now.timeIntervalSince(lastAt) / 3_600 }
        lastAt = now
        return Reading(
            measuredAt: now, receivedAt: now, deviceTime: now,
            voltageVolts: (voltage * 10).rounded() / 10,
            // As people read them (and cheap outlets report them): 1 decimal for V and W, 2 for A.
            currentAmperes: (current * 100).rounded() / 100,
            powerWatts: (power * 10).rounded() / 10,
            powerFactor: powerFactor,
            energyWattHours: (energyWattHours * 1_000).rounded() / 1_000,
            sequence: sequence)
    }

    /// A payload a faulty outlet might send, for demos of rejection (`--invalid-percent`).
    mutating func invalidPayload(at now: Date) -> [UInt8] {
        switch random.next() % 4 {
        case 0: return Array(#"{"voltage": 9999, "current": 0.5}"#.utf8)
        case 1: return Array(#"{"voltage": 127.0, "current": "lots"}"#.utf8)
        case 2: return Array(#"{"voltage": 127.0, "current": 0.5"#.utf8)
        default: return Array(#"{"current": 0.5}"#.utf8)
        }
    }
}

/// A command a simulated outlet received on `<prefix>/<code>/command` (`{"command_id":42,"state":"on"}`).
struct SimulatedCommand: Sendable, Equatable {
    var code: String
    var commandID: Int64
    var turnOn: Bool

    /// The command in `payload` for outlet `code`, or nil when it is not one.
    static func parse(code: String, payload: [UInt8]) -> SimulatedCommand? {
        guard case .object(let members)? = try? JSONParser.parse(payload),
            let id = members["command_id"]?.numberValue(acceptingNumericString: false), id == id.rounded(),
            case .string(let state)? = members["state"], state == "on" || state == "off"
        else { return nil }
        return SimulatedCommand(code: code, commandID: Int64(id), turnOn: state == "on")
    }

    /// The state report confirming it, as a native outlet sends it (retained).
    var statePayload: [UInt8] { Array(#"{"state":"\#(turnOn ? "on" : "off")","command_id":\#(commandID)}"#.utf8) }
}
