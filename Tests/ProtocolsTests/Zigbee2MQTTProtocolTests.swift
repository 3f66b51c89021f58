import Foundation
import Protocols
import Telemetry
import Testing

/// Zigbee2MQTT state messages of real plugs. Each payload is written from Zigbee2MQTT's device page (the keys and
/// units its converters publish: zigbee2mqtt.io `docs/devices/<model>.md`, commits named per case) with values
/// from the device where one was documented; `linkquality`, `update`, `child_lock`… are what Zigbee2MQTT adds.
@Suite("Zigbee2MQTT")
struct Zigbee2MQTTProtocolTests {
    struct StateCase: Sendable, CustomTestStringConvertible {
        var name: String
        var payload: String
        var endpoint = ""
        var deviceMeter = true
        var expected: ForeignReadingCase
        var state: SwitchState?
        var testDescription: String { name }
    }

    static let stateCases: [StateCase] = [
        // Tuya TS011F_plug_1 (docs/devices/TS011F_plug_1.md @ 013af215: state, power W, current A, voltage V,
        // energy kWh, power_outage_memory, linkquality). White label LELLKI; _TZ3000_* firmware, no version given.
        StateCase(
            name: "Tuya TS011F_plug_1: full cached state, energy kWh → Wh",
            payload:
                #"{"current":0.05,"energy":1.63,"linkquality":156,"power":10,"power_outage_memory":"restore","state":"ON","voltage":231}"#,
            expected: ForeignReadingCase(
                name: "", payload: "", powerWatts: 10, voltageVolts: 231, currentAmperes: 0.05, energyWattHours: 1_630),
            state: .on),
        // Xiaomi/Aqara SP-EUC01 (docs/devices/SP-EUC01.md @ 013af215: state, power, energy, device_temperature,
        // linkquality; no voltage or current in that version). Firmware OTA-capable, version not documented.
        StateCase(
            name: "Aqara SP-EUC01: power and energy only, device_temperature ignored",
            payload:
                #"{"device_temperature":32,"energy":0.35,"linkquality":90,"power":4.3,"power_outage_count":3,"state":"OFF"}"#,
            expected: ForeignReadingCase(name: "", payload: "", powerWatts: 4.3, energyWattHours: 350), state: .off),
        // IKEA INSPELNING E2206, firmware 2.4.45 (values of a real plug's report: 226.6 V, 0.003 A, 0 W, 2.97 kWh);
        // keys of Zigbee2MQTT's E2206 definition (electricity meter, power_on_behavior, OTA `update` object).
        StateCase(
            name: "IKEA INSPELNING E2206 fw 2.4.45: nested update object ignored",
            payload:
                #"{"current":0.003,"energy":2.97,"linkquality":120,"power":0,"power_on_behavior":"previous","state":"ON","update":{"installed_version":33816645,"latest_version":33816645,"state":"idle"},"voltage":226.6}"#,
            expected: ForeignReadingCase(
                name: "", payload: "", powerWatts: 0, voltageVolts: 226.6, currentAmperes: 0.003,
                energyWattHours: 2_970),
            state: .on),
        // Tuya TS011F_4, 2 gang plug (docs/devices/TS011F_4.md @ 1636cbdf: state_l1, state_l2, one power, current,
        // voltage, energy for the device, child_lock, indicator_mode): the meter is the first registered socket's.
        StateCase(
            name: "Tuya TS011F_4 socket l1: the device's one meter, state_l1",
            payload:
                #"{"child_lock":"UNLOCK","current":0.42,"energy":12.5,"indicator_mode":"off/on","linkquality":102,"power":96.1,"power_outage_memory":"on","state_l1":"ON","state_l2":"OFF","voltage":229.8}"#,
            endpoint: "l1",
            expected: ForeignReadingCase(
                name: "", payload: "", powerWatts: 96.1, voltageVolts: 229.8, currentAmperes: 0.42,
                energyWattHours: 12_500),
            state: .on),
        StateCase(
            name: "Tuya TS011F_4 socket l2: no meter of its own, state_l2",
            payload: #"{"current":0.42,"energy":12.5,"power":96.1,"state_l1":"ON","state_l2":"OFF","voltage":229.8}"#,
            endpoint: "l2", deviceMeter: false,
            expected: ForeignReadingCase(name: "", payload: "", ignored: .noReading), state: .off),
        StateCase(
            name: "per-endpoint meter keys win over the device's",
            payload: #"{"power":50,"power_l2":20,"energy_l2":0.5,"state_l2":"ON"}"#, endpoint: "l2",
            deviceMeter: false,
            expected: ForeignReadingCase(name: "", payload: "", powerWatts: 20, energyWattHours: 500), state: .on),
        StateCase(
            name: "only state: a state report, no reading",
            payload: #"{"state":"OFF"}"#,
            expected: ForeignReadingCase(name: "", payload: "", ignored: .noReading), state: .off),
        StateCase(
            name: "only linkquality: ignored",
            payload: #"{"linkquality":87}"#,
            expected: ForeignReadingCase(name: "", payload: "", ignored: .noReading)),
        StateCase(
            name: "a counter alone (attribute reported on its own): energy_only",
            payload: #"{"energy":1.5}"#,
            expected: ForeignReadingCase(name: "", payload: "", ignored: .energyOnly)),
        StateCase(
            name: "a voltage alone: no power yet",
            payload: #"{"voltage":230}"#,
            expected: ForeignReadingCase(name: "", payload: "", ignored: .noPower)),
        StateCase(
            name: "voltage and current without power: V × A",
            payload: #"{"voltage":230,"current":0.5}"#,
            expected: ForeignReadingCase(
                name: "", payload: "", powerWatts: 115, voltageVolts: 230, currentAmperes: 0.5)),
        StateCase(
            name: "negative power: rejected",
            payload: #"{"power":-5,"state":"ON"}"#,
            expected: ForeignReadingCase(name: "", payload: "", rejection: .outOfRange), state: .on),
        StateCase(
            name: "not JSON: rejected",
            payload: "ON",
            expected: ForeignReadingCase(name: "", payload: "", rejection: .malformedJSON)),
    ]

