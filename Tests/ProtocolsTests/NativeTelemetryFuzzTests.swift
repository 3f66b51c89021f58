import Foundation
import Protocols
import Telemetry
import TestSupport
import Testing

@Suite("NativeProtocol.decodeTelemetry under random input")
struct NativeTelemetryFuzzTests {
    static let validPayload = Array(
        (#"[{"voltage":227.1,"current":0.412,"power":90,"pf":0.96,"energy_wh":"1234.5","#
            + #""ts":"2024-05-01T11:59:00.5Z","seq":7},{"voltage":"230","current":1,"ts":1714564790000}]"#)
            .utf8)
    /// Bytes that steer random input towards interesting JSON.
    static let interestingBytes =
        Array(#"{}[]":,.-+eE0123456789\u"tfn ."#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xF4, 0xFF]

    /// Checks what must hold for any decoded message, whatever the input.
    static func checkInvariants(_ result: DecodedMessage, payloadCount: Int, limits: ValidationLimits) {
        #expect(!result.readings.isEmpty || !result.rejections.isEmpty)
        #expect(
            result.readings.count + result.rejections.count + result.duplicates
                <= max(1, limits.maxReadingsPerMessage))
        #expect(Set(result.readings.map(\.measuredAt)).count == result.readings.count)
        for reading in result.readings {
            let voltage = reading.voltageVolts ?? -1
            let current = reading.currentAmperes ?? -1
            #expect(limits.voltageVolts.contains(voltage))
            #expect(limits.currentAmperes.contains(current))
            #expect(limits.powerWatts.contains(reading.powerWatts))
            #expect(reading.powerFactor.map { limits.powerFactor.contains($0) } ?? true)
            #expect(reading.energyWattHours.map { $0.isFinite && $0 >= 0 } ?? true)
            #expect((reading.sequence ?? 0) >= 0)
            // The device time, or (array elements without one) up to the array's length in µs before receipt.
            let earlier = reading.receivedAt.microsecondsSince1970 - reading.measuredAt.microsecondsSince1970
            #expect(
                reading.measuredAt == reading.deviceTime
                    || (earlier >= 0 && earlier < max(1, limits.maxReadingsPerMessage)))
            #expect(reading.receivedAt == receivedAt)
        }
        for rejection in result.rejections {
            #expect(!rejection.detail.isEmpty)
            #expect(!rejection.detail.unicodeScalars.contains { $0.value == 0 })
            if let index = rejection.index {
                #expect(index >= 0 && index < payloadCount)
            }
            #expect(rejection.reason != .unknownDevice && rejection.reason != .disabledDevice)
        }
    }

    @Test("20 000 random byte strings never crash and always yield a reading or a rejection")
    func survivesRandomBytes() {
        var generator = SplitMix64(seed: 0xC0FFEE)
        let limits = ValidationLimits()
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...48, using: &generator)
            let steered = Bool.random(using: &generator)
            let payload = (0..<length).map { _ in
                steered
                    ? Self.interestingBytes.randomElement(using: &generator) ?? 0
                    : UInt8.random(in: 0...255, using: &generator)
            }
            let result = NativeProtocol.decodeTelemetry(payload, receivedAt: receivedAt, limits: limits)
            Self.checkInvariants(result, payloadCount: payload.count, limits: limits)
        }
    }

    @Test("20 000 mutations of a valid payload never crash and always yield a reading or a rejection")
    func survivesMutations() {
        var generator = SplitMix64(seed: 0xBADC0DE)
        let limits = ValidationLimits()
        var sawReadings = false
        var sawRejections = false
        for _ in 0..<20_000 {
            var payload = Self.validPayload
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<payload.count, using: &generator)
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: payload[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: payload[position] = Self.interestingBytes.randomElement(using: &generator) ?? 0
                case 2: payload.remove(at: position)
                case 3: payload.insert(Self.interestingBytes.randomElement(using: &generator) ?? 0, at: position)
                default: payload.removeSubrange(position...)
                }
                if payload.isEmpty { break }
            }
            let result = NativeProtocol.decodeTelemetry(payload, receivedAt: receivedAt, limits: limits)
            Self.checkInvariants(result, payloadCount: payload.count, limits: limits)
            sawReadings = sawReadings || !result.readings.isEmpty
            sawRejections = sawRejections || !result.rejections.isEmpty
        }
        // The mutations must exercise both outcomes, or this test proves nothing.
        #expect(sawReadings && sawRejections)
    }

    @Test("the unmutated fuzz seed decodes to two readings")
    func seedPayloadIsValid() {
        let result = NativeProtocol.decodeTelemetry(
            Self.validPayload, receivedAt: receivedAt, limits: ValidationLimits())
        #expect(result.rejections == [])
        #expect(result.readings.count == 2)
    }
}
