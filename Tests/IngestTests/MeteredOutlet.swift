import Foundation
import MQTT
import Telemetry
import TestSupport

/// A metering outlet for the automation tests: a ``SimulatedOutlet`` that obeys commands, reports its state, and
/// publishes a reading every `interval` (its load while on, 0 W while off) until stopped.
final class MeteredOutlet: Sendable {
    let outlet: SimulatedOutlet
    /// Watts drawn while on; change it to make a rule meet or not.
    let load: Locked<Double>
    private let publishing: Task<Void, Never>

    /// Starts on (its state reported), or off.
    init(code: String, prefix: String, load: Double, on: Bool = true, interval: Double = 0.2) async throws {
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
            while !Task.isCancelled {
                seq += 1
                let isOn = outlet.commands.value.last.map { $0.state == .on } ?? initiallyOn
                let watts = isOn ? load.value : 0
                _ = try? publisher.publish(
                    "\(prefix)/\(code)/telemetry",
                    payload: Payloads.reading(voltage: 230, current: watts / 230, power: watts, ts: Date(), seq: seq))
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
