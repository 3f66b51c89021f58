import Foundation
import Protocols
import Telemetry
import Testing

/// What a foreign decoder must produce from one payload: the stored values, or the rejection reason.
struct ForeignReadingCase: Sendable, CustomTestStringConvertible {
    var name: String
    var payload: String
    var channel = 1
    var channelCount = 1
    var meterChannel: Int?
    var powerWatts: Double?
    var voltageVolts: Double?
    var currentAmperes: Double?
    var powerFactor: Double?
    var energyWattHours: Double?
    /// Expected `measuredAt` − `receivedAt`, seconds.
    var measuredOffsetSeconds: Double = 0
    var rejection: RejectionReason?
    var ignored: IgnoredKind?
    var testDescription: String { name }
}

func expectReading(_ decoded: DecodedMessage, _ item: ForeignReadingCase) {
    #expect(decoded.ignored == item.ignored)
    if item.ignored != nil {
        #expect(decoded.readings.isEmpty)
        #expect(decoded.rejections.isEmpty)
        return
    }
    if let rejection = item.rejection {
        #expect(decoded.readings.isEmpty)
        #expect(decoded.rejections.map(\.reason) == [rejection])
        return
    }
    #expect(decoded.rejections.isEmpty, "\(decoded.rejections)")
    guard let reading = decoded.readings.first else {
        Issue.record("no reading")
        return
    }
    func close(_ actual: Double?, _ expected: Double?) -> Bool {
        switch (actual, expected) {
        case (nil, nil): true
        case (let actual?, let expected?): abs(actual - expected) < 1e-9
        default: false
        }
    }
    #expect(close(reading.powerWatts, item.powerWatts), "power \(reading.powerWatts)")
    #expect(close(reading.voltageVolts, item.voltageVolts), "voltage \(String(describing: reading.voltageVolts))")
    #expect(close(reading.currentAmperes, item.currentAmperes), "current")
    #expect(close(reading.powerFactor, item.powerFactor), "pf")
    #expect(
        close(reading.energyWattHours, item.energyWattHours), "energy \(String(describing: reading.energyWattHours))")
    #expect(abs(reading.measuredAt.timeIntervalSince(receivedAt) - item.measuredOffsetSeconds) < 1e-6)
}

