import Protocols
import Telemetry
import Testing

/// The switch payloads of the native protocol: requests on `set`, state and availability reports, commands and
/// results.
struct NativeCommandTests {
    struct SetCase: Sendable, CustomTestStringConvertible {
        var payload: String
        var expected: SwitchRequest?
        var reason: RejectionReason?
        var testDescription: String { payload }
    }

    @Test(arguments: [
        SetCase(payload: "on", expected: SwitchRequest(value: .on)),
        SetCase(payload: " OFF\n", expected: SwitchRequest(value: .off)),
        SetCase(payload: "Toggle", expected: SwitchRequest(value: .toggle)),
        SetCase(
            payload: #"{"state":"on","request_id":"r1","requested_by":"ana"}"#,
            expected: SwitchRequest(value: .on, requestID: "r1", requestedBy: "ana")),
        SetCase(payload: #"{"state":false,"request_id":42}"#, expected: SwitchRequest(value: .off, requestID: "42")),
        SetCase(payload: "", reason: .emptyPayload),
        SetCase(payload: "maybe", reason: .invalidCommand),
        SetCase(payload: "1", reason: .invalidCommand),
        SetCase(payload: #"{"state":"on""#, reason: .malformedJSON),
        SetCase(payload: #"{"state":"dim"}"#, reason: .invalidCommand),
        SetCase(payload: #"{"state":1}"#, reason: .invalidCommand),
        SetCase(payload: #"{"request_id":"r1"}"#, reason: .missingField),
        SetCase(payload: #"{"state":"on","requested_by":["x"]}"#, reason: .invalidCommand),
    ])
    func parsesSetRequests(_ item: SetCase) {
        switch NativeProtocol.parseSetRequest(Array(item.payload.utf8)) {
        case .success(let request):
            #expect(request == item.expected)
            #expect(item.reason == nil)
        case .failure(let rejection):
            #expect(rejection.reason == item.reason, "\(rejection)")
            #expect(item.expected == nil)
        }
    }

    @Test func parsesStateAndAvailability() throws {
        #expect(try NativeProtocol.parseStateReport(Array("ON".utf8)).get() == StateReport(state: .on))
        #expect(
            try NativeProtocol.parseStateReport(Array(#"{"state":"off","command_id":12}"#.utf8)).get()
                == StateReport(state: .off, commandID: 12))
        #expect(throws: Rejection.self) { try NativeProtocol.parseStateReport(Array("overpower".utf8)).get() }
        #expect(throws: Rejection.self) { try NativeProtocol.parseStateReport(Array("{}".utf8)).get() }
        #expect(try NativeProtocol.parseAvailability(Array("online".utf8)).get() == true)
        #expect(try NativeProtocol.parseAvailability(Array("Offline\n".utf8)).get() == false)
        #expect(throws: Rejection.self) { try NativeProtocol.parseAvailability(Array("true".utf8)).get() }
    }

    @Test func commandAndResultPayloads() throws {
        let command = NativeProtocol.encodeCommand(id: 42, state: .on)
        #expect(String(decoding: command, as: UTF8.self) == #"{"command_id":42,"state":"on"}"#)
        let decoded = try #require(NativeProtocol.decodeCommand(command))
        #expect(decoded.id == 42 && decoded.state == .on)
        let message = NativeSwitchProtocol().commandMessage(
            target: SwitchTarget(code: try #require(DeviceCode("k-1")), nativePrefix: "site/outlets/"), commandID: 1,
            state: .off)
        #expect(message.topic == "site/outlets/k-1/command")
        let result = SwitchResult(result: "rejected", requestID: "a\"b", reason: "x\ny")
        #expect(
            String(decoding: result.payload, as: UTF8.self)
                == #"{"result":"rejected","request_id":"a\"b","reason":"x\ny"}"#)
    }
}
