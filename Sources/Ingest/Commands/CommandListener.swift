import Foundation
import Logging
import Postgres

/// Wakes the ``CommandRelay`` when another session changes `commands` (a `request_switch` from a dashboard, an
/// UPDATE of `devices.desired_state`, another instance's transitions): LISTEN `outletd_commands` on a thread and
/// connection of its own. Notifications the relay's own connection caused are ignored.
public final class CommandListener: Sendable {
    /// The NOTIFY channel of the `commands` trigger.
    public static let channel = "outletd_commands"

    private let inbox: CommandInbox
    private let connectionString: String
    private let reconnectDelayMax: Double
    private let ownBackendPID: @Sendable () -> Int32
    private let logger: Logger
    private let worker = WorkerThread(name: "outletd-command-listener")
    private var stopFlag: StopFlag { worker.stopFlag }

    public init(
        inbox: CommandInbox, connectionString: String, reconnectDelayMax: Double,
        ownBackendPID: @escaping @Sendable () -> Int32, logger: Logger
    ) {
        self.inbox = inbox
        self.connectionString = connectionString
        self.reconnectDelayMax = reconnectDelayMax
        self.ownBackendPID = ownBackendPID
        self.logger = logger
    }

    /// Starts the thread.
    public func start() {
        worker.start { [self] in self.loop() }
    }

    /// Asks the thread to stop and waits for it.
    public func stop() async {
        await worker.stop()
    }

    private func loop() {
        var backoff = Backoff(initial: 0.5, maximum: reconnectDelayMax)
        while !stopFlag.isSet {
            do {
                let connection = try PostgresConnection(
                    connectionString: connectionString, applicationName: "outletd-command-listener")
                defer { connection.close() }
                try connection.listen(Self.channel)
                // Whatever happened while not listening is picked up by the relay's next claim.
                inbox.databaseChanged()
                backoff.reset()
                while !stopFlag.isSet {
                    let notifications = try connection.waitForNotifications(timeout: .milliseconds(500))
                    let own = ownBackendPID()
                    if notifications.contains(where: { $0.backendPID != own }) {
                        inbox.databaseChanged()
                    }
                }
            } catch {
                let delay = backoff.nextDelay()
                logger.warning(
                    "command listener connection failed; retrying",
                    metadata: ["error": "\(error)", "retry_in_s": "\(String(format: "%.1f", delay))"])
                stopFlag.sleep(seconds: delay)
            }
        }
    }
}
