import ArgumentParser
import Config
import Daemon
import Observability
import Runtime
import Storage

/// `outletd migrate`: applies pending schema migrations.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending schema migrations (each exactly once).")

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Only list pending migrations.")
    var dryRun = false

    func run() throws {
        try options.withDatabase { connection in
            let migrator = Migrator()
            if dryRun {
                let pending = try migrator.pendingVersions(connection)
                print(
                    pending.isEmpty
                        ? "schema is up to date" : "pending: \(pending.map(String.init).joined(separator: ", "))")
                return
            }
            let outcome = try migrator.migrate(connection) { print($0) }
            if outcome.applied.isEmpty {
                print("schema is up to date (version \(outcome.currentVersion))")
            } else {
                print("schema at version \(outcome.currentVersion)")
            }
        }
    }
}
