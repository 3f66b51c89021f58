// libFuzzer target: the Shelly Gen1 and Gen2 decoders (plain values, status, NotifyStatus overlay, RPC replies,
// announce) must never trap, hang or leak, and stored readings respect the limits. Built by scripts/fuzz.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzShelly(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    let receivedAt = Date(timeIntervalSince1970: 1_800_000_000)
    let gen1 = ShellyGen1Protocol.reading(
        powerPayload: payload, energyWattMinutes: 60, receivedAt: receivedAt, limits: ValidationLimits())
    if gen1.readings.isEmpty && gen1.rejections.isEmpty { fatalError("message vanished") }
    _ = ShellyGen1Protocol.stateReport(payload)
    _ = ShellyGen1Protocol.announcement(payload)
    for kind in [ShellyGen2Protocol.TopicKind.status(component: "switch:0"), .events] {
        guard case .success(let updates) = ShellyGen2Protocol.updates(payload, kind: kind, limits: ValidationLimits())
        else { continue }
        var status = ShellyGen2Protocol.MeterStatus()
        for update in updates {
            status = status.overlaid(with: update.fields)
            let decoded = ShellyGen2Protocol.reading(
                status, deviceTime: update.deviceTime, receivedAt: receivedAt, limits: ValidationLimits())
            for reading in decoded.readings where !(0...50_000).contains(reading.powerWatts) {
                fatalError("power outside the limits: \(reading.powerWatts)")
            }
        }
    }
    _ = ShellyGen2Protocol.reply(payload)
    return 0
}
