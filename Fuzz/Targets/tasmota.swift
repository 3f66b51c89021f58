// libFuzzer target: the Tasmota decoders (SENSOR/STATUS8 for two relays, state, LWT, discovery) must turn any
// bytes into a reading, a rejection or an ignored kind, never trap, hang or leak. Built by scripts/fuzz with
// Sources/Telemetry and Sources/Protocols.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTasmota(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    for channel in 1...2 {
        let decoded = TasmotaProtocol.decodeSensor(
            payload, channel: channel, channelCount: 2, meterChannel: 1,
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000), limits: ValidationLimits())
        if decoded.readings.isEmpty && decoded.rejections.isEmpty && decoded.ignored == nil {
            fatalError("message vanished")
        }
        for reading in decoded.readings where !(0...50_000).contains(reading.powerWatts) {
            fatalError("power outside the limits: \(reading.powerWatts)")
        }
        _ = TasmotaProtocol.stateReport(payload, suffix: "POWER\(channel)", channel: channel)
    }
    _ = TasmotaProtocol.availability(payload)
    _ = TasmotaProtocol.discovery(payload)
    return 0
}