    @Test(arguments: stateCases)
    func decodesState(_ item: StateCase) throws {
        let decoded = Zigbee2MQTTProtocol.decodeState(
            Array(item.payload.utf8), endpoint: item.endpoint, deviceMeter: item.deviceMeter, receivedAt: receivedAt,
            limits: ValidationLimits())
        expectReading(decoded, item.expected)
        let report = Zigbee2MQTTProtocol.stateReport(Array(item.payload.utf8), endpoint: item.endpoint)
        #expect(try report?.get().state == item.state)
    }

    /// Zigbee2MQTT's cache repeats every value with each attribute change: only a change makes a new sample.
    @Test func cachedValuesAreNoNewMeasurement() {
        let first = Zigbee2MQTTProtocol.Meter().overlaid(
            with: Zigbee2MQTTProtocol.meterUpdate(
                ["power": .number(10), "voltage": .number(231), "energy": .number(1.63)], endpoint: "",
                deviceMeter: true))
        // The state changed, the cache repeats the meter: equal, so no sample (ForeignReadings: cached_values).
        let repeated = first.overlaid(
            with: Zigbee2MQTTProtocol.meterUpdate(
                ["power": .number(10), "voltage": .number(231), "energy": .number(1.63), "state": .string("OFF")],
                endpoint: "", deviceMeter: true))
        #expect(repeated == first)
        // A device reporting one attribute per message: the others keep their last value.
        let partial = first.overlaid(
            with: Zigbee2MQTTProtocol.meterUpdate(["power": .number(0)], endpoint: "", deviceMeter: true))
        #expect(partial.powerWatts == 0 && partial.voltageVolts == 231 && partial.energyWattHours == 1_630)
        // null clears a value.
        let cleared = partial.overlaid(
            with: Zigbee2MQTTProtocol.meterUpdate(["voltage": .null], endpoint: "", deviceMeter: true))
        #expect(cleared.voltageVolts == nil)
    }

    @Test(arguments: [
        ("zigbee2mqtt/living/plug", Zigbee2MQTTProtocol.TopicKind.message(path: "living/plug")),
        ("zigbee2mqtt/0x00158d0001a2b3c4", .message(path: "0x00158d0001a2b3c4")),
        ("zigbee2mqtt/living/plug/availability", .availability(name: "living/plug")),
        ("zigbee2mqtt/bridge/devices", .bridgeDevices),
        ("zigbee2mqtt/living/plug/power", .message(path: "living/plug/power")),
    ])
    func parsesTopics(topic: String, kind: Zigbee2MQTTProtocol.TopicKind) {
        #expect(Zigbee2MQTTProtocol.parseTopic(topic) == kind)
    }

    @Test(arguments: [
        "zigbee2mqtt/living/plug/set", "zigbee2mqtt/living/plug/set/state", "zigbee2mqtt/living/plug/get",
        "zigbee2mqtt/plug/l2/set", "zigbee2mqtt/bridge/state", "zigbee2mqtt/bridge/logging",
        "zigbee2mqtt/bridge/response/device/rename", "zigbee2mqtt/bridge/info", "zigbee2mqtt//x", "other/plug",
        "zigbee2mqtt",
    ])
    func otherTopicsAreNotRead(topic: String) {
        #expect(Zigbee2MQTTProtocol.parseTopic(topic) == nil)
    }

    @Test func availabilityBothForms() throws {
        #expect(try Zigbee2MQTTProtocol.availability(Array(#"{"state":"online"}"#.utf8)).get())
        #expect(try !Zigbee2MQTTProtocol.availability(Array(#"{"state":"offline"}"#.utf8)).get())
        #expect(try Zigbee2MQTTProtocol.availability(Array("online".utf8)).get())
        #expect(try !Zigbee2MQTTProtocol.availability(Array("offline".utf8)).get())
        #expect(throws: Rejection.self) { try Zigbee2MQTTProtocol.availability(Array("maybe".utf8)).get() }
    }

