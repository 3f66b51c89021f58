import Foundation
import Protocols
import Telemetry
import Testing

/// ESPHome nodes as they publish over MQTT. The configurations are real ones: Athom Smart Plug V2 (athom-tech's
/// `athom-smart-plug-v2.yaml`, project version v2.0.8, ESPHome ≥ 2024.6.0, `name_add_mac_suffix: true`: a kWh
/// `Total Energy` kept in flash, the CSE7766 `Energy` counted since boot, a `Total Daily Energy`) and Sonoff S31
/// (esphome-devices' `Sonoff-S31/index.md`, ESPHome ≥ 2024.4.0: entity names with the node name in front, `Energy`
/// in Wh, a `Daily Energy`). Payloads follow ESPHome's source: `mqtt_sensor.cpp` (the value to the sensor's
/// accuracy, `nan` without a state), `mqtt_component.cpp` and `mqtt_const.h` (discovery, abbreviated keys).
@Suite("ESPHome")
struct ESPHomeProtocolTests {
    @Test(arguments: [
        (
            "athom-smart-plug-v2/sensor/power/state", "athom-smart-plug-v2",
            ESPHomeProtocol.TopicKind.sensor(objectID: "power")
        ),
        ("sonoff_s31/sensor/sonoff_s31_energy/state", "sonoff_s31", .sensor(objectID: "sonoff_s31_energy")),
        ("athom-smart-plug-v2/switch/switch/state", "athom-smart-plug-v2", .switchState(objectID: "switch")),
        ("sonoff_s31/status", "sonoff_s31", .status),
        ("home/plugs/desk/sensor/power/state", "home/plugs/desk", .sensor(objectID: "power")),
    ])
    func parsesTopics(topic: String, prefix: String, kind: ESPHomeProtocol.TopicKind) throws {
        let parsed = try #require(ESPHomeProtocol.parseTopic(topic))
        #expect(parsed.prefix == prefix && parsed.kind == kind)
    }

    @Test(arguments: ["sonoff_s31/switch/sonoff_s31_relay/command", "a/light/x/state", "status", "a/sensor/x"])
    func otherTopicsAreNotRead(topic: String) {
        #expect(ESPHomeProtocol.parseTopic(topic) == nil)
    }

    @Test func values() throws {
        #expect(try ESPHomeProtocol.value(Array("12.35".utf8)).get() == 12.35)
        #expect(try ESPHomeProtocol.value(Array("0".utf8)).get() == 0)
        #expect(try ESPHomeProtocol.value(Array("nan".utf8)).get() == nil)
        #expect(try ESPHomeProtocol.value(Array("None".utf8)).get() == nil)
        #expect(throws: Rejection.self) { try ESPHomeProtocol.value(Array("ON".utf8)).get() }
        #expect(try ESPHomeProtocol.switchState(Array("ON".utf8)).get().state == .on)
        #expect(try ESPHomeProtocol.switchState(Array("OFF".utf8)).get().state == .off)
        #expect(try ESPHomeProtocol.availability(Array("online".utf8)).get())
        #expect(try !ESPHomeProtocol.availability(Array("offline".utf8)).get())
        let command = ESPHomeProtocol.commandMessage(prefix: "sonoff_s31", switchID: "sonoff_s31_relay", state: .off)
        #expect(command.topic == "sonoff_s31/switch/sonoff_s31_relay/command" && command.payload == Array("OFF".utf8))
    }

    @Test(arguments: [
        ("power", ESPHomeProtocol.SensorRole.power), ("sonoff_s31_power", .power), ("voltage", .voltage),
        ("sonoff_s31_current", .current), ("power_factor", .powerFactor), ("energy", .energy),
        ("total_energy", .energy), ("sonoff_s31_energy", .energy),
    ])
    func usualObjectIDs(objectID: String, role: ESPHomeProtocol.SensorRole) {
        #expect(ESPHomeProtocol.defaultRole(of: objectID) == role)
    }

