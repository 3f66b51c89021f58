import Foundation
import Protocols
import Telemetry
import Testing

/// A payload that must decode to exactly one reading.
struct AcceptedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var payload: String
    var expected: Reading
    var limits = ValidationLimits()
    var testDescription: String { name }
}

/// A payload that must be rejected as a whole (single object or whole message).
struct RejectedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var payload: String
    var reason: RejectionReason
    /// A fragment the detail must contain (field, value, bounds…).
    var detail: String
    var limits = ValidationLimits()
    var testDescription: String { name }
}

/// The reading expected for a payload received at `receivedAt`, with `measuredAt` given as an offset from it.
func expectedReading(
    voltage: Double,
    current: Double,
    power: Double? = nil,
    powerFactor: Double? = nil,
    energy: Double? = nil,
    sequence: Int64? = nil,
    deviceTime: Date? = nil,
    measuredAt: Date = receivedAt
) -> Reading {
    Reading(
        measuredAt: measuredAt,
        receivedAt: receivedAt,
        deviceTime: deviceTime,
        voltageVolts: voltage,
        currentAmperes: current,
        powerWatts: power ?? voltage * current,
        powerFactor: powerFactor,
        energyWattHours: energy,
        sequence: sequence
    )
}

/// `receivedAt` moved by `seconds` and `microseconds`.
func at(_ seconds: Int64, microseconds: Int64 = 0) -> Date {
    Date(microsecondsSince1970: receivedAt.microsecondsSince1970 + seconds * 1_000_000 + microseconds)
}