    @Test func commandsByEndpoint() {
        let single = Zigbee2MQTTProtocol.commandMessage(
            baseTopic: "zigbee2mqtt", name: "living/plug", endpoint: "", state: .off)
        #expect(single.topic == "zigbee2mqtt/living/plug/set")
        #expect(String(decoding: single.payload, as: UTF8.self) == #"{"state":"OFF"}"#)
        let socket = Zigbee2MQTTProtocol.commandMessage(baseTopic: "z2m", name: "strip", endpoint: "l2", state: .on)
        #expect(socket.topic == "z2m/strip/set")
        #expect(String(decoding: socket.payload, as: UTF8.self) == #"{"state_l2":"ON"}"#)
    }

    /// `bridge/devices` as Zigbee2MQTT publishes it (the coordinator first; exposes from the device pages above).
    static let bridgeDevices = """
        [{"ieee_address":"0x00124b0024c1a2b3","type":"Coordinator","network_address":0,"supported":true,"disabled":false,"friendly_name":"Coordinator","definition":null,"interview_completed":true},
         {"ieee_address":"0xa4c1381234567890","type":"Router","friendly_name":"kitchen/kettle","disabled":false,"supported":true,"model_id":"TS011F","manufacturer":"_TZ3000_gjnozsaz","power_source":"Mains (single phase)","definition":{"model":"TS011F_plug_1","vendor":"Tuya","description":"Smart plug (with power monitoring)","exposes":[{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF","value_toggle":"TOGGLE"}]},{"type":"numeric","name":"power","property":"power","access":5,"unit":"W"},{"type":"numeric","name":"current","property":"current","access":5,"unit":"A"},{"type":"numeric","name":"voltage","property":"voltage","access":5,"unit":"V"},{"type":"numeric","name":"energy","property":"energy","access":5,"unit":"kWh"},{"type":"enum","name":"power_outage_memory","property":"power_outage_memory","access":7,"values":["on","off","restore"]},{"type":"numeric","name":"linkquality","property":"linkquality","access":1,"unit":"lqi"}]}},
         {"ieee_address":"0xa4c138aabbccdd00","type":"Router","friendly_name":"desk strip","disabled":false,"definition":{"model":"TS011F_4","vendor":"Tuya","description":"2 gang plug","exposes":[{"type":"switch","endpoint":"l1","features":[{"type":"binary","name":"state","property":"state_l1","endpoint":"l1","access":7,"value_on":"ON","value_off":"OFF"}]},{"type":"switch","endpoint":"l2","features":[{"type":"binary","name":"state","property":"state_l2","endpoint":"l2","access":7,"value_on":"ON","value_off":"OFF"}]},{"type":"numeric","name":"power","property":"power","access":5,"unit":"W"},{"type":"numeric","name":"energy","property":"energy","access":5,"unit":"kWh"}]}},
         {"ieee_address":"0x00158d0001234567","type":"EndDevice","friendly_name":"hall/temperature","disabled":false,"definition":{"model":"WSDCGQ11LM","vendor":"Aqara","description":"Temperature and humidity sensor","exposes":[{"type":"numeric","name":"temperature","property":"temperature","access":1,"unit":"°C"},{"type":"numeric","name":"battery","property":"battery","access":1,"unit":"%"}]}},
         {"ieee_address":"0x00124b0029aabbcc","type":"Router","friendly_name":"lamp plug","disabled":false,"definition":{"model":"S60ZBTPF","vendor":"SONOFF","description":"Zigbee smart plug","exposes":[{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7}]},{"type":"enum","name":"power_on_behavior","property":"power_on_behavior","access":7}]}},
         {"ieee_address":"0x00158d000aaaaaaa","type":"Router","friendly_name":"old plug","disabled":true,"definition":{"model":"SP-EUC01","vendor":"Aqara","exposes":[{"type":"numeric","name":"power","property":"power","access":5}]}},
         {"ieee_address":"0x00158d000bbbbbbb","type":"Router","friendly_name":"new plug","interviewing":true,"definition":null}]
        """

    @Test func bridgeDevicesSuggestMeteredOutletsOnly() {
        let suggestions = Zigbee2MQTTProtocol.suggestions(Array(Self.bridgeDevices.utf8))
        #expect(
            suggestions == [
                DeviceSuggestion(
                    code: "kitchen-kettle", outletProtocol: .zigbee2mqtt, deviceTopic: "kitchen/kettle", channels: [0]),
                DeviceSuggestion(
                    code: "desk-strip", outletProtocol: .zigbee2mqtt, deviceTopic: "desk strip", channels: [0],
                    endpoints: ["l1", "l2"]),
            ])
        #expect(Zigbee2MQTTProtocol.suggestions(Array("[]".utf8)).isEmpty)
        #expect(Zigbee2MQTTProtocol.suggestions(Array("{}".utf8)).isEmpty)
    }
}
