import Postgres
import Testing

@Suite struct PostgresConnectionNotificationsTests {
    @Test func notificationArrivesWithPayloadOnAnotherConnection() throws {
        let database = try TestDatabase()
        let listener = try database.connect()
        let sender = try database.connect()
        let channel = "Devices \"Changed\""  // case, space and quote must survive quoting
        try listener.listen(channel)
        try sender.notify(channel, payload: "outlet-42 é")
        let notifications = try listener.waitForNotifications(timeout: .seconds(5))
        #expect(
            notifications == [
                PostgresNotification(channel: channel, payload: "outlet-42 é", backendPID: sender.backendPID)
            ])
    }

    @Test func waitTimesOutEmptyWhenNothingArrives() throws {
        let listener = try TestDatabase().connect()
        try listener.listen("quiet")
        let started = ContinuousClock.now
        let notifications = try listener.waitForNotifications(timeout: .milliseconds(300))
        let elapsed = ContinuousClock.now - started
        #expect(notifications.isEmpty)
        #expect(elapsed >= .milliseconds(290))
        #expect(elapsed < .seconds(3))
    }

    @Test func notificationsSentDuringOtherWorkAreKeptAndBatched() throws {
        let database = try TestDatabase()
        let listener = try database.connect()
        let sender = try database.connect()
        try listener.listen("registry")
        try sender.transaction {
            for index in 0..<3 {
                try sender.notify("registry", payload: "\(index)")
            }
        }
        // Let them arrive while the listener runs an ordinary query.
        try listener.execute("SELECT pg_sleep(0.2)")
        let notifications = try listener.waitForNotifications(timeout: .seconds(5))
        #expect(notifications.map(\.payload) == ["0", "1", "2"])
    }

    @Test func unlistenStopsDelivery() throws {
        let database = try TestDatabase()
        let listener = try database.connect()
        let sender = try database.connect()
        try listener.listen("registry")
        try listener.unlisten("registry")
        try sender.notify("registry", payload: "x")
        #expect(try listener.waitForNotifications(timeout: .milliseconds(200)).isEmpty)
    }

    @Test func invalidChannelNamesAreRejected() throws {
        let connection = try TestDatabase().connect()
        #expect(throws: PostgresError.self) { try connection.listen("") }
        let error = #expect(throws: PostgresError.self) { try connection.listen(String(repeating: "x", count: 64)) }
        #expect(error?.code == .invalidArgument)
    }
}
