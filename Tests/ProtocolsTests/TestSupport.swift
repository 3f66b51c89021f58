import Foundation
import Protocols
import Telemetry

/// 2024-05-01T12:00:00Z, the receive time used by the decoder tests.
let receivedAt = Date(timeIntervalSince1970: 1_714_564_800)

/// Decodes a textual payload with the given limits (default limits otherwise).
func decode(_ payload: String, limits: ValidationLimits = ValidationLimits(), at time: Date = receivedAt)
    -> DecodedMessage
{
    NativeProtocol.decodeTelemetry(Array(payload.utf8), receivedAt: time, limits: limits)
}

/// A tiny deterministic generator (SplitMix64) so that "random" tests reproduce exactly.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
