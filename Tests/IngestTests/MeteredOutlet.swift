import Foundation
import MQTT
import Telemetry
import TestSupport

/// A metering outlet for the automation tests: a ``SimulatedOutlet`` that obeys commands, reports its state, and
/// publishes a reading every `interval` (its load while on, 0 W while off) until stopped.
///
/// With `interruption`, a reading of `interruption.watts` replaces the load's whenever `interruption.every` seconds
/// have passed since the last one: decided from the same clock that stamps the readings, so no two interruptions are
/// further apart in measured time than `every` plus one reading, however late a slow machine runs the loop.
final class MeteredOutlet: Sendable {
    let outlet: SimulatedOutlet
    /// Watts drawn while on; change it to make a rule meet or not.
    let load: Locked<Double>
    private let publishing: Task<Void, Never>

    /// Starts on (its state reported), or off.
    init(
        code: String, prefix: String, load: Double, on: Bool = true, interval: Double = 0.2,
        interruption: (watts: Double, every: Double)? = nil
    ) async throws {
        let outlet = try SimulatedOutlet(code: code, prefix: prefix)
        try await outlet.publish("availability", "online")
        try await outlet.publish("state", #"{"state":"\#(on ? "on" : "off")"}"#)
        let load = Locked(load)
        let publisher = try Harness.publisher()
        let initiallyOn = on
        self.outlet = outlet
        self.load = load
        publishing = Task {
            defer { publisher.stop() }
            var seq = 0
            var interrupted = Date()
            while !Task.isCancelled {
                seq += 1
                let now = Date()
                let isOn = outlet.commands.value.last.map { $0.state == .on } ?? initiallyOn
                var watts = isOn ? load.value : 0
                if let interruption, isOn, now.timeIntervalSince(interrupted) >= interruption.every {
                    watts = interruption.watts
                    interrupted = now
                }
                _ = try? publisher.publish(
                    "\(prefix)/\(code)/telemetry",
                    payload: Payloads.reading(voltage: 230, current: watts / 230, power: watts, ts: now, seq: seq))
                try? await Task.sleep(for: .milliseconds(Int(interval * 1_000)))
            }
        }
    }

    /// The states it was told, in order.
    var commands: [SwitchState] { outlet.commands.value.map(\.state) }

    func stop() {
        publishing.cancel()
        outlet.stop()
    }
}
