import Foundation

/// Why a command ended without being confirmed, in one shape for every path and every transition:
/// `"<code>: <detail>"`, the code machine-readable, the detail for people (docs/COMMANDS.md lists the codes).
///
/// Stored in `commands.reason` and `command_transitions.reason`, published as `reason` on `set/result`.
/// A request refused before a command existed (unknown outlet, a payload that is no request) uses the
/// ``RejectionReason`` raw value as its code.
public struct CommandReason: Sendable, Equatable, CustomStringConvertible {
    /// The codes of reasons that commands end with, besides ``RejectionReason/disabledDevice`` (the outlet is
    /// disabled: the command was rejected when requested).
    public enum Code: String, Sendable, CaseIterable {
        /// `toggle` with neither a desired nor a reported state to toggle.
        case unknownState = "unknown_state"
        /// A newer command for the same outlet replaced it.
        case superseded
        /// Sent, and not confirmed within `commands.confirm_timeout_seconds`.
        case noConfirmation = "no_confirmation"
        /// Held for an offline outlet past `commands.offline_expiry_seconds`.
        case offline
        /// The outlet answered this command with the other state.
        case contraryState = "contrary_state"
        /// The outlet's firmware answered the command with an error (Shelly Gen2 JSON-RPC).
        case deviceError = "device_error"
    }

    /// The machine-readable part: a ``Code`` or a ``RejectionReason`` raw value.
    public var code: String
    /// What happened, for people.
    public var detail: String

    /// A reason of a command's own.
    public init(_ code: Code, _ detail: String) {
        self.code = code.rawValue
        self.detail = detail
    }

    /// A request refused before a command existed.
    public init(_ rejection: RejectionReason, _ detail: String) {
        self.code = rejection.rawValue
        self.detail = detail
    }

    /// `"<code>: <detail>"`.
    public var description: String { "\(code): \(detail)" }

    /// Reads `"<code>: <detail>"` back; nil for text of another shape.
    public init?(parsing text: String) {
        guard let separator = text.range(of: ": "), separator.lowerBound > text.startIndex else { return nil }
        let code = text[..<separator.lowerBound]
        guard code.allSatisfy({ $0.isLowercase || $0 == "_" }) else { return nil }
        self.code = String(code)
        self.detail = String(text[separator.upperBound...])
    }

    /// The UTC time as `set/result` carries it, `2026-11-21T15:04:05.250Z` (milliseconds).
    public static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
