// libFuzzer target: the native telemetry decoder must turn any bytes into readings or rejections,
// never trap, hang or leak. Built by scripts/fuzz together with Sources/Telemetry and Sources/Protocols.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNativeTelemetry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    let decoded = NativeProtocol.decodeTelemetry(
        payload, receivedAt: Date(timeIntervalSince1970: 1_800_000_000), limits: ValidationLimits())
    // Every message yields at least one reading or rejection, and readings respect the limits.
    if decoded.readings.isEmpty && decoded.rejections.isEmpty { fatalError("message vanished") }
    for reading in decoded.readings where !(0...50_000).contains(reading.powerWatts) {
        fatalError("power outside the limits: \(reading.powerWatts)")
    }
    return 0
}
