import Foundation
import Protocols
import Telemetry
import TestSupport
import Testing

@Suite("NativeProtocol.encodeTelemetry")
struct NativeTelemetryEncoderTests {
    @Test(
        "writes the fields in documented order and omits nil ones",
        arguments: [
            (
                Reading(
                    measuredAt: receivedAt, receivedAt: receivedAt, voltageVolts: 227.1, currentAmperes: 0.412,
                    powerWatts: 93.5),
                #"{"voltage":227.1,"current":0.412,"power":93.5,"ts":1714564800000}"#
            ),
            (
                Reading(
                    measuredAt: receivedAt, receivedAt: receivedAt, deviceTime: at(-1, microseconds: 250_000),
                    voltageVolts: 230, currentAmperes: 1, powerWatts: 180, powerFactor: 0.78,
                    energyWattHours: 1e-05, sequence: 9),
                #"{"voltage":230.0,"current":1.0,"power":180.0,"pf":0.78,"energy_wh":1e-05,"ts":1714564799250,"seq":9}"#
            ),
            (
                Reading(measuredAt: receivedAt, receivedAt: receivedAt, powerWatts: .nan),
                #"{"power":null,"ts":1714564800000}"#
            ),
        ] as [(Reading, String)]
    )
    func writesDocumentedJSON(reading: Reading, expected: String) {
        #expect(String(decoding: NativeProtocol.encodeTelemetry(reading), as: UTF8.self) == expected)
    }

    @Test("what the simulator encodes decodes back to the same reading")
    func roundTrips() throws {
        var generator = SplitMix64(seed: 5)
        for _ in 0..<2_000 {
            let deviceTime = at(
                Int64.random(in: -300...299, using: &generator),
                microseconds: Int64.random(in: 0...999, using: &generator) * 1_000)
            let reading = Reading(
                measuredAt: deviceTime,
                receivedAt: receivedAt,
                deviceTime: deviceTime,
                voltageVolts: Double.random(in: 0...500, using: &generator),
                currentAmperes: Double.random(in: 0...100, using: &generator),
                powerWatts: Double.random(in: 0...50_000, using: &generator),
                powerFactor: Bool.random(using: &generator) ? Double.random(in: -1...1, using: &generator) : nil,
                energyWattHours: Bool.random(using: &generator) ? Double.random(in: 0...1e9, using: &generator) : nil,
                sequence: Bool.random(using: &generator) ? Int64.random(in: 0...(1 << 53), using: &generator) : nil
            )
            let decoded = NativeProtocol.decodeTelemetry(
                NativeProtocol.encodeTelemetry(reading), receivedAt: receivedAt, limits: ValidationLimits())
            #expect(decoded.readings == [reading])
            if decoded.readings != [reading] { return }
        }
    }
}