    @Test(arguments: [
        "total_daily_energy", "sonoff_s31_daily_energy", "apparent_power", "sonoff_s31_reactive_power",
        "wifi_signal_db", "uptime_sensor", "energy_today",
    ])
    func notTheOutletsMeter(objectID: String) {
        #expect(ESPHomeProtocol.defaultRole(of: objectID) == nil)
    }

    @Test func sensorMapText() throws {
        let map = try ESPHomeProtocol.SensorMap.parse("power=my_power,energy=total:kWh,switch=relay_1").get()
        #expect(map.sources[.power] == ESPHomeProtocol.Source(objectID: "my_power"))
        #expect(map.sources[.energy] == ESPHomeProtocol.Source(objectID: "total", factor: 1_000))
        #expect(map.switchID == "relay_1")
        #expect(map.text == "power=my_power,energy=total:kWh,switch=relay_1")
        #expect(map.role(of: "total")?.role == .energy && map.role(of: "total")?.factor == 1_000)
        // A role the map names elsewhere is no longer the usual id's.
        #expect(map.role(of: "energy") == nil)
        #expect(map.role(of: "voltage")?.role == .voltage)
        #expect(throws: Rejection.self) { try ESPHomeProtocol.SensorMap.parse("watts=x").get() }
        #expect(throws: Rejection.self) { try ESPHomeProtocol.SensorMap.parse("energy=x:kJ").get() }
    }

    static func athom(_ objectID: String, _ name: String, _ extra: String) -> String {
        #"{\#(extra)"name":"\#(name)","stat_t":"athom-smart-plug-v2/sensor/\#(objectID)/state","avty_t":"athom-smart-plug-v2/status","uniq_id":"ESPsensor\#(objectID)","dev":{"ids":"a4cf12abcdef","name":"Smart Plug V2","sw":"v2.0.8 (ESPHome 2024.6.0)","mdl":"Athom Plug V2","mf":"China Athom Technology","cns":[["mac","a4cf12abcdef"]]}}"#
    }

