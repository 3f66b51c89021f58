/// One MQTT application message: what ``MQTTClient`` hands to its `onMessage` callback.
public struct MQTTMessage: Sendable, Equatable {
    /// The topic it was published to (never a filter).
    public var topic: String
    /// The payload bytes, exactly as published (may be empty).
    public var payload: [UInt8]
    /// Quality of service of this delivery: 0, 1 or 2.
    public var qos: Int
    /// Whether the broker delivered it from its retained store.
    public var retain: Bool

    /// Creates a message.
    public init(topic: String, payload: [UInt8], qos: Int = 0, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    /// The Last Will and Testament: the message the broker publishes for a client whose connection ends
    /// without a DISCONNECT (crash, network loss, keepalive timeout).
    public struct Will: Sendable, Equatable {
        /// Topic of the will message.
        public var topic: String
        /// Payload of the will message.
        public var payload: [UInt8]
        /// Quality of service, 0, 1 or 2.
        public var qos: Int
        /// Whether the broker retains it.
        public var retain: Bool

        /// Creates a will.
        public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }
}
