import Testing

@testable import MQTT

@Suite("NetworkLoop reconnect backoff")
struct NetworkLoopTests {
    /// libmosquitto's exponential backoff, which the loop keeps: min × (attempts + 1)², capped at the maximum.
    @Test(arguments: [
        (1, 30, 0, 1), (1, 30, 1, 4), (1, 30, 2, 9), (1, 30, 4, 25), (1, 30, 5, 30), (1, 30, 1_000, 30),
        (2, 60, 0, 2), (2, 60, 3, 32), (2, 60, 4, 50), (2, 60, 5, 60),
        (5, 5, 0, 5), (5, 5, 7, 5),
        (1, 86_400, Int.max / 2, 86_400),
    ])
    func reconnectDelayGrowsAndStopsAtTheMaximum(minimum: Int, maximum: Int, attempts: Int, seconds: Int) {
        var configuration = MQTTConfiguration(clientID: "c")
        configuration.reconnectDelayMin = minimum
        configuration.reconnectDelayMax = maximum
        #expect(NetworkLoop.reconnectDelay(after: attempts, configuration) == seconds)
    }
}
