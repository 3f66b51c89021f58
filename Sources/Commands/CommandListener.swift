import Foundation
import Logging
import Postgres
import Runtime

/// Wakes the ``CommandRelay`` when another session changes `commands` (a `request_switch` from a dashboard, an
/// UPDATE of `devices.desired_state`, another instance's transitions): LISTEN `outletd_commands`, run by a
/// ``DatabaseWorker``. Notifications the relay's own connection caused are ignored.
public struct CommandListener: DatabaseJob {
    /// The NOTIFY channel of the `commands` trigger.
    public static let channel = "outletd_commands"

    public var name: String { "outletd-command-listener" }
    private let inbox: CommandInbox
    private let ownBackendPID: @Sendable () -> Int32

    public init(inbox: CommandInbox, ownBackendPID: @escaping @Sendable () -> Int32) {
        self.inbox = inbox
        self.ownBackendPID = ownBackendPID
    }

    public func run(on connection: PostgresConnection, _ context: DatabaseWorker.Context) throws {
        try connection.listen(Self.channel)
        // Whatever happened while not listening is picked up by the relay's next claim.
        inbox.databaseChanged()
        while !context.stop.isSet {
            let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
            let own = ownBackendPID()
            if notifications.contains(where: { $0.backendPID != own }) {
                inbox.databaseChanged()
            }
        }
    }
}
