// libFuzzer target: topic parsing and device-code validation on any text. The first byte splits
// the input into a prefix and a topic.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTopic(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let split = bytes.first else { return 0 }
    let cut = min(Int(split) % 16, bytes.count - 1)
    let prefix = String(decoding: bytes[1..<(1 + cut)], as: UTF8.self)
    let topic = String(decoding: bytes[(1 + cut)...], as: UTF8.self)
    if let match = NativeProtocol.parseTopic(topic, prefix: prefix) {
        _ = DeviceCode(match.deviceCode)
        if !topic.contains(match.deviceCode) { fatalError("device code not from the topic") }
    }
    _ = RFC3339.date(from: topic)
    return 0
}