@Suite("Tasmota")
struct TasmotaProtocolTests {
    static let sensorCases: [ForeignReadingCase] = [
        ForeignReadingCase(
            name: "docs tele/pow1/SENSOR: Total kWh → Wh, local Time ignored",
            payload:
                #"{"Time":"2018-02-15T17:37:10","ENERGY":{"TotalStartTime":"2018-11-14T18:39:40","Total":6.294,"Yesterday":5.340,"Today":0.954,"Period":217,"Power":2635,"ApparentPower":2650,"ReactivePower":282,"Factor":0.99,"Voltage":227,"Current":11.661}}"#,
            powerWatts: 2635, voltageVolts: 227, currentAmperes: 11.661, powerFactor: 0.99, energyWattHours: 6294),
        ForeignReadingCase(
            name: "docs stat/pow1/STATUS8: StatusSNS wrapper, no Period",
            payload:
                #"{"StatusSNS":{"Time":"2018-11-15T08:54:18","ENERGY":{"TotalStartTime":"2018-11-14T18:39:40","Total":6.404,"Yesterday":5.340,"Today":1.064,"Power":2629,"ApparentPower":2645,"ReactivePower":288,"Factor":0.99,"Voltage":226,"Current":11.677}}}"#,
            powerWatts: 2629, voltageVolts: 226, currentAmperes: 11.677, powerFactor: 0.99, energyWattHours: 6404),
        ForeignReadingCase(
            name: "docs firmware comment: decimals",
            payload:
                #"{"Time":"2017-12-16T11:48:55","ENERGY":{"Total":0.212,"Yesterday":0.000,"Today":0.014,"Period":2.0,"Power":22.0,"Factor":1.00,"Voltage":213.6,"Current":0.100}}"#,
            powerWatts: 22, voltageVolts: 213.6, currentAmperes: 0.1, powerFactor: 1, energyWattHours: 212),
        ForeignReadingCase(
            name: "padded numbers as text",
            payload: #"{"ENERGY":{"Power":" 9","Voltage":"227.1 ","Total":"1.5"}}"#,
            powerWatts: 9, voltageVolts: 227.1, energyWattHours: 1500),
        ForeignReadingCase(
            name: "null is no value, not zero",
            payload: #"{"ENERGY":{"Power":12,"Voltage":null,"Current":null,"Factor":null}}"#, powerWatts: 12),
        ForeignReadingCase(
            name: "missing voltage and current: power alone",
            payload: #"{"ENERGY":{"Power":40}}"#, powerWatts: 40),
        ForeignReadingCase(
            name: "unknown keys and nested objects ignored",
            payload:
                #"{"ANALOG":{"A0":5},"ENERGY":{"Power":5,"Extra":{"x":1},"ExportActive":3},"ESP32":{"Temperature":40}}"#,
            powerWatts: 5),
        ForeignReadingCase(
            name: "multi-channel: arrays indexed by relay 2, shared voltage, summed Total not attributed",
            payload:
                #"{"ENERGY":{"Total":3.5,"Power":[10,20],"Current":[0.05,0.09],"Factor":[0.9,null],"Voltage":230}}"#,
            channel: 2, channelCount: 2, powerWatts: 20, voltageVolts: 230, currentAmperes: 0.09),
        ForeignReadingCase(
            name: "multi-channel: Total as an array (SetOption129, firmware < 8.4) is per relay",
            payload: #"{"ENERGY":{"Total":[1.0,2.0],"Power":[10,null],"Voltage":230}}"#,
            channel: 1, channelCount: 2, powerWatts: 10, voltageVolts: 230, energyWattHours: 1000),
        ForeignReadingCase(
            name: "one meter, two relays: the meter's reading belongs to relay 1, the lowest registered",
            payload: #"{"ENERGY":{"Total":3.5,"Power":30,"Current":0.13,"Voltage":230}}"#,
            channel: 1, channelCount: 2, meterChannel: 1, powerWatts: 30, voltageVolts: 230, currentAmperes: 0.13,
            energyWattHours: 3500),
        ForeignReadingCase(
            name: "one meter, two relays: no reading of relay 2",
            payload: #"{"ENERGY":{"Total":3.5,"Power":30,"Voltage":230}}"#,
            channel: 2, channelCount: 2, meterChannel: 1, ignored: .meterOfAnotherChannel),
        ForeignReadingCase(
            name: "one meter, relays 2 and 3 registered: the meter belongs to relay 2",
            payload: #"{"ENERGY":{"Total":0.5,"Power":12,"Voltage":230}}"#,
            channel: 2, channelCount: 2, meterChannel: 2, powerWatts: 12, voltageVolts: 230, energyWattHours: 500),
        ForeignReadingCase(
            name: "null inside an array for this relay: power computed from V × A",
            payload: #"{"ENERGY":{"Power":[null,5],"Current":[0.5,0.1],"Voltage":200}}"#,
            channel: 1, channelCount: 2, powerWatts: 100, voltageVolts: 200, currentAmperes: 0.5),
        ForeignReadingCase(
            name: "Time with offset inside the skew is used",
            payload: #"{"Time":"2024-05-01T12:00:10+00:00","ENERGY":{"Power":1}}"#, powerWatts: 1,
            measuredOffsetSeconds: 10),
        ForeignReadingCase(
            name: "1970 before NTP sync: receive time",
            payload: #"{"Time":"1970-01-01T00:00:12+00:00","ENERGY":{"Power":1}}"#, powerWatts: 1),
        ForeignReadingCase(
            name: "epoch Time inside the skew is used",
            payload: #"{"Time":1714564790,"ENERGY":{"Power":1}}"#, powerWatts: 1, measuredOffsetSeconds: -10),
        ForeignReadingCase(
            name: "no ENERGY (a sensor that is no meter): ignored, not rejected",
            payload: #"{"Time":"2018-02-15T17:37:10","AM2301":{"Temperature":21.4,"Humidity":45.2},"TempUnit":"C"}"#,
            ignored: .noMeter),
        ForeignReadingCase(name: "no power at all", payload: #"{"ENERGY":{"Voltage":230}}"#, rejection: .missingField),
        ForeignReadingCase(name: "negative power", payload: #"{"ENERGY":{"Power":-5}}"#, rejection: .outOfRange),
        ForeignReadingCase(name: "not JSON", payload: "ON", rejection: .malformedJSON),
        ForeignReadingCase(name: "empty", payload: "", rejection: .emptyPayload),
    ]

    @Test(arguments: sensorCases)
    func decodesSensor(_ item: ForeignReadingCase) {
        let decoded = TasmotaProtocol.decodeSensor(
            Array(item.payload.utf8), channel: item.channel, channelCount: item.channelCount,
            meterChannel: item.meterChannel, receivedAt: receivedAt, limits: ValidationLimits())
        expectReading(decoded, item)
    }

    struct StateCase: Sendable, CustomTestStringConvertible {
        var payload: String
        var suffix: String
        var channel = 1
        var words = TasmotaProtocol.StateWords()
        var expected: SwitchState?
        var testDescription: String { "\(suffix) \(payload) ch\(channel)" }
    }

    static let stateCases: [StateCase] = [
        StateCase(payload: #"{"POWER":"ON"}"#, suffix: "RESULT", expected: .on),
        StateCase(payload: "ON", suffix: "POWER", expected: .on),
        StateCase(payload: "OFF", suffix: "POWER1", expected: .off),
        StateCase(payload: #"{"POWER":"OFF"}"#, suffix: "POWER", expected: .off),
        StateCase(payload: #"{"POWER2":"ON"}"#, suffix: "RESULT", channel: 2, expected: .on),
        StateCase(payload: #"{"POWER1":"ON"}"#, suffix: "RESULT", channel: 2, expected: nil),
        StateCase(payload: "ON", suffix: "POWER1", channel: 2, expected: nil),
        StateCase(payload: #"{"Dimmer":50}"#, suffix: "RESULT", expected: nil),
        StateCase(
            payload: #"{"Time":"2018-02-15T17:37:10","Uptime":"0T00:00:03","POWER":"AN"}"#, suffix: "STATE",
            words: TasmotaProtocol.StateWords(on: "AN", off: "AUS"), expected: .on),
        StateCase(
            payload: "aus", suffix: "POWER", words: TasmotaProtocol.StateWords(on: "AN", off: "AUS"), expected: .off),
    ]

    @Test(arguments: stateCases)
    func readsState(_ item: StateCase) throws {
        let result = TasmotaProtocol.stateReport(
            Array(item.payload.utf8), suffix: item.suffix, channel: item.channel, words: item.words)
        #expect(try result?.get().state == item.expected)
    }

    @Test func powerNeverComesFromSensorPower() {
        #expect(
            TasmotaProtocol.stateReport(Array(#"{"ENERGY":{"Power":50}}"#.utf8), suffix: "RESULT", channel: 1) == nil)
        #expect(throws: Rejection.self) {
            try TasmotaProtocol.stateReport(Array("MAYBE".utf8), suffix: "POWER", channel: 1)?.get()
        }
    }

    @Test(arguments: [
        ("%prefix%/%topic%/", "tele/tasmota_ABC123/SENSOR", "tele", "tasmota_ABC123", "SENSOR"),
        ("emoncms/factory/%topic%/%prefix%/", "emoncms/factory/pow1/stat/POWER2", "stat", "pow1", "POWER2"),
        ("%topic%/%prefix%", "pow1/tele/LWT", "tele", "pow1", "LWT"),
    ])
    func splitsFullTopics(pattern: String, topic: String, prefix: String, deviceTopic: String, suffix: String) throws {
        let match = try #require(TasmotaProtocol.match(topic, fullTopic: pattern))
        #expect(match.prefix == prefix && match.deviceTopic == deviceTopic && match.suffix == suffix)
        #expect(
            TasmotaProtocol.topic(fullTopic: pattern, prefix: prefix, deviceTopic: deviceTopic, suffix: suffix) == topic
        )
    }

    @Test func rejectsTopicsOutsideThePattern() {
        #expect(
            TasmotaProtocol.match("emoncms/other/pow1/stat/POWER", fullTopic: "emoncms/factory/%topic%/%prefix%/")
                == nil)
        #expect(TasmotaProtocol.match("tele/pow1", fullTopic: "%prefix%/%topic%/") == nil)
        #expect(TasmotaProtocol.match("tele/+/SENSOR", fullTopic: "%prefix%/%topic%/") == nil)
        #expect(!TasmotaProtocol.isValidFullTopic("%prefix%/fixed/"))
    }

    @Test func commandIsPowerNWithOnOff() {
        let message = TasmotaProtocol.commandMessage(
            fullTopic: "emoncms/factory/%topic%/%prefix%/", prefixes: .init(), deviceTopic: "pow1", channel: 2,
            state: .on)
        #expect(message.topic == "emoncms/factory/pow1/cmnd/POWER2")
        #expect(message.payload == Array("ON".utf8))
    }

    @Test func lwtWords() throws {
        #expect(try TasmotaProtocol.availability(Array("Online".utf8)).get())
        #expect(try !TasmotaProtocol.availability(Array("Offline".utf8)).get())
        #expect(throws: Rejection.self) { try TasmotaProtocol.availability(Array("up".utf8)).get() }
    }
}

@Suite("Shelly Gen1")
struct ShellyGen1ProtocolTests {
    static let powerCases: [ForeignReadingCase] = [
        ForeignReadingCase(
            name: "Plug S: power alone, energy watt-minutes ÷ 60", payload: "20.58", powerWatts: 20.58,
            energyWattHours: 1_234 / 60.0),
        ForeignReadingCase(name: "padded", payload: " 0 \n", powerWatts: 0, energyWattHours: 1_234 / 60.0),
        ForeignReadingCase(name: "null", payload: "null", rejection: .missingField),
        ForeignReadingCase(name: "text", payload: "abc", rejection: .wrongType),
        ForeignReadingCase(name: "negative", payload: "-3", rejection: .outOfRange),
    ]

    @Test(arguments: powerCases)
    func readsPower(_ item: ForeignReadingCase) {
        expectReading(
            ShellyGen1Protocol.reading(
                powerPayload: Array(item.payload.utf8), energyWattMinutes: 1_234, receivedAt: receivedAt,
                limits: ValidationLimits()), item)
    }

    @Test(arguments: [
        (
            "shellies/shellyplug-s-C572BE/relay/0/power", "shellyplug-s-C572BE",
            ShellyGen1Protocol.TopicKind.power(channel: 0)
        ),
        ("shellies/kitchen/relay/1/energy", "kitchen", .energy(channel: 1)),
        ("shellies/kitchen/relay/0", "kitchen", .relayState(channel: 0)),
        ("shellies/kitchen/online", "kitchen", .online),
        ("shellies/kitchen/announce", "kitchen", .announce),
    ])
    func parsesTopics(topic: String, id: String, kind: ShellyGen1Protocol.TopicKind) throws {
        let parsed = try #require(ShellyGen1Protocol.parseTopic(topic))
        #expect(parsed.id == id && parsed.kind == kind)
    }

    @Test func ignoresItsOwnCommandTopic() {
        #expect(ShellyGen1Protocol.parseTopic("shellies/kitchen/relay/0/command") == nil)
        #expect(ShellyGen1Protocol.parseTopic("other/kitchen/relay/0") == nil)
    }

    @Test(arguments: [("on", SwitchState.on), ("off", .off), ("overpower", .off), (" ON\n", .on)])
    func readsRelayState(payload: String, expected: SwitchState) throws {
        #expect(try ShellyGen1Protocol.stateReport(Array(payload.utf8)).get().state == expected)
    }

    @Test func onlineAndCommand() throws {
        #expect(try ShellyGen1Protocol.availability(Array("true".utf8)).get())
        #expect(try !ShellyGen1Protocol.availability(Array("false".utf8)).get())
        let command = ShellyGen1Protocol.commandMessage(id: "kitchen", channel: 0, state: .off)
        #expect(command.topic == "shellies/kitchen/relay/0/command" && command.payload == Array("off".utf8))
    }
}

@Suite("Shelly Gen2")
struct ShellyGen2ProtocolTests {
    static let docsStatus =
        #"{"id":0,"source":"switch","output":false,"apower":0,"voltage":238.215,"current":0,"aenergy":{"total":0.134,"by_minute":[0,0,0],"minute_ts":1632600459},"temperature":{"tC":49.5,"tF":121.1}}"#

    @Test func docsStatusDecodes() throws {
        let updates = try ShellyGen2Protocol.updates(
            Array(Self.docsStatus.utf8), kind: .status(component: "switch:0"), limits: ValidationLimits()
        ).get()
        #expect(updates.count == 1)
        let status = ShellyGen2Protocol.MeterStatus().overlaid(with: updates[0].fields)
        #expect(status.output == false)
        let reading = try #require(
            ShellyGen2Protocol.reading(status, deviceTime: nil, receivedAt: receivedAt, limits: ValidationLimits())
                .readings.first)
        #expect(reading.powerWatts == 0 && reading.voltageVolts == 238.215 && reading.currentAmperes == 0)
        #expect(reading.energyWattHours == 0.134)
    }

    @Test func notifyStatusDeltasOverlayTheLastStatus() throws {
        var status = ShellyGen2Protocol.MeterStatus().overlaid(
            with: try ShellyGen2Protocol.updates(
                Array(Self.docsStatus.utf8), kind: .status(component: "switch:0"), limits: ValidationLimits()
            ).get()[0].fields)
        let delta =
            #"{"src":"shellyplusplugs-80646fd20608","dst":"x/events","method":"NotifyStatus","params":{"ts":1714564805.25,"switch:0":{"id":0,"apower":12.5}}}"#
        let updates = try ShellyGen2Protocol.updates(Array(delta.utf8), kind: .events, limits: ValidationLimits()).get()
        #expect(updates.count == 1 && updates[0].component == "switch:0")
        #expect(updates[0].deviceTime == Date(timeIntervalSince1970: 1_714_564_805.25))
        status = status.overlaid(with: updates[0].fields)
        #expect(status.powerWatts == 12.5 && status.voltageVolts == 238.215 && status.energyWattHours == 0.134)
        let reading = try #require(
            ShellyGen2Protocol.reading(
                status, deviceTime: updates[0].deviceTime, receivedAt: receivedAt, limits: ValidationLimits()
            ).readings.first)
        #expect(reading.measuredAt == Date(timeIntervalSince1970: 1_714_564_805.25))
    }

    @Test func outputOnlyDeltaIsNoReading() throws {
        let delta = #"{"method":"NotifyStatus","params":{"ts":1714564805,"switch:0":{"id":0,"output":true}}}"#
        let update = try ShellyGen2Protocol.updates(Array(delta.utf8), kind: .events, limits: ValidationLimits()).get()[
            0]
        #expect(!ShellyGen2Protocol.MeterStatus.hasMeterFields(update.fields))
        #expect(ShellyGen2Protocol.MeterStatus().overlaid(with: update.fields).output == true)
    }

    @Test func otherNotificationsAreIgnored() throws {
        let event =
            #"{"method":"NotifyEvent","params":{"ts":1,"events":[{"component":"switch:0","event":"btn_down"}]}}"#
        #expect(
            try ShellyGen2Protocol.updates(Array(event.utf8), kind: .events, limits: ValidationLimits()).get().isEmpty)
    }

    @Test func pm1MeterWithoutSwitch() throws {
        let payload = #"{"id":0,"voltage":230.1,"current":0.2,"apower":40,"freq":50,"aenergy":{"total":1500.5}}"#
        let update = try ShellyGen2Protocol.updates(
            Array(payload.utf8), kind: .status(component: "pm1:0"), limits: ValidationLimits()
        ).get()[0]
        #expect(ShellyGen2Protocol.components(channel: 0).contains(update.component))
        let status = ShellyGen2Protocol.MeterStatus().overlaid(with: update.fields)
        #expect(status.output == nil && status.powerWatts == 40 && status.energyWattHours == 1500.5)
    }

    @Test func nullClearsAField() {
        let status = ShellyGen2Protocol.MeterStatus().overlaid(with: ["voltage": .number(230)]).overlaid(with: [
            "voltage": .null
        ])
        #expect(status.voltageVolts == nil)
    }

    @Test(arguments: [
        (
            "shellyplusplugs-80646fd20608/status/switch:0", "shellyplusplugs-80646fd20608",
            ShellyGen2Protocol.TopicKind.status(component: "switch:0")
        ),
        ("home/plugs/desk/events/rpc", "home/plugs/desk", .events),
        ("desk/online", "desk", .online),
        ("desk/status/pm1:0", "desk", .status(component: "pm1:0")),
    ])
    func parsesTopics(topic: String, prefix: String, kind: ShellyGen2Protocol.TopicKind) throws {
        let parsed = try #require(ShellyGen2Protocol.parseTopic(topic))
        #expect(parsed.prefix == prefix && parsed.kind == kind)
    }

    @Test func switchSetRequestAndReplies() throws {
        let command = ShellyGen2Protocol.commandMessage(
            prefix: "desk", replyPrefix: "outletd/a/shelly", channel: 0, commandID: 7, state: .on)
        #expect(command.topic == "desk/rpc")
        #expect(
            String(decoding: command.payload, as: UTF8.self)
                == #"{"id":7,"src":"outletd/a/shelly","method":"Switch.Set","params":{"id":0,"on":true}}"#)
        #expect(
            ShellyGen2Protocol.reply(Array(#"{"id":0,"src":"shellydev1-c8f09e47e6f0","result":{"was_on":true}}"#.utf8))
                == .success(id: 0, wasOn: true))
        #expect(
            ShellyGen2Protocol.reply(Array(#"{"id":"7","result":{"was_on":false}}"#.utf8))
                == .success(id: 7, wasOn: false))
        #expect(
            ShellyGen2Protocol.reply(Array(#"{"id":7,"error":{"code":-103,"message":"Invalid argument"}}"#.utf8))
                == .failure(id: 7, reason: "device_error: device error -103: Invalid argument"))
        #expect(ShellyGen2Protocol.reply(Array("nope".utf8)) == nil)
    }
}

@Suite("Discovery")
struct DiscoveryTests {
    @Test func tasmotaDiscoveryConfig() throws {
        let payload =
            #"{"ip":"192.168.1.20","dn":"Tasmota","fn":["Tasmota",null],"hn":"tasmota-ABC123","mac":"A4CF12ABC123","md":"Sonoff Dual R2","ty":0,"if":0,"ofln":"Offline","onln":"Online","state":["AUS","AN","TOGGLE","HOLD"],"sw":"12.5.0","t":"tasmota_ABC123","ft":"emoncms/factory/%topic%/%prefix%/","tp":["cmnd","stat","tele"],"rl":[1,1,0,0,0,0,0,0],"swc":[-1,-1],"btn":[0,0],"so":{"4":0}}"#
        let suggestion = try #require(TasmotaProtocol.discovery(Array(payload.utf8)))
        #expect(
            suggestion
                == DeviceSuggestion(
                    code: "tasmota_ABC123", outletProtocol: .tasmota, deviceTopic: "tasmota_ABC123",
                    fullTopic: "emoncms/factory/%topic%/%prefix%/", channels: [1, 2], onWord: "AN", offWord: "AUS"))
    }

    @Test func tasmotaDiscoveryDefaultsAndRefusals() throws {
        let minimal = try #require(TasmotaProtocol.discovery(Array(#"{"t":"pow1","ft":"%prefix%/%topic%/"}"#.utf8)))
        #expect(minimal.fullTopic == nil && minimal.channels == [1] && minimal.onWord == nil)
        #expect(TasmotaProtocol.discovery(Array(#"{"t":"a/b"}"#.utf8)) == nil)
        #expect(TasmotaProtocol.discovery(Array(#"{"mac":"x"}"#.utf8)) == nil)
        #expect(DeviceSuggestion.code(from: "plug.kitchen 1") == "plug-kitchen-1")
    }

    @Test func shellyAnnounce() throws {
        let payload =
            #"{"id":"shellyplug-s-C572BE","model":"SHPLG-S","mac":"A4CF12C572BE","ip":"192.168.1.30","new_fw":false,"fw_ver":"20230913-114008/v1.14.0-gcb84623"}"#
        #expect(
            ShellyGen1Protocol.announcement(Array(payload.utf8))
                == DeviceSuggestion(
                    code: "shellyplug-s-C572BE", outletProtocol: .shellyGen1, deviceTopic: "shellyplug-s-C572BE",
                    channels: [0]))
    }
}
