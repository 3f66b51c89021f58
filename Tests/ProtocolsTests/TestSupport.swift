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