    /// The Athom plug's configs as its node announces them (node name with the MAC suffix, prefix without).
    static let athomConfigs: [(String, String, String)] = [
        (
            "sensor", "power",
            athom("power", "Power", #""dev_cla":"power","unit_of_meas":"W","stat_cla":"measurement","ic":"mdi:power","#)
        ),
        (
            "sensor", "voltage",
            athom("voltage", "Voltage", #""dev_cla":"voltage","unit_of_meas":"V","stat_cla":"measurement","#)
        ),
        (
            "sensor", "current",
            athom("current", "Current", #""dev_cla":"current","unit_of_meas":"A","stat_cla":"measurement","#)
        ),
        (
            "sensor", "energy",
            athom("energy", "Energy", #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#)
        ),
        (
            "sensor", "total_energy",
            athom(
                "total_energy", "Total Energy",
                #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#)
        ),
        (
            "sensor", "total_daily_energy",
            athom(
                "total_daily_energy", "Total Daily Energy",
                #""dev_cla":"energy","unit_of_meas":"kWh","stat_cla":"total_increasing","#)
        ),
        (
            "sensor", "power_factor",
            athom("power_factor", "Power Factor", #""dev_cla":"power_factor","stat_cla":"measurement","#)
        ),
        (
            "sensor", "apparent_power",
            athom(
                "apparent_power", "Apparent Power",
                #""dev_cla":"apparent_power","unit_of_meas":"VA","stat_cla":"measurement","#)
        ),
        (
            "sensor", "wifi_signal_db",
            athom(
                "wifi_signal_db", "WiFi Signal dB",
                #""dev_cla":"signal_strength","unit_of_meas":"dBm","ent_cat":"diagnostic","#)
        ),
        (
            "switch", "switch",
            #"{"name":"Switch","ic":"mdi:power-socket-us","stat_t":"athom-smart-plug-v2/switch/switch/state","cmd_t":"athom-smart-plug-v2/switch/switch/command","avty_t":"athom-smart-plug-v2/status","uniq_id":"ESPswitchswitch","dev":{"ids":"a4cf12abcdef","name":"Smart Plug V2","sw":"v2.0.8 (ESPHome 2024.6.0)","mdl":"Athom Plug V2","mf":"China Athom Technology"}}"#
        ),
    ]

    @Test func athomDiscoveryPicksTheKeptKWhTotalNotTheDailyNorTheBootCounter() throws {
        let entities = try Self.athomConfigs.map { component, objectID, payload in
            try #require(
                ESPHomeDiscovery.entity(
                    component: component, node: "athom-smart-plug-v2-abcdef", objectID: objectID,
                    payload: Array(payload.utf8)))
        }
        #expect(Set(entities.map(\.prefix)) == ["athom-smart-plug-v2"])
        let map = ESPHomeDiscovery.map(entities)
        #expect(
            map.text
                == "power=power,voltage=voltage,current=current,power_factor=power_factor,energy=total_energy:kWh,switch=switch"
        )
        let suggestion = try #require(ESPHomeDiscovery.suggestion(entities))
        #expect(suggestion.code == "athom-smart-plug-v2-abcdef" && suggestion.deviceTopic == "athom-smart-plug-v2")
        #expect(
            suggestion.outletProtocol == .esphome && suggestion.endpoints.isEmpty && suggestion.sensorMap == map.text)
    }

    static func s31(_ objectID: String, _ name: String, _ extra: String) -> String {
        // Long keys (`use_abbreviations: false`), no project: sw is the version and config hash.
        #"{\#(extra)"name":"\#(name)","state_topic":"sonoff_s31/sensor/\#(objectID)/state","availability_topic":"sonoff_s31/status","unique_id":"ESPsensor\#(objectID)","device":{"identifiers":"a4cf12c0ffee","name":"sonoff_s31","sw_version":"2024.4.0 (config hash 0x1a2b3c4d)","model":"esp12e","manufacturer":"Espressif"}}"#
    }

    @Test func sonoffS31DiscoveryWithLongKeysAndAWhCounter() throws {
        let configs = [
            ("sonoff_s31_power", s31Payload("sonoff_s31_power", "Sonoff S31 Power", "power", "W", "measurement")),
            (
                "sonoff_s31_energy",
                s31Payload("sonoff_s31_energy", "Sonoff S31 Energy", "energy", "Wh", "total_increasing")
            ),
            (
                "sonoff_s31_daily_energy",
                s31Payload("sonoff_s31_daily_energy", "Sonoff S31 Daily Energy", "energy", "Wh", "total_increasing")
            ),
            (
                "sonoff_s31_voltage",
                s31Payload("sonoff_s31_voltage", "Sonoff S31 Voltage", "voltage", "V", "measurement")
            ),
        ]
        let entities = try configs.map { objectID, payload in
            try #require(
                ESPHomeDiscovery.entity(
                    component: "sensor", node: "sonoff_s31", objectID: objectID, payload: Array(payload.utf8)))
        }
        #expect(
            ESPHomeDiscovery.map(entities).text
                == "power=sonoff_s31_power,voltage=sonoff_s31_voltage,energy=sonoff_s31_energy")
    }

    func s31Payload(_ objectID: String, _ name: String, _ deviceClass: String, _ unit: String, _ stateClass: String)
        -> String
    {
        Self.s31(
            objectID, name,
            #""device_class":"\#(deviceClass)","unit_of_measurement":"\#(unit)","state_class":"\#(stateClass)","#)
    }

    @Test func othersConfigsAreNotESPHomes() {
        // Zigbee2MQTT's own Home Assistant discovery (1.40): its state topic is the device's JSON state.
        let zigbee =
            #"{"state_topic":"zigbee2mqtt/kitchen/kettle","value_template":"{{ value_json.power }}","unit_of_measurement":"W","device_class":"power","unique_id":"0xa4c1381234567890_power_zigbee2mqtt","device":{"identifiers":["zigbee2mqtt_0xa4c1381234567890"],"name":"kitchen/kettle","model":"Smart plug (with power monitoring) (TS011F_plug_1)","manufacturer":"Tuya","via_device":"zigbee2mqtt_bridge_0x00124b0024c1a2b3"},"origin":{"name":"Zigbee2MQTT","sw":"1.40.0","url":"https://www.zigbee2mqtt.io"},"state_class":"measurement","object_id":"kitchen_kettle_power"}"#
        #expect(
            ESPHomeDiscovery.entity(
                component: "sensor", node: "0xa4c1381234567890", objectID: "power", payload: Array(zigbee.utf8)) == nil)
        // outletd's own configs.
        let outletd =
            #"{"state_topic":"tele/pow1/SENSOR","device_class":"power","unique_id":"outletd_pow1_power","device":{"identifiers":["outletd_pow1"],"manufacturer":"outletd"}}"#
        #expect(
            ESPHomeDiscovery.entity(
                component: "sensor", node: "outletd", objectID: "pow1_power", payload: Array(outletd.utf8))
                == nil)
        #expect(ESPHomeDiscovery.entity(component: "sensor", node: "x", objectID: "power", payload: []) == nil)
        #expect(
            ESPHomeDiscovery.parseTopic(
                "homeassistant/sensor/sonoff_s31/sonoff_s31_power/config", discoveryPrefix: "homeassistant")?
                .objectID == "sonoff_s31_power")
        #expect(ESPHomeDiscovery.parseTopic("homeassistant/light/a/b/config", discoveryPrefix: "homeassistant") == nil)
    }

    /// The CSE7766 publishes current, voltage, power, energy one after the other each update interval.
    @Test func cyclesPairSeparateMessagesIntoOneSample() {
        var cycles = ESPHomeCycles<String>()
        let start = receivedAt
        #expect(cycles.add(0.42, role: .current, of: "s31", at: start).isEmpty)
        #expect(cycles.add(229.8, role: .voltage, of: "s31", at: start.addingTimeInterval(0.002)).isEmpty)
        #expect(cycles.add(96.1, role: .power, of: "s31", at: start.addingTimeInterval(0.004)).isEmpty)
        #expect(cycles.add(1_234, role: .energy, of: "s31", at: start.addingTimeInterval(0.006)).isEmpty)
        // The first cycle has no known shape: it ends with its window.
        let first = cycles.expire(openedBefore: start.addingTimeInterval(1.5))
        #expect(first.count == 1 && first[0].ignored == nil && first[0].receivedAt == start)
        #expect(first[0].values == [.current: 0.42, .voltage: 229.8, .power: 96.1, .energy: 1_234])
        // The next one completes as soon as it has the same roles.
        let next = start.addingTimeInterval(10)
        _ = cycles.add(0.40, role: .current, of: "s31", at: next)
        _ = cycles.add(229.1, role: .voltage, of: "s31", at: next)
        _ = cycles.add(90, role: .power, of: "s31", at: next)
        let second = cycles.add(1_235, role: .energy, of: "s31", at: next)
        #expect(second.count == 1 && second[0].values[.power] == 90 && cycles.isEmpty)
        // A counter on its own interval: energy_only, kept for the next sample.
        let later = start.addingTimeInterval(20)
        let counterOnly =
            cycles.add(1_240, role: .energy, of: "s31", at: later)
            + cycles.expire(openedBefore: later.addingTimeInterval(2))
        #expect(counterOnly.map(\.ignored) == [.energyOnly])
        _ = cycles.add(80, role: .power, of: "s31", at: later.addingTimeInterval(5))
        let withKept = cycles.completeAll()
        #expect(withKept.first?.values[.energy] == 1_240 && withKept.first?.values[.power] == 80)
        // A voltage alone is no sample.
        _ = cycles.add(230, role: .voltage, of: "other", at: later)
        #expect(cycles.completeAll().map(\.ignored) == [.noPower])
    }

    @Test func aRepeatedRoleStartsTheNextCycle() {
        var cycles = ESPHomeCycles<String>()
        _ = cycles.add(10, role: .power, of: "a", at: receivedAt)
        // The first cycle ends without a second power; the next one has the learned shape ({power}) at once.
        let completed = cycles.add(11, role: .power, of: "a", at: receivedAt.addingTimeInterval(0.5))
        #expect(completed.map { $0.values[.power] } == [10, 11])
        #expect(cycles.isEmpty)
    }
}
