import Config
import TestSupport

extension Harness {
    /// A configuration pointing at the test stack's broker and `databaseURL`, with names of its own (topic prefix,
    /// instance, share groups, spool folder) so that tests sharing the stack never see each other's traffic.
    public static func configuration(databaseURL: String) throws -> OutletdConfiguration {
        var configuration = OutletdConfiguration()
        configuration.database.url = databaseURL
        configuration.mqtt.url = try TestStack.shared().mqttURL
        configuration.mqtt.topicPrefix = TestStack.uniqueName("p") + "/outlets"
        configuration.instanceID = TestStack.uniqueName("outletd-test-")
        // Share groups of their own: the broker is shared by all tests, Tasmota and Shelly topics carry no
        // test prefix, and mosquitto keeps handing a group's messages to the stopped sessions of earlier tests.
        configuration.mqtt.shareGroup = TestStack.uniqueName("g")
        configuration.commands.shareGroup = TestStack.uniqueName("g")
        // In the test stack's folder, which goes away when the test process exits.
        configuration.spool.directory = "\(try TestStack.shared().directory)/spool-\(configuration.instanceID)"
        configuration.spool.segmentBytes = 256 * 1024
        configuration.spool.maxBytes = 64 << 20
        configuration.ingest.batchMaxDelayMilliseconds = 50
        configuration.rejections.logIntervalSeconds = 3_600
        return configuration
    }
}