@Suite("NativeProtocol.decodeTelemetry")
struct NativeTelemetryDecoderTests {
    static let acceptedCases: [AcceptedCase] = [
        AcceptedCase(
            name: "documented example: power is voltage × current",
            payload: #"{"voltage": 227.1, "current": 0.412}"#,
            expected: expectedReading(voltage: 227.1, current: 0.412, power: 227.1 * 0.412)
        ),
        AcceptedCase(
            name: "given active power wins over voltage × current",
            payload: #"{"voltage":230,"current":1,"power":180.5}"#,
            expected: expectedReading(voltage: 230, current: 1, power: 180.5)
        ),
        AcceptedCase(
            name: "null power falls back to voltage × current",
            payload: #"{"voltage":230,"current":2,"power":null}"#,
            expected: expectedReading(voltage: 230, current: 2, power: 460)
        ),
        AcceptedCase(
            name: "every optional field",
            payload: #"{"voltage":229.5,"current":0.5,"power":100,"pf":0.87,"energy_wh":12345.6,"seq":42}"#,
            expected: expectedReading(
                voltage: 229.5, current: 0.5, power: 100, powerFactor: 0.87, energy: 12_345.6, sequence: 42)
        ),
        AcceptedCase(
            name: "null optional fields are no value",
            payload: #"{"voltage":220,"current":1,"pf":null,"energy_wh":null,"seq":null,"ts":null}"#,
            expected: expectedReading(voltage: 220, current: 1)
        ),
        AcceptedCase(
            name: "unknown keys, nested or not, are ignored",
            payload: #"{"voltage":220,"current":1,"rssi":-61,"fw":{"v":[1,2]},"Voltage":"x","temp":null}"#,
            expected: expectedReading(voltage: 220, current: 1)
        ),
        AcceptedCase(
            name: "numbers given as strings, padded or not",
            payload: #"{"voltage":"227.1","current":" 0.5 ","power":"100","pf":"-0.5","energy_wh":"1e3","seq":"7"}"#,
            expected: expectedReading(
                voltage: 227.1, current: 0.5, power: 100, powerFactor: -0.5, energy: 1_000, sequence: 7)
        ),
        AcceptedCase(
            name: "lower bounds are inclusive",
            payload: #"{"voltage":0,"current":0,"power":0,"pf":-1,"energy_wh":0,"seq":0}"#,
            expected: expectedReading(voltage: 0, current: 0, power: 0, powerFactor: -1, energy: 0, sequence: 0)
        ),
        AcceptedCase(
            name: "upper bounds are inclusive",
            payload: #"{"voltage":500,"current":100,"pf":1,"seq":9007199254740992}"#,
            expected: expectedReading(voltage: 500, current: 100, power: 50_000, powerFactor: 1, sequence: 1 << 53)
        ),
        AcceptedCase(
            name: "negative zero is stored as zero",
            payload: #"{"voltage":-0,"current":-0.0}"#,
            expected: expectedReading(voltage: 0, current: 0, power: 0)
        ),
        AcceptedCase(
            name: "custom limits apply",
            payload: #"{"voltage":115,"current":1}"#,
            expected: expectedReading(voltage: 115, current: 1),
            limits: ValidationLimits(voltageVolts: 100...130)
        ),
        // Timestamps.
        AcceptedCase(
            name: "ts RFC 3339 with Z inside the window is the measured time",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T11:58:20Z"}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(-100), measuredAt: at(-100))
        ),
        AcceptedCase(
            name: "ts RFC 3339 with a negative offset",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T09:00:30-03:00"}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(30), measuredAt: at(30))
        ),
        AcceptedCase(
            name: "ts RFC 3339 with a positive offset and milliseconds",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T14:00:00.250+02:00"}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: at(0, microseconds: 250_000),
                measuredAt: at(0, microseconds: 250_000))
        ),
        AcceptedCase(
            name: "ts fraction beyond microseconds is rounded to the microsecond",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T12:00:01.0000015999Z"}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: at(1, microseconds: 2), measuredAt: at(1, microseconds: 2))
        ),
        AcceptedCase(
            name: "ts epoch seconds",
            payload: #"{"voltage":220,"current":1,"ts":1714564790}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(-10), measuredAt: at(-10))
        ),
        AcceptedCase(
            name: "ts epoch seconds with a fraction",
            payload: #"{"voltage":220,"current":1,"ts":1714564790.125}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: at(-10, microseconds: 125_000),
                measuredAt: at(-10, microseconds: 125_000))
        ),
        AcceptedCase(
            name: "ts epoch milliseconds",
            payload: #"{"voltage":220,"current":1,"ts":1714564790125}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: at(-10, microseconds: 125_000),
                measuredAt: at(-10, microseconds: 125_000))
        ),
        AcceptedCase(
            name: "ts 1970 (clock before NTP) is kept but not used",
            payload: #"{"voltage":220,"current":1,"ts":"1970-01-01T00:00:12Z"}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: Date(microsecondsSince1970: 12_000_000), measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "ts epoch 0 is kept but not used",
            payload: #"{"voltage":220,"current":1,"ts":0}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: Date(microsecondsSince1970: 0), measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "ts far future is kept but not used",
            payload: #"{"voltage":220,"current":1,"ts":"2099-01-01T00:00:00Z"}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: Date(microsecondsSince1970: 4_070_908_800_000_000),
                measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "ts just below the milliseconds threshold is seconds (year 5138)",
            payload: #"{"voltage":220,"current":1,"ts":99999999999}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: Date(microsecondsSince1970: 99_999_999_999_000_000),
                measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "ts at the milliseconds threshold is milliseconds (1973)",
            payload: #"{"voltage":220,"current":1,"ts":100000000000}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: Date(microsecondsSince1970: 100_000_000_000_000),
                measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "ts exactly maxClockSkew late is inside the window",
            payload: #"{"voltage":220,"current":1,"ts":1714564500}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(-300), measuredAt: at(-300))
        ),
        AcceptedCase(
            name: "ts exactly maxClockSkew early is inside the window",
            payload: #"{"voltage":220,"current":1,"ts":1714565100}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(300), measuredAt: at(300))
        ),
        AcceptedCase(
            name: "ts one millisecond outside the window falls back to the receive time",
            payload: #"{"voltage":220,"current":1,"ts":1714565100001}"#,
            expected: expectedReading(
                voltage: 220, current: 1, deviceTime: at(300, microseconds: 1_000), measuredAt: receivedAt)
        ),
        AcceptedCase(
            name: "a single object an hour old is not backfill",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T11:00:00Z"}"#,
            expected: expectedReading(voltage: 220, current: 1, deviceTime: at(-3_600), measuredAt: receivedAt)
        ),
    ]

    @Test("decodes valid payloads", arguments: acceptedCases)
    func decodesValidPayload(_ testCase: AcceptedCase) throws {
        let result = decode(testCase.payload, limits: testCase.limits)
        #expect(result.rejections == [])
        #expect(result.readings == [testCase.expected])
    }

    static let rejectedCases: [RejectedCase] = [
        // Whole message.
        RejectedCase(name: "empty payload", payload: "", reason: .emptyPayload, detail: "empty"),
        RejectedCase(name: "whitespace only", payload: " \r\n\t", reason: .emptyPayload, detail: "whitespace"),
        RejectedCase(
            name: "payload one byte over the limit", payload: #"{"voltage":220,"current":1}"#,
            reason: .payloadTooLarge, detail: "27 bytes exceeds the limit of 26 bytes",
            limits: ValidationLimits(maxPayloadBytes: 26)),
        RejectedCase(
            name: "size is checked before parsing", payload: "not json at all",
            reason: .payloadTooLarge, detail: "limit of 4 bytes", limits: ValidationLimits(maxPayloadBytes: 4)),
        RejectedCase(
            name: "truncated JSON",
            payload: #"{"voltage":220,"#,
            reason: .malformedJSON,
            detail: "at byte 15"),
        RejectedCase(
            name: "NaN literal",
            payload: #"{"voltage":NaN,"current":1}"#,
            reason: .malformedJSON,
            detail: "at byte 11"),
        RejectedCase(
            name: "trailing garbage",
            payload: #"{"voltage":1,"current":1}x"#,
            reason: .malformedJSON,
            detail: "trailing"),
        RejectedCase(name: "plain text", payload: "on", reason: .malformedJSON, detail: "invalid literal"),
        RejectedCase(name: "top-level number", payload: "227.1", reason: .wrongType, detail: "top level is a number"),
        RejectedCase(
            name: "top-level string",
            payload: #""227.1""#,
            reason: .wrongType,
            detail: "top level is a string"),
        RejectedCase(name: "top-level null", payload: "null", reason: .wrongType, detail: "top level is a null"),
        RejectedCase(name: "top-level boolean", payload: "true", reason: .wrongType, detail: "top level is a boolean"),
        RejectedCase(name: "empty array", payload: "[]", reason: .wrongType, detail: "empty array"),
        RejectedCase(
            name: "too many readings", payload: #"[{"voltage":1,"current":1},{"voltage":1,"current":1},{}]"#,
            reason: .tooManyReadings, detail: "3 readings exceed the limit of 2",
            limits: ValidationLimits(maxReadingsPerMessage: 2)),
        // Missing and mistyped fields.
        RejectedCase(name: "empty object", payload: "{}", reason: .missingField, detail: "voltage is missing"),
        RejectedCase(
            name: "null voltage",
            payload: #"{"voltage":null,"current":1}"#,
            reason: .missingField,
            detail: "voltage is null"),
        RejectedCase(
            name: "missing current",
            payload: #"{"voltage":220}"#,
            reason: .missingField,
            detail: "current is missing"),
        RejectedCase(
            name: "null current",
            payload: #"{"voltage":220,"current":null}"#,
            reason: .missingField,
            detail: "current is null"),
        RejectedCase(
            name: "keys are case-sensitive",
            payload: #"{"Voltage":220,"Current":1}"#,
            reason: .missingField,
            detail: "voltage"),
        RejectedCase(
            name: "non-numeric string",
            payload: #"{"voltage":"abc","current":1}"#,
            reason: .wrongType,
            detail: #"voltage "abc" is not a number"#),
        RejectedCase(
            name: "empty string",
            payload: #"{"voltage":"","current":1}"#,
            reason: .wrongType,
            detail: "voltage"),
        RejectedCase(name: "string NaN", payload: #"{"voltage":"NaN","current":1}"#, reason: .wrongType, detail: "NaN"),
        RejectedCase(
            name: "string Infinity",
            payload: #"{"voltage":220,"current":"Infinity"}"#,
            reason: .wrongType,
            detail: "current"),
        RejectedCase(
            name: "string with unit",
            payload: #"{"voltage":"220 V","current":1}"#,
            reason: .wrongType,
            detail: "voltage"),
        RejectedCase(
            name: "boolean voltage",
            payload: #"{"voltage":true,"current":1}"#,
            reason: .wrongType,
            detail: "voltage is a boolean"),
        RejectedCase(
            name: "object current",
            payload: #"{"voltage":220,"current":{}}"#,
            reason: .wrongType,
            detail: "current is an object"),
        RejectedCase(
            name: "array power",
            payload: #"{"voltage":220,"current":1,"power":[1,2]}"#,
            reason: .wrongType,
            detail: "power is an array"),
        RejectedCase(
            name: "boolean pf",
            payload: #"{"voltage":220,"current":1,"pf":false}"#,
            reason: .wrongType,
            detail: "pf"),
        RejectedCase(
            name: "string energy",
            payload: #"{"voltage":220,"current":1,"energy_wh":"lots"}"#,
            reason: .wrongType,
            detail: "energy_wh"),
        RejectedCase(
            name: "fractional seq",
            payload: #"{"voltage":220,"current":1,"seq":1.5}"#,
            reason: .wrongType,
            detail: "seq 1.5 is not an integer"),
        RejectedCase(
            name: "control characters are escaped in details",
            payload: #"{"voltage":"a\u0000b","current":1}"#,
            reason: .wrongType,
            detail: #""a\u{0}b""#),
        // Out of range.
        RejectedCase(
            name: "voltage above limit",
            payload: #"{"voltage":612,"current":1}"#,
            reason: .outOfRange,
            detail: "voltage 612.0 V outside 0–500 V"),
        RejectedCase(
            name: "negative voltage",
            payload: #"{"voltage":-1,"current":1}"#,
            reason: .outOfRange,
            detail: "voltage -1.0 V outside 0–500 V"),
        RejectedCase(
            name: "voltage just above limit",
            payload: #"{"voltage":500.0000001,"current":1}"#,
            reason: .outOfRange,
            detail: "voltage"),
        RejectedCase(
            name: "huge voltage overflows to infinity",
            payload: #"{"voltage":1e400,"current":1}"#,
            reason: .outOfRange,
            detail: "voltage inf V"),
        RejectedCase(
            name: "huge numeric string",
            payload: #"{"voltage":"-1e999","current":1}"#,
            reason: .outOfRange,
            detail: "voltage -inf V"),
        RejectedCase(
            name: "current above limit",
            payload: #"{"voltage":220,"current":100.5}"#,
            reason: .outOfRange,
            detail: "current 100.5 A outside 0–100 A"),
        RejectedCase(
            name: "negative current",
            payload: #"{"voltage":220,"current":-0.1}"#,
            reason: .outOfRange,
            detail: "current -0.1 A"),
        RejectedCase(
            name: "power above limit",
            payload: #"{"voltage":220,"current":1,"power":50000.5}"#,
            reason: .outOfRange,
            detail: "power 50000.5 W outside 0–50000 W"),
        RejectedCase(
            name: "negative power",
            payload: #"{"voltage":220,"current":1,"power":-3}"#,
            reason: .outOfRange,
            detail: "power -3.0 W"),
        RejectedCase(
            name: "computed power outside custom limits", payload: #"{"voltage":230,"current":10}"#,
            reason: .outOfRange, detail: "computed power (voltage × current) 2300.0 W outside 0–2000 W",
            limits: ValidationLimits(powerWatts: 0...2_000)),
        RejectedCase(
            name: "pf above 1",
            payload: #"{"voltage":220,"current":1,"pf":1.01}"#,
            reason: .outOfRange,
            detail: "pf 1.01 outside -1–1"),
        RejectedCase(
            name: "pf below -1",
            payload: #"{"voltage":220,"current":1,"pf":-1.5}"#,
            reason: .outOfRange,
            detail: "pf -1.5"),
        RejectedCase(
            name: "negative energy",
            payload: #"{"voltage":220,"current":1,"energy_wh":-0.001}"#,
            reason: .outOfRange,
            detail: "energy_wh -0.001 Wh"),
        RejectedCase(
            name: "infinite energy",
            payload: #"{"voltage":220,"current":1,"energy_wh":1e309}"#,
            reason: .outOfRange,
            detail: "energy_wh inf"),
        RejectedCase(
            name: "negative seq",
            payload: #"{"voltage":220,"current":1,"seq":-1}"#,
            reason: .outOfRange,
            detail: "seq -1.0"),
        RejectedCase(
            name: "seq beyond Int64",
            payload: #"{"voltage":220,"current":1,"seq":1e19}"#,
            reason: .outOfRange,
            detail: "seq"),
        RejectedCase(
            name: "voltage below custom limit", payload: #"{"voltage":99.9,"current":1}"#,
            reason: .outOfRange, detail: "voltage 99.9 V outside 100–130 V",
            limits: ValidationLimits(voltageVolts: 100...130)),
        // Timestamps.
        RejectedCase(
            name: "ts not a date",
            payload: #"{"voltage":220,"current":1,"ts":"yesterday"}"#,
            reason: .invalidTimestamp,
            detail: #"ts "yesterday" is not an RFC 3339"#),
        RejectedCase(
            name: "ts without offset",
            payload: #"{"voltage":220,"current":1,"ts":"2024-05-01T12:00:00"}"#,
            reason: .invalidTimestamp,
            detail: "no UTC offset"),
        RejectedCase(
            name: "ts impossible date",
            payload: #"{"voltage":220,"current":1,"ts":"2023-02-29T12:00:00Z"}"#,
            reason: .invalidTimestamp,
            detail: "ts"),
        RejectedCase(
            name: "ts epoch as string",
            payload: #"{"voltage":220,"current":1,"ts":"1714564800"}"#,
            reason: .invalidTimestamp,
            detail: "ts"),
        RejectedCase(
            name: "ts negative",
            payload: #"{"voltage":220,"current":1,"ts":-5}"#,
            reason: .invalidTimestamp,
            detail: "ts -5.0"),
        RejectedCase(
            name: "ts infinite",
            payload: #"{"voltage":220,"current":1,"ts":1e400}"#,
            reason: .invalidTimestamp,
            detail: "ts inf"),
        RejectedCase(
            name: "ts after year 9999",
            payload: #"{"voltage":220,"current":1,"ts":1e16}"#,
            reason: .invalidTimestamp,
            detail: "9999"),
        RejectedCase(
            name: "ts boolean",
            payload: #"{"voltage":220,"current":1,"ts":true}"#,
            reason: .wrongType,
            detail: "ts is a boolean"),
        RejectedCase(
            name: "ts object",
            payload: #"{"voltage":220,"current":1,"ts":{"s":1}}"#,
            reason: .wrongType,
            detail: "ts is an object"),
    ]

    @Test("rejects bad payloads with a reason and a detail naming the problem", arguments: rejectedCases)
    func rejectsBadPayload(_ testCase: RejectedCase) throws {
        let result = decode(testCase.payload, limits: testCase.limits)
        #expect(result.readings == [])
        let rejection = try #require(result.rejections.first)
        #expect(result.rejections.count == 1)
        #expect(rejection.reason == testCase.reason)
        #expect(rejection.detail.contains(testCase.detail), "detail was: \(rejection.detail)")
        #expect(rejection.index == nil)
    }

    @Test("judges each array element alone and reports rejections with their index")
    func judgesArrayElementsAlone() {
        let payload = """
            [
              {"voltage":220,"current":1,"seq":1},
              {"voltage":612,"current":1},
              42,
              {"voltage":221,"current":2,"seq":3},
              {"current":1},
              "text",
              null,
              [],
              {"voltage":"abc","current":1},
              {"voltage":222,"current":1,"ts":"never"},
              {"voltage":223,"current":3,"seq":10}
            ]
            """
        let result = decode(payload)
        #expect(result.readings.map(\.sequence) == [1, 3, 10])
        #expect(result.readings.map(\.voltageVolts) == [220, 221, 223])
        #expect(result.rejections.map(\.index) == [1, 2, 4, 5, 6, 7, 8, 9])
        #expect(
            result.rejections.map(\.reason)
                == [
                    .outOfRange, .wrongType, .missingField, .wrongType, .wrongType, .wrongType, .wrongType,
                    .invalidTimestamp,
                ]
        )
        #expect(result.rejections[1].detail.contains("a number, expected an object"))
        #expect(result.rejections[3].detail.contains("a string"))
        #expect(result.rejections[4].detail.contains("a null"))
        #expect(result.rejections[5].detail.contains("an array"))
    }

    /// (array elements, the measured times expected as µs before the receive time; nil for a rejected element,
    /// duplicates left out). Without a usable `ts` element i of n is dated n − 1 − i µs before the receive time.
    @Test(
        "gives array elements without a usable device time their own ordered times; a repeated time keeps the first",
        arguments: [
            (["{}", "{}", "{}"], [2, 1, 0], 0),
            (["{}"], [0], 0),
            (["{\"ts\":1714564700}", "{}", "{\"ts\":1714564700}"], [100_000_000, 1], 1),
            (["{\"ts\":1714564700}", "{\"ts\":1714564700}"], [100_000_000], 1),
            (["{\"ts\":1}", "{}"], [1, 0], 0),
            (["{\"voltage\":900}", "{}", "{}"], [1, 0], 0),
        ] as [([String], [Int64], Int)]
    )
    func datesArrayElementsApart(elements: [String], microsecondsBefore: [Int64], duplicates: Int) {
        let payload =
            "["
            + elements.map { element in
                let fields = element.dropFirst().dropLast()
                return #"{"voltage":220,"current":1"# + (fields.isEmpty ? "" : ",") + fields + "}"
            }.joined(separator: ",") + "]"
        let result = decode(payload)
        let received = receivedAt.microsecondsSince1970
        #expect(result.readings.map { received - $0.measuredAt.microsecondsSince1970 } == microsecondsBefore)
        #expect(result.duplicates == duplicates)
        #expect(result.readings.allSatisfy { $0.receivedAt == receivedAt })
    }

    @Test("keeps the first of two readings with one device time, with its values")
    func keepsTheFirstReadingOfOneTime() {
        let result = decode(
            #"[{"voltage":220,"current":1,"seq":1,"ts":1714564800},{"voltage":230,"current":2,"seq":2,"ts":1714564800}]"#
        )
        #expect(result.readings.map(\.sequence) == [1])
        #expect(result.readings.map(\.voltageVolts) == [220])
        #expect(result.duplicates == 1)
        #expect(result.rejections.isEmpty)
    }

    @Test("accepts exactly maxReadingsPerMessage elements")
    func acceptsMaximumReadings() {
        let element = #"{"voltage":220,"current":1}"#
        let payload = "[" + Array(repeating: element, count: 1_000).joined(separator: ",") + "]"
        let result = decode(payload)
        #expect(result.readings.count == 1_000)
        #expect(result.rejections.isEmpty)
        let oneMore = "[" + Array(repeating: element, count: 1_001).joined(separator: ",") + "]"
        #expect(decode(oneMore).rejections.map(\.reason) == [.tooManyReadings])
    }

    @Test("accepts a payload exactly maxPayloadBytes long")
    func acceptsPayloadAtSizeLimit() {
        let payload = #"{"voltage":220,"current":1}"#
        let result = decode(payload, limits: ValidationLimits(maxPayloadBytes: payload.utf8.count))
        #expect(result.readings.count == 1)
    }

    /// (device time relative to receivedAt in seconds, inside an array?, device time used?)
    @Test(
        "uses device time only inside the window: ±maxClockSkew for an object, maxBackfill back for array elements",
        arguments: [
            (0, false, true), (-300, false, true), (300, false, true), (-301, false, false), (301, false, false),
            (-3_600, false, false), (-86_400, false, false),
            (0, true, true), (-300, true, true), (300, true, true), (301, true, false), (-3_600, true, true),
            (-86_400, true, true), (-86_401, true, false), (-1_714_564_800, true, false),
        ] as [(Int64, Bool, Bool)]
    )
    func appliesClockWindow(offsetSeconds: Int64, inArray: Bool, usesDeviceTime: Bool) throws {
        let ts = 1_714_564_800 + offsetSeconds
        let object = #"{"voltage":220,"current":1,"ts":\#(ts)}"#
        let result = decode(inArray ? "[\(object)]" : object)
        let reading = try #require(result.readings.first)
        #expect(reading.deviceTime == at(offsetSeconds))
        #expect(reading.measuredAt == (usesDeviceTime ? at(offsetSeconds) : receivedAt))
        #expect(reading.receivedAt == receivedAt)
    }

    @Test("uses the larger of maxBackfill and maxClockSkew as the array look-back")
    func arrayWindowIsNeverNarrowerThanSkew() throws {
        let limits = ValidationLimits(maxClockSkew: 600, maxBackfill: 60)
        let result = decode(#"[{"voltage":220,"current":1,"ts":1714564300}]"#, limits: limits)
        #expect(try #require(result.readings.first).measuredAt == at(-500))
    }

    @Test("rounds the receive time to whole microseconds")
    func roundsReceiveTime() throws {
        let time = Date(timeIntervalSince1970: 1_714_564_800.123_456_7)
        let result = decode(#"{"voltage":220,"current":1}"#, at: time)
        let reading = try #require(result.readings.first)
        #expect(reading.receivedAt.microsecondsSince1970 == 1_714_564_800_123_457)
        #expect(reading.receivedAt == Date(microsecondsSince1970: 1_714_564_800_123_457))
        #expect(reading.measuredAt == reading.receivedAt)
    }

    @Test("reports only the first problem of an object, in field order")
    func reportsFirstProblemOnly() {
        let result = decode(#"{"voltage":900,"current":-1,"pf":7,"ts":"bad"}"#)
        #expect(result.rejections == [Rejection(reason: .outOfRange, detail: "voltage 900.0 V outside 0–500 V")])
    }

    @Test("every rejection reason has a stable raw value")
    func rejectionReasonsAreStable() {
        #expect(RejectionReason.allCases.count == 14)
        #expect(Set(RejectionReason.allCases.map(\.rawValue)).count == 14)
        #expect(RejectionReason(rawValue: "out_of_range") == .outOfRange)
        #expect(
            Rejection(reason: .wrongType, detail: "x", index: 3).description == "wrong_type[3]: x"
        )
    }
}
