import Telemetry

extension Zigbee2MQTTProtocol {
    /// Reads the retained `<base>/bridge/devices` list: one suggestion per device that is an outlet with a meter,
    /// i.e. whose exposes include `power`, or `state` and `energy` (a switch whose counter is all it meters).
    ///
    /// Each entry is `{"friendly_name":…,"type":"Router",…,"definition":{"model":…,"exposes":[…]}}`; a switch of a
    /// multi-socket device is `{"type":"switch","endpoint":"l2","features":[{"property":"state_l2",…}]}`, and such a
    /// device is suggested as one outlet per endpoint. The coordinator, disabled devices, devices without a
    /// definition (not supported, still interviewing) and everything without a meter (sensors, lights, remotes,
    /// plugs that only switch) are left out: never pending.
    public static func suggestions(_ payload: [UInt8]) -> [DeviceSuggestion] {
        guard case .array(let devices)? = try? JSONParser.parse(payload) else { return [] }
        return devices.compactMap(suggestion)
    }

    static func suggestion(_ device: JSONValue) -> DeviceSuggestion? {
        guard case .string(let name)? = device["friendly_name"], !name.isEmpty, !name.contains("+"),
            !name.contains("#"), device["type"] != .string("Coordinator"), device["disabled"] != .bool(true),
            case .array(let exposes)? = device["definition"]?["exposes"],
            let code = DeviceSuggestion.code(from: name)
        else { return nil }
        var properties = Set<String>()
        var endpoints: [String] = []
        func collect(_ expose: JSONValue) {
            if case .string(let property)? = expose["property"] { properties.insert(property) }
            if case .string(let type)? = expose["type"], type == "switch",
                case .string(let endpoint)? = expose["endpoint"],
                !endpoint.isEmpty, !endpoints.contains(endpoint)
            {
                endpoints.append(endpoint)
            }
            if case .array(let features)? = expose["features"] { features.forEach(collect) }
        }
        exposes.forEach(collect)
        func has(_ key: String) -> Bool {
            properties.contains(key)
                || properties.contains {
                    $0.hasPrefix(key + "_") && endpoints.contains(String($0.dropFirst(key.count + 1)))
                }
        }
        let isStateful = has("state") || properties.contains { $0.hasPrefix("state_") }
        guard has("power") || (isStateful && has("energy")) else { return nil }
        // One socket named by an endpoint (`state_l1` and no `state`) is still addressed by its endpoint.
        let named = endpoints.count > 1 || (endpoints.count == 1 && !properties.contains("state"))
        return DeviceSuggestion(
            code: code, outletProtocol: .zigbee2mqtt, deviceTopic: name, channels: [0],
            endpoints: named ? endpoints : [])
    }
}
